// SPDX-License-Identifier: Apache-2.0
// HTTP/2's rules for the fields of a response (RFC 9113 §8.2): a response
// with a field that breaks one is malformed. Checked by H2Session rather
// than by nghttp2, whose own checks (its "HTTP messaging", switched off)
// cost a tenth of a call's instructions, a byte at a time. Internal.
#ifndef OUTBOUND_SRC_HTTP_TRANSPORT_H2_FIELDS_H_
#define OUTBOUND_SRC_HTTP_TRANSPORT_H2_FIELDS_H_

#include <string_view>

#include "outbound/internal/ascii.h"

namespace outbound::http::internal::transport {

// Whether `name` may be a regular field's name: a token (RFC 9110 §5.1)
// with no letter in upper case (RFC 9113 §8.2.1).
bool ValidFieldName(std::string_view name);

// Whether `value` may be a field's value: no control character but HTAB,
// no DEL (RFC 9110 §5.5), and no whitespace at either end (RFC 9113
// §8.2.1).
bool ValidFieldValue(std::string_view value);

// Whether a field may not appear in HTTP/2 at all (§8.2.2): the
// connection-specific fields, and a `te` saying anything but "trailers".
// Inline: it runs on every field, and nearly always says no at once.
inline bool ForbiddenField(std::string_view name, std::string_view value) {
  switch (name.size()) {
    case 2:
      return name == "te" && !outbound::internal::EqualsIgnoringAsciiCase(value, "trailers");
    case 7:
      return name == "upgrade";
    case 10:
      return name == "connection" || name == "keep-alive";
    case 16:
      return name == "proxy-connection";
    case 17:
      return name == "transfer-encoding";
    default:
      return false;
  }
}

}  // namespace outbound::http::internal::transport

#endif  // OUTBOUND_SRC_HTTP_TRANSPORT_H2_FIELDS_H_
