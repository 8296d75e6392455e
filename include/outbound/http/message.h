// SPDX-License-Identifier: Apache-2.0
// outbound/http/message.h
//
// A request as the caller builds it and a response as the client returns it.
//
// example: examples/headers/http.cc#message
//   using namespace std::chrono_literals;
//   auto list =
//       payments->Send(http::Request::Get("/charges")
//                          .WithQuery(http::Query().Add("customer", "cus 7").Add("limit", 10))
//                          .WithTimeout(300ms));
//   auto charge = payments->Send(
//       http::Request::Post("/charges", http::Body{R"({"amount":5})", "application/json"})
//           .Header("Idempotency-Key", key));  // makes a POST retryable
//   auto ok = http::Require2xx(payments->Send(http::Request::Delete("/charges/7")));
//
// Every request carries `User-Agent: outbound/<version>` unless it sets its
// own User-Agent.
#ifndef OUTBOUND_HTTP_MESSAGE_H_
#define OUTBOUND_HTTP_MESSAGE_H_

#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "outbound/context.h"
#include "outbound/error.h"

namespace outbound::http {

class BodyPipe;       // outbound/http/body_pipe.h
class ReceiveWindow;  // outbound/http/receive_window.h

using Headers = std::vector<std::pair<std::string, std::string>>;

// Whether two header names are the same (names are case-insensitive).
bool SameHeaderName(std::string_view a, std::string_view b);

// The first value of header `name` (any case), or "" if absent.
std::string_view FindHeader(const Headers& headers, std::string_view name);

// `text` percent-encoded as RFC 3986 section 2 says for data in a URL
// component: every byte but the unreserved characters (ALPHA, DIGIT, "-",
// ".", "_", "~") becomes %XX with upper-case hex digits, so space is %20
// (never "+"), and "/", "?", "#", "&", "=", "+" and "%" are encoded. UTF-8
// text is encoded byte by byte. Safe for a query name or value and for one
// path segment: "/customers/" + http::PercentEncode(id).
std::string PercentEncode(std::string_view text);

// A query string built from names and values, each percent-encoded
// (PercentEncode), joined with "&" in the order added.
//
// example: examples/headers/http.cc#query
//   std::string query = http::Query().Add("q", "a&b=c").Add("limit", 10).encoded();
//   // query == "q=a%26b%3Dc&limit=10"
class Query {
 public:
  Query() = default;
  Query(std::initializer_list<std::pair<std::string_view, std::string_view>> params) {
    for (const auto& [name, value] : params) Add(name, value);
  }

  Query& Add(std::string_view name, std::string_view value);
  Query& Add(std::string_view name, const char* value) {
    return Add(name, std::string_view(value));
  }
  Query& Add(std::string_view name, bool value) { return Add(name, value ? "true" : "false"); }
  template <std::integral T>
  Query& Add(std::string_view name, T value) {
    return Add(name, std::string_view(std::to_string(value)));
  }

  // "name=value&name2=value2", encoded; "" when nothing was added.
  const std::string& encoded() const { return encoded_; }
  bool empty() const { return encoded_.empty(); }

