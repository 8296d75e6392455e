// SPDX-License-Identifier: Apache-2.0
// grpc-timeout: the smallest unit that fits in 8 digits, rounded up, and
// its decoding for a server.
#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "../../src/rpc/wire/timeout.h"

namespace outbound::rpc::internal {
namespace {

using namespace std::chrono_literals;
using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;

TEST(EncodeTimeoutTest, EachUnitHoldsUpTo8DigitsAndOneNanosecondMoreTakesTheNextUnit) {
  EXPECT_EQ(EncodeTimeout(nanoseconds(99'999'999)), "99999999n");
  EXPECT_EQ(EncodeTimeout(nanoseconds(100'000'000)), "100000u");

  EXPECT_EQ(EncodeTimeout(microseconds(99'999'999)), "99999999u");
  EXPECT_EQ(EncodeTimeout(microseconds(99'999'999) + 1ns), "100000m");

  EXPECT_EQ(EncodeTimeout(milliseconds(99'999'999)), "99999999m");
  EXPECT_EQ(EncodeTimeout(milliseconds(99'999'999) + 1ns), "100000S");

  EXPECT_EQ(EncodeTimeout(seconds(99'999'999)), "99999999S");
  // 99999999 s and a bit is 1666666.65 minutes: rounded up.
  EXPECT_EQ(EncodeTimeout(seconds(99'999'999) + 1ns), "1666667M");

  EXPECT_EQ(EncodeTimeout(minutes(99'999'999)), "99999999M");
  EXPECT_EQ(EncodeTimeout(minutes(99'999'999) + 1ns), "1666667H");
}

TEST(EncodeTimeoutTest, TheLargestDurationIsHoursRoundedUp) {
  // 9223372036854775807 ns is 2562047.79 hours.
  EXPECT_EQ(EncodeTimeout(nanoseconds::max()), "2562048H");
}

TEST(EncodeTimeoutTest, ARemainderRoundsUpSoTheServerNeverSeesLessThanTheCallerGave) {
  EXPECT_EQ(EncodeTimeout(nanoseconds(100'000'001)), "100001u");
  EXPECT_EQ(EncodeTimeout(1500ms), "1500000u");
  EXPECT_EQ(EncodeTimeout(1s), "1000000u");
  EXPECT_EQ(EncodeTimeout(10s), "10000000u");
  EXPECT_EQ(EncodeTimeout(100s), "100000m");
  EXPECT_EQ(EncodeTimeout(100s + 1ns), "100001m");
}

TEST(EncodeTimeoutTest, APositiveTimeoutNeverEncodesAsZero) { EXPECT_EQ(EncodeTimeout(1ns), "1n"); }

TEST(EncodeTimeoutTest, ZeroAndNegativeTimeoutsEncodeAsTheFloorOfOneNanosecond) {
  EXPECT_EQ(EncodeTimeout(0ns), "1n");
  EXPECT_EQ(EncodeTimeout(-5s), "1n");
  EXPECT_EQ(EncodeTimeout(nanoseconds::min()), "1n");
}

TEST(DecodeTimeoutTest, EachUnitIsRead) {
  EXPECT_EQ(DecodeTimeout("2H"), hours(2));
  EXPECT_EQ(DecodeTimeout("3M"), minutes(3));
  EXPECT_EQ(DecodeTimeout("4S"), seconds(4));
  EXPECT_EQ(DecodeTimeout("5m"), milliseconds(5));
  EXPECT_EQ(DecodeTimeout("6u"), microseconds(6));
  EXPECT_EQ(DecodeTimeout("7n"), nanoseconds(7));
  EXPECT_EQ(DecodeTimeout("99999999n"), nanoseconds(99'999'999));
  EXPECT_EQ(DecodeTimeout("00000001S"), seconds(1));
}

TEST(DecodeTimeoutTest, ZeroIsAZeroTimeout) { EXPECT_EQ(DecodeTimeout("0S"), nanoseconds(0)); }

TEST(DecodeTimeoutTest, HoursPastWhatADurationHoldsAreTheLargestDuration) {
  EXPECT_EQ(DecodeTimeout("99999999H"), Duration::max());
  EXPECT_EQ(DecodeTimeout("2562047H"), hours(2'562'047));
  EXPECT_EQ(DecodeTimeout("99999999M"), minutes(99'999'999));
}

TEST(DecodeTimeoutTest, AnythingMalformedIsNothing) {
  for (const char* bad : {"", "S", "1", "12", "123456789S", "1x", "1s", "1h", "-1S", "+1S", " 1S",
                          "1S ", "1.5S", "1SS", "S1", "1 S", "0x1S", "\xd9\xa1S"}) {
    EXPECT_FALSE(DecodeTimeout(bad).has_value()) << '"' << bad << '"';
  }
}

TEST(TimeoutTest, DecodingAnEncodedTimeoutGivesAtLeastItAndLessThanOneUnitMore) {
  std::mt19937_64 random(17);  // fixed: a failure replays
  for (int i = 0; i < 2000; ++i) {
    // Spread over every unit: up to 10^(1..18) ns.
    std::int64_t scale = 1;
    for (int digits = 1 + static_cast<int>(random() % 18); digits > 0; --digits) scale *= 10;
    Duration timeout(1 + static_cast<std::int64_t>(random() % static_cast<std::uint64_t>(scale)));
    std::string encoded = EncodeTimeout(timeout);
    ASSERT_LE(encoded.size(), 9u) << encoded;
    auto decoded = DecodeTimeout(encoded);
    ASSERT_TRUE(decoded.has_value()) << encoded;
    EXPECT_GE(*decoded, timeout) << encoded;
    Duration unit = *DecodeTimeout(std::string("1") + encoded.back());
    EXPECT_LT(*decoded - timeout, unit) << encoded;
  }
}

}  // namespace
}  // namespace outbound::rpc::internal
