// SPDX-License-Identifier: Apache-2.0
#include "outbound/retry/backoff.h"

#include <gtest/gtest.h>

namespace outbound::retry {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(ExponentialTest, CeilingDoublesUpToMax) {
  Exponential backoff(milliseconds(100), seconds(5));
  const milliseconds expected[] = {milliseconds(100),  milliseconds(200),  milliseconds(400),
                                   milliseconds(800),  milliseconds(1600), milliseconds(3200),
                                   milliseconds(5000), milliseconds(5000), milliseconds(5000),
                                   milliseconds(5000)};
  for (int n = 1; n <= 10; ++n) {
    EXPECT_EQ(backoff.Ceiling(n), expected[n - 1]) << "attempt " << n;
  }
}

TEST(ExponentialTest, WaitIsUniformBelowTheCeiling) {
  Exponential backoff(milliseconds(100), seconds(5));
  for (int n = 1; n <= 10; ++n) {
    Duration ceiling = backoff.Ceiling(n);
    EXPECT_EQ(backoff.Wait(n, 0.0), Duration::zero());
    EXPECT_EQ(backoff.Wait(n, 0.5), ceiling / 2);
    EXPECT_LT(backoff.Wait(n, 0.9999999999999999), ceiling);  // never the ceiling itself
  }
  EXPECT_EQ(backoff.Wait(3, 0.25), milliseconds(100));
}

TEST(ExponentialTest, HugeAttemptNumbersDoNotOverflow) {
  Exponential backoff(milliseconds(100), seconds(5));
  EXPECT_EQ(backoff.Ceiling(1'000'000), seconds(5));
}

}  // namespace
}  // namespace outbound::retry
