// SPDX-License-Identifier: Apache-2.0
//
// outbound/testing/fixed_random.h
//
// Jitter a test can predict: a Random that draws the numbers it was given,
// in turn, over and over. With it in the Runtime, every backoff is exact:
// the wait after attempt n is Uniform() * min(backoff_max, backoff_base *
// 2^(n-1)), so with 0.5 and the defaults (100ms base) the waits are 50ms,
// 100ms, 200ms...
//
// example: examples/headers/testing.cc#fixed-random
//   testing::FixedRandom random(0.5);
//   Runtime runtime{.clock = &clock, .network = &network, .random = &random};
//
// Thread-safe.
#ifndef OUTBOUND_TESTING_FIXED_RANDOM_H_
#define OUTBOUND_TESTING_FIXED_RANDOM_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <random>
#include <vector>

#include "outbound/random.h"

namespace outbound::testing {

class FixedRandom final : public Random {
 public:
  // Always `value`, which must be in [0, 1).
  explicit FixedRandom(double value) : values_{value} {}
  // The values in order, then again from the first; each in [0, 1).
  FixedRandom(std::initializer_list<double> values) : values_(values) {}

  double Uniform() override {
    if (values_.empty()) return 0;
    return values_[next_.fetch_add(1, std::memory_order_relaxed) % values_.size()];
  }

 private:
  const std::vector<double> values_;
  std::atomic<std::size_t> next_{0};
};

// Draws from a generator seeded with `seed`: the same sequence every run,
// but spread over [0, 1), for what a fixed draw cannot show (a balancer's
// two random choices must differ). Thread-safe.
class SeededRandom final : public Random {
 public:
  explicit SeededRandom(std::uint64_t seed) : engine_(seed) {}

  double Uniform() override {
    std::lock_guard lock(mu_);
    return std::uniform_real_distribution<double>(0, 1)(engine_);
  }

 private:
  std::mutex mu_;
  std::mt19937_64 engine_;
};

}  // namespace outbound::testing

#endif  // OUTBOUND_TESTING_FIXED_RANDOM_H_
