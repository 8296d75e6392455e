// SPDX-License-Identifier: Apache-2.0
// The client's side of a ReceiveWindow (outbound/http/receive_window.h):
// the exchange carrying the call ties itself to the window, to be woken
// when the window opens. Internal.
#ifndef OUTBOUND_SRC_HTTP_RECEIVE_WINDOW_LINK_H_
#define OUTBOUND_SRC_HTTP_RECEIVE_WINDOW_LINK_H_

#include <functional>

#include "outbound/http/receive_window.h"

namespace outbound::http::internal {

class WindowLink {
 public:
  // `wake` runs, on the opener's thread, each time the window opens after
  // being held, until Detach.
  static void Attach(ReceiveWindow& window, std::function<void()> wake);
  static void Detach(ReceiveWindow& window);
};

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_RECEIVE_WINDOW_LINK_H_
