// SPDX-License-Identifier: Apache-2.0
#include "outbound/random.h"

#include <gtest/gtest.h>

#include <set>

namespace outbound {
namespace {

TEST(DefaultRandomTest, DrawsFromZeroToOneAndVaries) {
  std::set<double> seen;
  for (int i = 0; i < 1000; ++i) {
    double u = DefaultRandom().Uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    seen.insert(u);
  }
  EXPECT_GT(seen.size(), 990u);
}

}  // namespace
}  // namespace outbound