 private:
  std::string encoded_;
};

// A request body with its media type, for the builders: the type becomes
// the request's Content-Type. outbound/http/json.h makes one from JSON.
struct Body {
  std::string data;
  std::string content_type;  // empty: no Content-Type is set
};

// Reads a response body as it arrives (Request::StreamBodyTo): called with
// each piece of the body of the call's 2xx answer, in order, never empty,
// and then once with an empty `chunk` when that body has ended whole (so a
// parser can say the body stopped inside a record). A sink given no piece
// (an empty body, a HEAD) hears no end either, and neither does a 2xx the
// client makes itself (failure injection's "status:200", a middleware's
// own answer), whose body is in Response::body. Called on the client's
// event-loop thread, so it must be quick (append to a file, feed a parser)
// and must not wait on this client. It returns true to go on, or false to
// stop: the call ends with kCancelled ("the caller stopped reading the
// body") and the breaker counts nothing. Or it returns an Error when the
// body is not what the dependency should have sent (kInvalidResponse, say,
// for a record that does not parse): the call ends with that error as with
// a body cut short, not retried and a failure to the breaker (unless the
// kind is the caller's own limit: kResponseTooLarge, kInvalidRequest or
// kLocalResource, which the breaker does not count). A sink that throws
// ends the call as one returning false would, and what it threw reaches
// the caller (Send rethrows it; SendAsync's callback gets it as `thrown`).
// A sink returning bool needs no more than that: its bool converts.
//
// example: examples/headers/http.cc#body-sink-error
//   std::string line;  // the line being read
//   auto events = client->Send(
//       http::Request::Get("/events").StreamBodyTo([&](std::string_view chunk) -> Result<bool> {
//         if (chunk.empty()) {  // the end
//           if (line.empty()) return true;
//           return Fail(ErrorKind::kInvalidResponse, "the events ended inside a line");
//         }
//         for (char c : chunk) {
//           if (c != '\n') {
//             line += c;
//           } else {
//             line.clear();  // a whole line: handed on here
//           }
//         }
//         return true;
//       }));
using BodySink = std::function<Result<bool>(std::string_view chunk)>;

struct Response;

// Hears the head of the answer whose body streams (Request::OnBodyHead):
// its status, version and headers, with an empty body and no trailers yet.
// Called once, on the client's event-loop thread, just before the BodySink
// hears that body's first piece, so a caller can size a download by its
// Content-Length or pick a parser by its Content-Type. (A body the client
// decodes, Settings::gzip, keeps the coded body's headers, Content-Length
// included, while the sink hears it decoded.) An answer that
// gives the sink nothing (an empty body, a HEAD, a 2xx the client makes
// itself) never reaches it: the call's Response has its head. It returns
// an Error to refuse the answer (a Content-Type the caller cannot read):
// the call ends with that error as with a BodySink's, not retried, and a
// failure to the breaker unless the kind is the caller's own limit.
// `head` is the client's, valid during the call only: copy what you keep
// (the call's Response has the same head for later).
//
// example: examples/headers/http.cc#body-head
//   std::optional<std::uint64_t> total;  // for a progress bar
//   auto size_it = [&](const http::Response& head) -> Result<void> {
//     std::string_view length = head.headers.Find("content-length");
//     std::uint64_t n = 0;
//     auto [end, error] = std::from_chars(length.data(), length.data() + length.size(), n);
//     if (error == std::errc() && end != length.data()) total = n;
//     return {};
//   };
//   auto got =
//       client->Send(http::Request::Get("/big.tar").StreamBodyTo(write).OnBodyHead(size_it));
using BodyHeadSink = std::function<Result<void>(const Response& head)>;

// Gives a request body as it is sent (Request::StreamBodyFrom): writes up to
// `buffer.size()` bytes of the body's next bytes into `buffer` and returns
// how many, 0 once the body has ended. Called on the client's event-loop
// thread whenever the connection can take more, so it must not wait on
// anything slow (reading a local file or memory is fine; a socket is not).
// An error it returns, or an exception it throws, ends the call with
// kInvalidRequest carrying its message: the attempt is not retried and the
// breaker counts nothing, for the caller's reader is not the dependency.
using BodyReader = std::function<Result<std::size_t>(std::span<char> buffer)>;

// Where a streamed request body comes from: `open` gives a reader at the
// body's first byte, once per attempt; `length`, if known, is the body's
// size in bytes. With `pipe` (Request::StreamBodyFromPipe) the client's
// transport reads the pipe itself, without waiting; `open` then gives a
// reader that waits for the pipe's bytes, for readers off the event loop
// (the test kit's transports).
struct BodySource {
  std::function<BodyReader()> open;
  std::optional<std::uint64_t> length;
  std::shared_ptr<BodyPipe> pipe;

