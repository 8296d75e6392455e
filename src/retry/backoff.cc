// SPDX-License-Identifier: Apache-2.0
#include "outbound/retry/backoff.h"

#include <algorithm>

namespace outbound::retry {

Duration Exponential::Ceiling(int attempt) const {
  Duration ceiling = base_;
  // Doubling stops at max, so it never overflows, however large `attempt`.
  for (int n = 1; n < attempt && ceiling < max_; ++n) ceiling *= 2;
  return std::min(ceiling, max_);
}

Duration Exponential::Wait(int attempt, double uniform) const {
  uniform = std::clamp(uniform, 0.0, 1.0);
  auto ceiling = static_cast<double>(Ceiling(attempt).count());
  auto wait = static_cast<Duration::rep>(uniform * ceiling);
  // [0, ceiling): a uniform that rounds up to the ceiling stays below it.
  return Duration(std::min<Duration::rep>(wait, Ceiling(attempt).count() - 1));
}

}  // namespace outbound::retry
