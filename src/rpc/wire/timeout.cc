// SPDX-License-Identifier: Apache-2.0
#include "timeout.h"

#include <array>
#include <cstdint>
#include <limits>

namespace outbound::rpc::internal {
namespace {

struct Unit {
  char letter;
  std::int64_t nanoseconds;
};

// Smallest first, the order EncodeTimeout tries them in.
constexpr std::array<Unit, 6> kUnits{{
    {'n', 1},
    {'u', 1'000},
    {'m', 1'000'000},
    {'S', 1'000'000'000},
    {'M', 60 * std::int64_t{1'000'000'000}},
    {'H', 3600 * std::int64_t{1'000'000'000}},
}};

constexpr std::int64_t kMaxCount = 99'999'999;  // 8 digits

}  // namespace

std::string EncodeTimeout(Duration timeout) {
  std::int64_t ns = timeout.count();
  if (ns <= 0) return "1n";
  for (const Unit& unit : kUnits) {
    // Rounded up: written so it cannot overflow near the int64 maximum.
    std::int64_t count = ns / unit.nanoseconds + (ns % unit.nanoseconds != 0 ? 1 : 0);
    if (count <= kMaxCount) return std::to_string(count) + unit.letter;
  }
  // Unreachable: the largest Duration is about 2.6 million hours.
  return std::to_string(kMaxCount) + 'H';
}

std::optional<Duration> DecodeTimeout(std::string_view value) {
  if (value.size() < 2 || value.size() > 9) return std::nullopt;
  std::string_view digits = value.substr(0, value.size() - 1);
  char letter = value.back();
  std::int64_t count = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    count = count * 10 + (c - '0');
  }
  for (const Unit& unit : kUnits) {
    if (unit.letter != letter) continue;
    if (count > std::numeric_limits<std::int64_t>::max() / unit.nanoseconds) return Duration::max();
    return Duration(count * unit.nanoseconds);
  }
  return std::nullopt;
}

}  // namespace outbound::rpc::internal
