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
  // Names and values are sent as given; a CR, LF or NUL in either fails the
  // call with kInvalidRequest before anything is sent.
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
// fields a response has, they cost two allocations, and reading them none.
//
//   std::string_view type = response.headers.Find("Content-Type");
//   for (const auto& [name, value] : response.headers) { ... }
class ResponseHeaders {
 public:
  struct Field {
    std::string_view name;
    std::string_view value;
  };

  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Field;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = Field;

    Iterator() = default;
    Field operator*() const { return (*headers_)[index_]; }
    Iterator& operator++() {
      ++index_;
      return *this;
    }
    Iterator operator++(int) {
      Iterator before = *this;
      ++index_;
      return before;
    }
    friend bool operator==(const Iterator&, const Iterator&) = default;

   private:
    friend class ResponseHeaders;
    Iterator(const ResponseHeaders* headers, std::size_t index)
        : headers_(headers), index_(index) {}
    const ResponseHeaders* headers_ = nullptr;
    std::size_t index_ = 0;
  };

  ResponseHeaders() = default;
  ResponseHeaders(std::initializer_list<Field> fields) {
    for (const Field& f : fields) Add(f.name, f.value);
  }

  // Appends a field; the name and value are copied.
  void Add(std::string_view name, std::string_view value);
  // The first value of the field `name` (any case), or "" if absent.
  std::string_view Find(std::string_view name) const;

  std::size_t size() const { return spans_.size(); }
  bool empty() const { return spans_.empty(); }
  // Field `i`, 0 <= i < size(): views into this object.
  Field operator[](std::size_t i) const {
    const Span& s = spans_[i];
    return {std::string_view(text_).substr(s.at, s.name_size),
            std::string_view(text_).substr(s.at + s.name_size, s.value_size)};
  }
  Iterator begin() const { return {this, 0}; }
  Iterator end() const { return {this, spans_.size()}; }

  // Makes room for `fields` fields of `bytes` bytes in all.
  void reserve(std::size_t fields, std::size_t bytes) {
    spans_.reserve(fields);
    text_.reserve(bytes);
  }

 private:
  struct Span {
    std::size_t at;  // where the name starts in text_; the value follows it
    std::size_t name_size;
    std::size_t value_size;
  };
  std::string text_;
  std::vector<Span> spans_;
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
