// SPDX-License-Identifier: Apache-2.0
#include "outbound/context.h"

#include <algorithm>

namespace outbound::internal {

int CancelState::OnCancel(std::function<void()> fn) {
  std::unique_lock lock(mu_);
  if (cancelled_) {
    lock.unlock();
    fn();
    return -1;
  }
  int id = next_id_++;
  callbacks_.emplace_back(id, std::move(fn));
  return id;
}

void CancelState::Forget(int id) {
  std::lock_guard lock(mu_);
  std::erase_if(callbacks_, [id](const auto& entry) { return entry.first == id; });
}

void CancelState::Cancel() {
  std::vector<std::pair<int, std::function<void()>>> callbacks;
  {
    std::lock_guard lock(mu_);
    if (cancelled_) return;
    cancelled_ = true;
    callbacks.swap(callbacks_);
  }
  for (auto& [id, fn] : callbacks) fn();
}

bool CancelState::cancelled() const {
  std::lock_guard lock(mu_);
  return cancelled_;
}

}  // namespace outbound::internal
