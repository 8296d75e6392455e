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

struct Response {
  int status = 0;
  // As received; names in the case the server sent (lower-case on HTTP/2).
  Headers headers;
  std::string body;
  // "1.1" or "2".
  std::string version;
  // The calendar time the headers arrived: what an HTTP-date Retry-After is
  // measured from.
  std::chrono::system_clock::time_point received_at;

  std::string_view header(std::string_view name) const { return FindHeader(headers, name); }
};

}  // namespace outbound::http

#endif  // OUTBOUND_HTTP_MESSAGE_H_