  explicit operator bool() const { return static_cast<bool>(open); }
};

// A BodySource's `open` for the file at `path`: each attempt opens the file
// afresh and reads it from its start. A file that cannot be opened or read
// fails the call with kInvalidRequest naming the path and why.
//
// example: examples/headers/http.cc#file-reader
//   auto upload = client->Send(
//       http::Request::Put("/backups/today.tar")
//           .StreamBodyFrom(http::FileReader(path), std::filesystem::file_size(path)));
std::function<BodyReader()> FileReader(std::string path);

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
  // `TE: trailers` alone is allowed (gRPC requires it): sent over HTTP/2,
  // left out over HTTP/1.1.
  Headers headers;
  std::string body;
  // False for a body the caller cannot produce twice (read from a stream it
  // does not keep): such a request makes one attempt, whatever its method.
  bool body_replayable = true;
  // Set (StreamBodyFrom): the body is read from here as it is sent, and
  // `body` must be empty. See there.
  BodySource body_source;
  Context context;
  // This call's own bound, as a duration from when it is sent, on the
  // client's clock (the Runtime's): the earliest of it, Settings::timeout
  // and `context.deadline` ends the call. Empty: Settings::timeout alone.
  // Zero or less: the call fails with kDeadline and nothing is sent.
  std::optional<Duration> timeout;
  // Empty (the default): the body is read whole into Response::body, up to
  // Settings::max_response_bytes. Set (StreamBodyTo): see there.
  BodySink body_sink;
  // With body_sink: read-side flow control between the sink and a reader
  // on another thread (StreamBodyTo(sink, window)). Null: none. Set without
  // a sink, the call fails with kInvalidRequest. One window per call.
  std::shared_ptr<ReceiveWindow> receive_window;
  // With body_sink: the streamed body's own bound (WithBodyTimeout).
  std::optional<Duration> body_timeout;
  // With body_sink: hears the streamed answer's head first (OnBodyHead).
  // Set without a sink, the call fails with kInvalidRequest.
  BodyHeadSink body_head;

  static Request Get(std::string url) { return Request{"GET", std::move(url)}; }
  static Request Head(std::string url) { return Request{"HEAD", std::move(url)}; }
  static Request Delete(std::string url) { return Request{"DELETE", std::move(url)}; }
  // Post, Put and Patch with the URL alone take their body later
  // (WithBody, StreamBodyFrom); as they are, they send an empty one.
  static Request Post(std::string url) { return Request{"POST", std::move(url)}; }
  static Request Put(std::string url) { return Request{"PUT", std::move(url)}; }
  static Request Patch(std::string url) { return Request{"PATCH", std::move(url)}; }
  static Request Post(std::string url, std::string body) {
    return WithMethod("POST", std::move(url), std::move(body));
  }
  static Request Post(std::string url, Body body) {
    return Request{"POST", std::move(url)}.WithBody(std::move(body));
  }
  static Request Put(std::string url, std::string body) {
    return WithMethod("PUT", std::move(url), std::move(body));
  }
  static Request Put(std::string url, Body body) {
    return Request{"PUT", std::move(url)}.WithBody(std::move(body));
  }
  static Request Patch(std::string url, std::string body) {
    return WithMethod("PATCH", std::move(url), std::move(body));
  }
  static Request Patch(std::string url, Body body) {
    return Request{"PATCH", std::move(url)}.WithBody(std::move(body));
  }

