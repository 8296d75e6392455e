// SPDX-License-Identifier: Apache-2.0
// The checks every request passes before anything is dialled: its method
// and header fields are well formed, and its URL names the client's origin.
// Internal.
#ifndef OUTBOUND_SRC_HTTP_REQUEST_CHECK_H_
#define OUTBOUND_SRC_HTTP_REQUEST_CHECK_H_

#include <string_view>

#include "layers.h"
#include "origin.h"
#include "outbound/http/message.h"
#include "outbound/version.h"

namespace outbound::http::internal {

// What a request without a User-Agent of its own is sent with.
inline constexpr char kDefaultUserAgent[] = "outbound/" OUTBOUND_VERSION_STRING;

// Whether `value` may be sent as a field's value as it is: no control
// character but HTAB (RFC 9110 §5.5), so it cannot split the field.
bool IsFieldValue(std::string_view value);

// What CheckRequest learnt of a request, for the CallRequest made of it.
struct CheckedRequest {
  bool decode_gzip = false;         // CallRequest::decode_gzip
  bool default_user_agent = false;  // CallRequest::default_user_agent
};

// Whether `request` may be sent, made ready in place, or why not:
// kInvalidRequest for a malformed method, header or URL, a header the client
// writes itself (Host, Content-Length, Transfer-Encoding, Connection,
// Keep-Alive, Upgrade, TE, HTTP2-Settings, Proxy-*, pseudo-headers), a
// control character in a value, or user info in the URL; kOriginRefused for
// a URL on another origin. Its URL is made absolute and whitespace around a
// header value is trimmed (RFC 9110 5.5); a request without a User-Agent is
// sent with kDefaultUserAgent. A refused request may be changed already
// (its values trimmed, an Accept-Encoding added). `origin_text` is
// `origin.ToString()`. With
// `ask_gzip` (Settings::gzip), a request without an Accept-Encoding of its
// own gets `Accept-Encoding: gzip` and is decoded.
[[nodiscard]] Result<CheckedRequest> CheckRequest(const Origin& origin,
                                                  std::string_view origin_text, Request& request,
                                                  bool ask_gzip = false);

// The checked request as the layers send it: its parts moved out of
// `request`. Returned by value, so a caller can make it in its place.
CallRequest TakeCallRequest(Request& request, CheckedRequest checked);

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_REQUEST_CHECK_H_
