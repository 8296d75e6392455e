// SPDX-License-Identifier: Apache-2.0
// The client's side of a ReceiveWindow (outbound/http/receive_window.h):
// the exchange carrying the call ties itself to the window, to be woken
// when the window opens. Internal.
#ifndef OUTBOUND_SRC_HTTP_RECEIVE_WINDOW_LINK_H_
#define OUTBOUND_SRC_HTTP_RECEIVE_WINDOW_LINK_H_

#include <cstdint>
#include <functional>

#include "outbound/http/receive_window.h"

namespace outbound::http::internal {

class WindowLink {
 public:
  // `wake` runs, on the opener's thread, each time the window opens after
  // being held, until the exchange `exchange` Detaches. A later exchange's
  // Attach (the call's next attempt) takes its place.
  static void Attach(ReceiveWindow& window, std::uint64_t exchange, std::function<void()> wake);
  // Lets go of the wake if it is still `exchange`'s: an attempt that ends
  // after its call's next one began leaves that one's wake alone.
  static void Detach(ReceiveWindow& window, std::uint64_t exchange);
};

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_RECEIVE_WINDOW_LINK_H_
