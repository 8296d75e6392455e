// SPDX-License-Identifier: Apache-2.0
// Trace and span ids: never zero, never repeated in practice, every byte
// of them random, whether drawn from DefaultRandom() (64 bits a draw) or
// from another source (48 bits a draw of Uniform); and from a fixed
// source, the same ids every run, valid even from one that gives zero.
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "outbound/random.h"
#include "outbound/telemetry/trace.h"
#include "outbound/testing/fixed_random.h"

namespace outbound::telemetry {
namespace {

// Draws `count` ids with `draw` and checks them; `Id` has `bytes` and Hex().
template <class Draw>
void ExpectRandomIds(Draw draw, std::size_t count) {
  std::set<std::string> seen;
  std::array<std::set<std::uint8_t>, 16> values_at{};
  std::size_t size = 0;
  for (std::size_t i = 0; i < count; ++i) {
    auto id = draw();
    ASSERT_TRUE(id.valid());
    EXPECT_TRUE(seen.insert(id.Hex()).second) << id.Hex() << " drawn twice";
    size = id.bytes.size();
    for (std::size_t at = 0; at < size; ++at) values_at[at].insert(id.bytes[at]);
  }
  // 1 000 draws of a random byte take far more than 100 values.
  for (std::size_t at = 0; at < size; ++at) EXPECT_GT(values_at[at].size(), 100u) << "byte " << at;
}

TEST(TraceIdsTest, FromTheDefaultSourceEveryByteIsRandom) {
  ExpectRandomIds([] { return NewTraceId(DefaultRandom()); }, 1000);
  ExpectRandomIds([] { return NewSpanId(DefaultRandom()); }, 1000);
}

TEST(TraceIdsTest, FromAnotherSourceEveryByteIsRandom) {
  testing::SeededRandom random(7);
  ExpectRandomIds([&] { return NewTraceId(random); }, 1000);
  ExpectRandomIds([&] { return NewSpanId(random); }, 1000);
}

TEST(TraceIdsTest, ASourceThatGivesZeroGivesValidIdsAndNeverHangs) {
  testing::FixedRandom zero(0.0);
  EXPECT_EQ(NewSpanId(zero).Hex(), "0000000000000001");
  EXPECT_EQ(NewTraceId(zero).Hex(), "00000000000000000000000000000001");
}

TEST(TraceIdsTest, AFixedSourceGivesTheSameIdsEveryRun) {
  testing::FixedRandom half(0.5);  // 2^47 a draw: 0x80 in a draw's sixth byte
  EXPECT_EQ(NewSpanId(half).Hex(), "0000000000800000");
  EXPECT_EQ(NewTraceId(half).Hex(), "00000000008000000000008000000000");
}

}  // namespace
}  // namespace outbound::telemetry
