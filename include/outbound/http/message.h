// outbound/http/message.h
//
// A request as the caller builds it and a response as the client returns it.
//
//   auto resp = payments.Send(http::Request::Get("/charges/1"));
//   auto charge = http::Request::Post("/charges", R"({"amount":5})")
//                     .Header("Idempotency-Key", key)   // makes a POST retryable
//                     .Header("Content-Type", "application/json");
#ifndef OUTBOUND_HTTP_MESSAGE_H_
#define OUTBOUND_HTTP_MESSAGE_H_

#include <chrono>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "outbound/context.h"

namespace outbound::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

// Whether two header names are the same (names are case-insensitive).
bool SameHeaderName(std::string_view a, std::string_view b);

// The first value of header `name` (any case), or "" if absent.
std::string_view FindHeader(const Headers& headers, std::string_view name);

struct Request {
  std::string method = "GET";
  // An absolute URL on the client's origin, or a path ("/charges/1") that
  // the client joins onto its origin.
  std::string url;
  // Sent as given, but for the space and tabs around a value (trimmed, RFC
  // 9110 §5.5). The call fails with kInvalidRequest, before anything is
  // dialled, for a name that is not a token, a value holding a control
  // character (0x00-0x1F but HTAB, or 0x7F), and the headers the client
  // writes itself: Host, Content-Length, Transfer-Encoding, Connection,
  // Keep-Alive, Upgrade, TE, HTTP2-Settings, Proxy-* and pseudo-headers.
  Headers headers;
  std::string body;
  // False for a body the caller cannot produce twice (read from a stream it
  // does not keep): such a request makes one attempt, whatever its method.
  bool body_replayable = true;
  Context context;

  static Request Get(std::string url) { return Request{"GET", std::move(url)}; }
  static Request Post(std::string url, std::string body) {
    Request r{"POST", std::move(url)};
    r.body = std::move(body);
    return r;
  }
  Request& Header(std::string name, std::string value) {
    headers.emplace_back(std::move(name), std::move(value));
    return *this;
  }
  Request& WithContext(Context ctx) {
    context = std::move(ctx);
    return *this;
  }
};

// A response's header fields, in the order received, names in the case the
// server sent them (lower-case on HTTP/2). Kept in one buffer: however many
// fields a response has, they cost one allocation, and reading them none.
//
//   std::string_view type = response.headers.Find("Content-Type");
//   for (const auto& [name, value] : response.headers) { ... }
class ResponseHeaders {
 public:
  struct Field {
    std::string_view name;
    std::string_view value;
  };

  // Walks the fields in order.
  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Field;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = Field;

    Iterator() = default;
    Field operator*() const;
    Iterator& operator++();
    Iterator operator++(int) {
      Iterator before = *this;
      ++*this;
      return before;
    }
    friend bool operator==(const Iterator&, const Iterator&) = default;

   private:
    friend class ResponseHeaders;
    Iterator(const std::string* text, std::size_t at) : text_(text), at_(at) {}
    const std::string* text_ = nullptr;
    std::size_t at_ = 0;  // where the current field starts in *text_
  };

  ResponseHeaders() = default;
  ResponseHeaders(std::initializer_list<Field> fields) {
    for (const Field& f : fields) Add(f.name, f.value);
  }

  // Appends a field; the name and value are copied.
  void Add(std::string_view name, std::string_view value);
  // The first value of the field `name` (any case), or "" if absent.
  std::string_view Find(std::string_view name) const;

  std::size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  Iterator begin() const { return {&text_, 0}; }
  Iterator end() const { return {&text_, text_.size()}; }

  // Makes room for fields of `bytes` bytes in all.
  void reserve(std::size_t bytes) { text_.reserve(bytes); }

 private:
  // Each field: its name's and its value's sizes (two uint32_t), then the
  // name and the value.
  std::string text_;
  std::size_t count_ = 0;
};

struct Response {
  int status = 0;
  ResponseHeaders headers;
  std::string body;
  // "1.1" or "2".
  std::string version;
  // The calendar time the headers arrived: what an HTTP-date Retry-After is
  // measured from.
  std::chrono::system_clock::time_point received_at;

  std::string_view header(std::string_view name) const { return headers.Find(name); }
};

}  // namespace outbound::http

#endif  // OUTBOUND_HTTP_MESSAGE_H_
