// SPDX-License-Identifier: Apache-2.0
// What hedging keeps per client (Settings::hedging): the delay before a
// hedge and the share of calls that may have one. The retry loop asks it
// when an attempt's hedge timer fires. Internal.
#ifndef OUTBOUND_SRC_HTTP_HEDGE_BUDGET_H_
#define OUTBOUND_SRC_HTTP_HEDGE_BUDGET_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "outbound/clock.h"
#include "outbound/http/settings.h"

namespace outbound::http::internal {

// The hedges of one client (Settings::hedging): how long an attempt waits
// before a hedge starts beside it, and the share of calls that may have
// one. The delay is the fixed one, or the percentile of the latest
// kWindow answered attempts once kMinSamples were seen (recomputed every
// kRecompute samples, so a sample costs a store). The share is a bucket in
// thousandths of a hedge: each call adds max_extra_share, up to
// kHedgeBurst; a hedge takes one. Thread-safe; lives as long as its client.
class HedgeBudget {
 public:
  static constexpr std::size_t kWindow = 1000;
  static constexpr std::size_t kMinSamples = 100;
  static constexpr std::size_t kRecompute = 50;

  explicit HedgeBudget(const Hedging& hedging);
  const Hedging& settings() const { return hedging_; }

  // A call starts: the share earns max_extra_share.
  void CallStarted();
  // A hedge may start: the share has one, which it takes.
  bool TrySpend();
  // How long an answered attempt took (or a first attempt that lost to
  // its hedge ran: at least that long), for the percentile.
  void Observe(Duration latency);
  // How long an attempt waits before a hedge starts beside it.
  Duration Delay() const;

 private:
  const Hedging hedging_;
  const std::int64_t earn_milli_;
  std::atomic<std::int64_t> milli_;
  mutable std::mutex mu_;
  std::vector<Duration> samples_;  // a ring of the latest kWindow, guarded by mu_
  std::size_t next_ = 0;           // where the next sample goes, guarded by mu_
  std::size_t since_ = 0;          // samples since the delay was computed, guarded by mu_
  std::atomic<std::int64_t> delay_ns_;
};

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_HEDGE_BUDGET_H_