  // Adds a header (another of the same name is kept too).
  Request& Header(std::string name, std::string value) {
    headers.emplace_back(std::move(name), std::move(value));
    return *this;
  }
  // Appends `query` to the URL, after "?" or, if the URL has a query
  // already, "&".
  Request& WithQuery(const Query& query);
  // Sets the body and, if `body` has one, the Content-Type (replacing any).
  Request& WithBody(Body body);
  Request& WithTimeout(Duration d) {
    timeout = d;
    return *this;
  }
  Request& WithContext(Context ctx) {
    context = std::move(ctx);
    return *this;
  }
  // Streams the body of the call's 2xx answer to `sink` as it arrives,
  // without a size limit, instead of collecting it in Response::body (which
  // stays empty); the call returns once the body has ended, and Timeout
  // bounds the body too (unless WithBodyTimeout gives it its own bound). Every other answer (a 503
  // the retry loop retries, a 3xx it follows, a 4xx) is read whole as without a sink. Once the
  // first byte has gone to `sink` the attempt is final: a body cut short fails the call
  // (kTransport; a failure to the breaker) and is never retried.
  //
  // example: examples/headers/http.cc#stream-body-to
  //   std::ofstream file("big.tar", std::ios::binary);
  //   auto got =
  //       client->Send(http::Request::Get("/big.tar").StreamBodyTo([&](std::string_view chunk) {
  //         return bool(file.write(chunk.data(), chunk.size()));
  //       }));
  Request& StreamBodyTo(BodySink sink) {
    body_sink = std::move(sink);
    receive_window = nullptr;
    return *this;
  }
  // The same, for a sink that hands the body to a reader on another
  // thread: the sink Holds `window` when the reader is behind, the reader
  // Opens it as it catches up (outbound/http/receive_window.h).
  Request& StreamBodyTo(BodySink sink, std::shared_ptr<ReceiveWindow> window) {
    body_sink = std::move(sink);
    receive_window = std::move(window);
    return *this;
  }
  // Gives a streamed body (StreamBodyTo) a bound of its own: once the
  // headers of the 2xx answer whose body streams have arrived, the body has
  // `d` from then, in place of what is left of the call's deadline
  // (Timeout, WithTimeout, the context's). The call's deadline then bounds
  // getting an answer, retries included, and `d` the download, so a short
  // Timeout and a long body go together. A body not done in time fails the
  // call with kDeadline ("the body did not end within its body timeout").
  // Positive; the call fails with kInvalidRequest without StreamBodyTo.
  //
  // example: examples/headers/http.cc#body-timeout
  //   auto got = client->Send(http::Request::Get("/exports/2026.csv")
  //                               .WithTimeout(2s)  // to the answer's headers
  //                               .StreamBodyTo(write)
  //                               .WithBodyTimeout(10min));  // the body, from its headers
  Request& WithBodyTimeout(Duration d) {
    body_timeout = d;
    return *this;
  }
  // Hands the head of the answer whose body streams (StreamBodyTo) to
  // `head` before its body: see BodyHeadSink. The call fails with
  // kInvalidRequest without StreamBodyTo.
  Request& OnBodyHead(BodyHeadSink head) {
    body_head = std::move(head);
    return *this;
  }
  // Sends a body read as it goes, in constant memory, instead of `body`
  // (which must stay empty; the call fails with kInvalidRequest if both are
  // set). `open` is called for each attempt and gives a reader at the
  // body's first byte, so the request is retried, and followed through a
  // 307 or 308, as a request with `body` would be. With
  // `length`, the body goes out with that Content-Length and the reader is
  // asked for no more; ending short of it fails the call (kInvalidRequest).
  // Without, HTTP/1.1 sends the body chunked and HTTP/2 without a length.
  //
  // example: examples/headers/http.cc#stream-body-from
  //   std::string path = "/var/backups/today.tar";
  //   auto upload = client->Send(
  //       http::Request::Put("/backups/today.tar")
  //           .StreamBodyFrom(http::FileReader(path), std::filesystem::file_size(path)));
  Request& StreamBodyFrom(std::function<BodyReader()> open,
                          std::optional<std::uint64_t> length = std::nullopt) {
    body_source = BodySource{std::move(open), length};
    return *this;
  }
  // A body that can be read once only (a pipe, data being generated): sent
  // as StreamBodyFrom sends it, in one attempt whatever the method. It is
  // never sent again: not after a failure, not after a refused HTTP/2
  // stream, and a 307 or 308 is returned as the answer rather than followed.
  Request& StreamBodyFromOnce(BodyReader reader,
                              std::optional<std::uint64_t> length = std::nullopt);
  // A body the caller writes while the call runs and its answer streams
  // back (outbound/http/body_pipe.h): a stream. Sent without a length
  // (HTTP/1.1 chunked, HTTP/2 ended by END_STREAM), in one attempt, as
  // StreamBodyFromOnce's body is (the server refusing the stream unread
  // does not make it go again). Once the request's headers are written,
  // only the Context's deadline and cancellation bound the call: not
  // Settings::timeout, WithTimeout, WithBodyTimeout nor AttemptTimeout.
  // The exchange's end (the answer complete, a reset, a cancel, the
  // client's end) makes the pipe's Writes return false. A null pipe fails
  // the call with kInvalidRequest.
  Request& StreamBodyFromPipe(std::shared_ptr<BodyPipe> pipe);

 private:
  static Request WithMethod(const char* method, std::string url, std::string body) {
    Request r{method, std::move(url)};
    r.body = std::move(body);
    return r;
  }
};

