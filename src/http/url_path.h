// SPDX-License-Identifier: Apache-2.0
// The path of a call's URL, for what is decided by path: a call's route
// (routes.h) and a gRPC attempt's method. Internal.
#ifndef OUTBOUND_SRC_HTTP_URL_PATH_H_
#define OUTBOUND_SRC_HTTP_URL_PATH_H_

#include <cstddef>
#include <string_view>

namespace outbound::http::internal {

// A path as it is; an absolute URL from the first "/" after its authority,
// query included ("/" when it has none).
inline std::string_view PathOf(std::string_view url) {
  if (url.starts_with('/')) return url;
  std::size_t scheme = url.find("://");
  std::size_t path = url.find('/', scheme == std::string_view::npos ? 0 : scheme + 3);
  return path == std::string_view::npos ? std::string_view("/") : url.substr(path);
}

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_URL_PATH_H_
