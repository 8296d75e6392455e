// SPDX-License-Identifier: Apache-2.0
#include <utility>

#include "receive_window_link.h"

namespace outbound::http {

void ReceiveWindow::Open() {
  if (!held_.exchange(false, std::memory_order_relaxed)) return;
  // Copied under the lock, called outside it: the wake posts to the
  // client's loop, which may be Detaching meanwhile.
  std::function<void()> wake;
  {
    std::lock_guard lock(mu_);
    wake = wake_;
  }
  if (wake) wake();
}

namespace internal {

void WindowLink::Attach(ReceiveWindow& window, std::function<void()> wake) {
  std::lock_guard lock(window.mu_);
  window.wake_ = std::move(wake);
}

void WindowLink::Detach(ReceiveWindow& window) {
  std::lock_guard lock(window.mu_);
  window.wake_ = nullptr;
}

}  // namespace internal
}  // namespace outbound::http