// A response's header fields, in the order received, names in the case the
// server sent them (lower-case on HTTP/2). Kept in one buffer: however many
// fields a response has, they cost one allocation, and reading them none.
//
// example: examples/headers/http.cc#response-headers
//   std::string_view type = response.headers.Find("Content-Type");
//   for (const auto& [name, value] : response.headers) std::cout << name << ": " << value << "\n";
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
  // A copy holds the fields alone, not the room made ahead for more.
  ResponseHeaders(const ResponseHeaders& other)
      : text_(other.text_, 0, other.used_), used_(other.used_), count_(other.count_) {}
  ResponseHeaders& operator=(const ResponseHeaders& other) {
    if (this == &other) return *this;
    text_.assign(other.text_, 0, other.used_);
    used_ = other.used_;
    count_ = other.count_;
    return *this;
  }
  // Leaves `other` empty.
  ResponseHeaders(ResponseHeaders&& other) noexcept
      : text_(std::move(other.text_)),
        used_(std::exchange(other.used_, 0)),
        count_(std::exchange(other.count_, 0)) {
    other.text_.clear();
  }
  ResponseHeaders& operator=(ResponseHeaders&& other) noexcept {
    if (this == &other) return *this;
    text_ = std::move(other.text_);
    used_ = std::exchange(other.used_, 0);
    count_ = std::exchange(other.count_, 0);
    other.text_.clear();
    return *this;
  }

  // Appends a field; the name and value are copied.
  void Add(std::string_view name, std::string_view value);
  // The first value of the field `name` (any case), or "" if absent.
  std::string_view Find(std::string_view name) const;

  std::size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  Iterator begin() const { return {&text_, 0}; }
  Iterator end() const { return {&text_, used_}; }

  // Makes room for fields of `bytes` bytes in all.
  void reserve(std::size_t bytes) {
    if (text_.size() < bytes) text_.resize(bytes);
  }
  // The bytes of fields it holds without growing.
  std::size_t capacity() const { return text_.size(); }
  // Removes every field; the room stays.
  void clear() {
    used_ = 0;
    count_ = 0;
  }

 private:
  // Each field: its name's and its value's sizes (two uint32_t), then the
  // name and the value. The fields are the first used_ bytes; the rest is
  // room made ahead (reserve, or doubled when full), so that adding a field
  // copies it in without resizing the string each time.
  std::string text_;
  std::size_t used_ = 0;
  std::size_t count_ = 0;
};

// How the call went is part of the answer: a 503 that outlasted the
// retries is still a Response (its status says so), with the attempts it
// took.
struct Response {
  int status = 0;
  // The header section. Trailer fields never join it: a classify function
  // or a Retry-After reads it before the body was complete.
  ResponseHeaders headers;
  std::string body;
  // HTTP/2: the trailer section, a HEADERS frame after the body (gRPC ends
  // every answer with one: grpc-status); empty when none came. Held to 96
  // KiB of its own, as the headers are (RFC 9113 §6.5.2: each section is
  // measured alone). HTTP/1.1's trailer fields (after a chunked body) are
  // read and dropped.
  ResponseHeaders trailers;
  // The protocol of the attempt that answered: "1.1" or "2" (HTTP/1.1 or
  // HTTP/2).
  std::string version;
  // The calendar time the headers arrived: what an HTTP-date Retry-After is
  // measured from.
  std::chrono::system_clock::time_point received_at;
  // Attempts the call sent, redirects included (1 for a call answered at
  // once), and the redirects within the origin it followed.
  int attempts = 0;
  int redirects = 0;

  std::string_view header(std::string_view name) const { return headers.Find(name); }
  // Whether the status is 2xx.
  bool successful() const { return status >= 200 && status <= 299; }
};

// A call's result with any status but 2xx turned into an error of kind
// kHttpStatus ("status 503, not 2xx"; its attempts those of the response),
// for callers to whom only success is an answer:
//
// example: examples/headers/http.cc#require-2xx
//   Result<Response> charge = http::Require2xx(payments->Send(request));
[[nodiscard]] Result<Response> Require2xx(Result<Response> result);

}  // namespace outbound::http

#endif  // OUTBOUND_HTTP_MESSAGE_H_
