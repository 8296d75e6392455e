// SPDX-License-Identifier: Apache-2.0
#include "outbound/error.h"

namespace outbound {

std::string_view ToString(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kCancelled:
      return "cancelled";
    case ErrorKind::kDeadline:
      return "deadline";
    case ErrorKind::kTransport:
      return "transport";
    case ErrorKind::kTlsUntrusted:
      return "tls_untrusted";
    case ErrorKind::kRejected:
      return "rejected";
    case ErrorKind::kOriginRefused:
      return "origin_refused";
    case ErrorKind::kResponseTooLarge:
      return "response_too_large";
    case ErrorKind::kInvalidResponse:
      return "invalid_response";
    case ErrorKind::kInvalidRequest:
      return "invalid_request";
    case ErrorKind::kInvalidSettings:
      return "invalid_settings";
    case ErrorKind::kTooManyRedirects:
      return "too_many_redirects";
    case ErrorKind::kLocalResource:
      return "local_resource";
    case ErrorKind::kHttpStatus:
      return "http_status";
  }
  return "unknown";
}

}  // namespace outbound
