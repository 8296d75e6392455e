// SPDX-License-Identifier: Apache-2.0
// outbound/retry/backoff.h
//
// Full-jitter exponential backoff: the wait after attempt n (n >= 1) is drawn
// uniformly from [0, min(max, base * 2^(n-1))). The draw takes its random
// number as an argument, so tests assert exact waits.
//
// example: examples/headers/core.cc#backoff
//   retry::Exponential backoff(100ms, 5s);
//   Duration wait = backoff.Wait(attempt, random.Uniform());
#ifndef OUTBOUND_RETRY_BACKOFF_H_
#define OUTBOUND_RETRY_BACKOFF_H_

#include "outbound/clock.h"

namespace outbound::retry {

class Exponential {
 public:
  // `base` and `max` positive, `max` >= `base`.
  Exponential(Duration base, Duration max) : base_(base), max_(max) {}

  // The ceiling of the wait after attempt `attempt`: min(max, base*2^(n-1)).
  Duration Ceiling(int attempt) const;

  // The wait after attempt `attempt`, for `uniform` in [0, 1).
  Duration Wait(int attempt, double uniform) const;

  Duration base() const { return base_; }
  Duration max() const { return max_; }

 private:
  Duration base_;
  Duration max_;
};

}  // namespace outbound::retry

#endif  // OUTBOUND_RETRY_BACKOFF_H_
