// SPDX-License-Identifier: Apache-2.0
// How a response body's string grows while it arrives, and which answers
// have none, for both transports. Internal.
#ifndef OUTBOUND_SRC_HTTP_BODY_GROWTH_H_
#define OUTBOUND_SRC_HTTP_BODY_GROWTH_H_

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

namespace outbound::http::internal {

// Makes room in `body` for `more` bytes, for `limit` in all at most.
// Small bodies grow by doubling; past 1 MiB the string takes the whole
// limit at once, so a large body is never copied (its untouched pages cost
// no memory) and a body near the limit never holds twice it. Doubling all
// the way would not do: libstdc++ rounds a reserve below twice the capacity
// up to twice it, and the copy holds the old buffer beside the new.
inline void MakeRoom(std::string& body, std::size_t more, std::size_t limit) {
  constexpr std::size_t kDoublingBound = std::size_t{1} << 20;
  std::size_t needed = body.size() + more;
  if (needed <= body.capacity()) return;
  std::size_t doubled = std::max(body.capacity() * 2, needed);
  body.reserve(doubled <= kDoublingBound ? std::min(doubled, std::max(needed, limit))
                                         : std::max(needed, limit));
}

// Appends `piece` to `body` unless that would take it past `limit`: then
// false, and `body` is unchanged.
inline bool AppendWithin(std::string& body, std::string_view piece, std::size_t limit) {
  if (body.size() + piece.size() > limit) return false;
  MakeRoom(body, piece.size(), limit);
  body.append(piece);
  return true;
}

// Whether an answer has no body whatever its headers say (RFC 9110
// §6.4.1): the answer to a HEAD, a 204, a 304.
inline bool HasNoBody(std::string_view method, int status) {
  return method == "HEAD" || status == 204 || status == 304;
}

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_BODY_GROWTH_H_
