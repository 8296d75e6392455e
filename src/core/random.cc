// SPDX-License-Identifier: Apache-2.0
#include "outbound/random.h"

#include <cstdint>
#include <random>

#include "random_bits.h"

namespace outbound {
namespace {

std::uint64_t Seed() {
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

// splitmix64: tiny state, good enough spread for jitter, no lock.
std::uint64_t NextBits() {
  thread_local std::uint64_t state = Seed();
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class PerThreadRandom final : public Random {
 public:
  double Uniform() override {
    return static_cast<double>(NextBits() >> 11) * 0x1.0p-53;  // 53 random bits in [0, 1)
  }
};

}  // namespace

Random& DefaultRandom() {
  static PerThreadRandom random;
  return random;
}

namespace internal {
std::uint64_t DefaultRandomBits() { return NextBits(); }
}  // namespace internal

}  // namespace outbound
