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

void WindowLink::Attach(ReceiveWindow& window, std::uint64_t exchange, std::function<void()> wake) {
  std::lock_guard lock(window.mu_);
  window.wake_.swap(wake);  // the one replaced goes outside the lock
  window.exchange_ = exchange;
}

void WindowLink::Detach(ReceiveWindow& window, std::uint64_t exchange) {
  std::function<void()> gone;  // destroyed outside the lock: it holds the loop
  std::lock_guard lock(window.mu_);
  if (window.exchange_ != exchange) return;
  gone.swap(window.wake_);
  window.exchange_ = 0;
}

}  // namespace internal
}  // namespace outbound::http
