// SPDX-License-Identifier: Apache-2.0
#include "outbound/random.h"

#include <cstdint>
#include <random>

namespace outbound {
namespace {

// splitmix64: tiny state, good enough spread for jitter, no lock.
class PerThreadRandom final : public Random {
 public:
  double Uniform() override {
    thread_local std::uint64_t state = Seed();
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53;  // 53 random bits in [0, 1)
  }

 private:
  static std::uint64_t Seed() {
    std::random_device device;
    return (static_cast<std::uint64_t>(device()) << 32) ^ device();
  }
};

}  // namespace

Random& DefaultRandom() {
  static PerThreadRandom random;
  return random;
}

}  // namespace outbound
