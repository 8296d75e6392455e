// SPDX-License-Identifier: Apache-2.0
#include "hedge_budget.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace outbound::http::internal {

HedgeBudget::HedgeBudget(const Hedging& hedging)
    : hedging_(hedging),
      earn_milli_(std::llround(hedging.max_extra_share * 1000)),
      milli_(std::int64_t{kHedgeBurst} * 1000),
      delay_ns_(std::chrono::duration_cast<std::chrono::nanoseconds>(hedging.delay).count()) {
  if (hedging.percentile) samples_.reserve(kWindow);
}

void HedgeBudget::CallStarted() {
  constexpr std::int64_t kFull = std::int64_t{kHedgeBurst} * 1000;
  std::int64_t now = milli_.load(std::memory_order_relaxed);
  while (now < kFull && !milli_.compare_exchange_weak(now, std::min(kFull, now + earn_milli_),
                                                      std::memory_order_relaxed)) {
  }
}

bool HedgeBudget::TrySpend() {
  std::int64_t now = milli_.load(std::memory_order_relaxed);
  while (now >= 1000 && !milli_.compare_exchange_weak(now, now - 1000, std::memory_order_relaxed)) {
  }
  return now >= 1000;
}

void HedgeBudget::Observe(Duration latency) {
  if (!hedging_.percentile) return;
  std::lock_guard lock(mu_);
  if (samples_.size() < kWindow) {
    samples_.push_back(latency);
  } else {
    samples_[next_] = latency;
  }
  next_ = (next_ + 1) % kWindow;
  // First once kMinSamples are in, then every kRecompute samples.
  if (samples_.size() < kMinSamples) return;
  if (samples_.size() > kMinSamples && ++since_ < kRecompute) return;
  since_ = 0;
  std::vector<Duration> sorted = samples_;
  auto at = sorted.begin() +
            static_cast<std::ptrdiff_t>(
                std::ceil(*hedging_.percentile * static_cast<double>(sorted.size())) - 1);
  std::nth_element(sorted.begin(), at, sorted.end());
  Duration delay = std::max<Duration>(*at, std::chrono::milliseconds(1));
  delay_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(delay).count();
}

Duration HedgeBudget::Delay() const {
  return std::chrono::duration_cast<Duration>(std::chrono::nanoseconds(delay_ns_.load()));
}

}  // namespace outbound::http::internal
