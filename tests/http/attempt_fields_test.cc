// SPDX-License-Identifier: Apache-2.0
// AttemptFields: the fields an attempt adds keep their own copies of
// their values, in order, whatever their length; clear() empties them for
// the next attempt; and a field past the fifth is left out.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../../src/http/client_transport.h"

namespace outbound::http::internal {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

Pairs Read(const AttemptFields& fields) {
  Pairs out;
  for (const auto& [name, value] : fields) out.emplace_back(name, value);
  return out;
}

TEST(AttemptFieldsTest, KeepsCopiesOfShortAndLongValuesInOrder) {
  AttemptFields fields;
  std::string traceparent(55, 't');
  std::string baggage(5000, 'b');  // more than the room: a string of its own
  std::string timeout = "250m";
  fields.Add("traceparent", traceparent);
  fields.Add("baggage", baggage);
  fields.Add("grpc-timeout", timeout);
  Pairs expected = {{"traceparent", traceparent}, {"baggage", baggage}, {"grpc-timeout", timeout}};
  // The values were copied: what they were copied from may change or go.
  traceparent.assign(55, 'x');
  baggage.clear();
  baggage.shrink_to_fit();
  timeout = "1S";
  EXPECT_EQ(Read(fields), expected);
  EXPECT_EQ(fields.size(), 3u);
}

TEST(AttemptFieldsTest, ClearEmptiesThemAndTheRoomServesAgain) {
  AttemptFields fields;
  fields.Add("traceparent", std::string(55, '1'));
  fields.Add("tracestate", std::string(300, 's'));
  fields.clear();
  EXPECT_TRUE(fields.empty());
  EXPECT_EQ(Read(fields), Pairs{});
  fields.Add("traceparent", std::string(55, '2'));
  fields.Add("tracestate", "congo=t61rcWkgMzE");
  EXPECT_EQ(Read(fields),
            (Pairs{{"traceparent", std::string(55, '2')}, {"tracestate", "congo=t61rcWkgMzE"}}));
}

#ifdef NDEBUG
TEST(AttemptFieldsTest, ASixthFieldIsLeftOutInARelease) {
  AttemptFields fields;
  for (int i = 0; i < 6; ++i) fields.Add("x-field", std::to_string(i));
  EXPECT_EQ(fields.size(), AttemptFields::kMaxFields);
  EXPECT_EQ(Read(fields).back().second, "4");
}
#else
TEST(AttemptFieldsDeathTest, ASixthFieldFailsAnAssertionInADebugBuild) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the suite's binary runs threads
  AttemptFields fields;
  for (int i = 0; i < 5; ++i) fields.Add("x-field", std::to_string(i));
  EXPECT_DEATH(fields.Add("x-field", "5"), "at most five");
}
#endif

}  // namespace
}  // namespace outbound::http::internal
