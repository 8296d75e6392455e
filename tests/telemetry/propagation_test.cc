// SPDX-License-Identifier: Apache-2.0
#include "outbound/telemetry/propagation.h"

#include <gtest/gtest.h>

#include <array>
#include <span>
#include <string_view>

namespace outbound::telemetry {
namespace {

constexpr std::string_view kExample = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

TEST(TraceparentTest, ReadsTheSpecsExampleAndWritesItBack) {
  auto context = ParseTraceparent(kExample, "congo=t61rcWkgMzE");
  ASSERT_TRUE(context);
  EXPECT_EQ(context->trace_id.Hex(), "0af7651916cd43dd8448eb211c80319c");
  EXPECT_EQ(context->span_id.Hex(), "b7ad6b7169203331");
  EXPECT_TRUE(context->sampled);
  EXPECT_EQ(context->trace_state, "congo=t61rcWkgMzE");
  EXPECT_EQ(FormatTraceparent(*context), kExample);
}

TEST(TraceparentTest, KeepsTheSampledFlag) {
  auto context = ParseTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00");
  ASSERT_TRUE(context);
  EXPECT_FALSE(context->sampled);
  EXPECT_EQ(FormatTraceparent(*context), "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00");
}

TEST(TraceparentTest, WrittenIntoTheCallersRoomAsIntoAString) {
  for (std::string_view text :
       {kExample, std::string_view("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00")}) {
    auto context = ParseTraceparent(text);
    ASSERT_TRUE(context);
    std::array<char, kTraceparentSize + 2> room;
    room.fill('#');
    FormatTraceparent(*context,
                      std::span<char, kTraceparentSize>(room.data() + 1, kTraceparentSize));
    EXPECT_EQ(std::string_view(room.data() + 1, kTraceparentSize), text);
    EXPECT_EQ(room.front(), '#');  // nothing written outside it
    EXPECT_EQ(room.back(), '#');
  }
}

TEST(TraceparentTest, RefusesWhatTheSpecRefuses) {
  for (std::string_view bad : {
           "",
           "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",       // no flags
           "00-00000000000000000000000000000000-b7ad6b7169203331-01",    // zero trace id
           "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",    // zero span id
           "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",    // version ff
           "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",    // upper case
           "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-x",  // v00 has no more
           "00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
           "0g-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
       }) {
    EXPECT_FALSE(ParseTraceparent(bad)) << bad;
  }
}

TEST(TraceparentTest, ReadsALaterVersionAsVersionZero) {
  auto context =
      ParseTraceparent("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-what-comes");
  ASSERT_TRUE(context);
  EXPECT_EQ(FormatTraceparent(*context), kExample);
}

// A tracestate is kept as it came when it is a list of at most 32
// "key=value" members, and dropped whole otherwise (W3C Trace Context).
TEST(TraceparentTest, ATracestateThatDoesNotParseIsDroppedWhole) {
  auto kept = [](std::string_view tracestate) {
    auto context = ParseTraceparent(kExample, tracestate);
    return context ? context->trace_state : "(no context)";
  };
  EXPECT_EQ(kept("rojo=00f067aa0ba902b7, congo=t61rcWkgMzE"),
            "rojo=00f067aa0ba902b7, congo=t61rcWkgMzE");
  EXPECT_EQ(kept("fw529a3039@dt=ZmYwZg, 1tenant@vendor=x,,"),
            "fw529a3039@dt=ZmYwZg, 1tenant@vendor=x,,");
  EXPECT_EQ(kept(""), "");
  EXPECT_EQ(kept("A=1"), "");        // upper case key
  EXPECT_EQ(kept("bad key=1"), "");  // a space in the key
  EXPECT_EQ(kept("k=a=b"), "");      // "=" in the value
  EXPECT_EQ(kept("k="), "");         // an empty value
  EXPECT_EQ(kept("novalue"), "");
  EXPECT_EQ(kept("1abc=x"), "");  // a simple key starts with a letter
  std::string many;
  for (int i = 0; i < 32; ++i) many += (i ? "," : "") + std::string("k") + std::to_string(i) + "=v";
  EXPECT_EQ(kept(many), many);
  EXPECT_EQ(kept(many + ",k32=v"), "");  // a 33rd member
}

TEST(BaggageTest, RoundTripsValuesThatNeedEncoding) {
  Baggage baggage = {{"tenant", "acme corp", ""},
                     {"path", "a,b;c=d%e\"f\\", ""},
                     {"unicode", "caf\xc3\xa9", ""},
                     {"with", "props", "ttl=30"}};
  std::string header = FormatBaggage(baggage);
  EXPECT_EQ(header,
            "tenant=acme%20corp,path=a%2Cb%3Bc=d%25e%22f%5C,unicode=caf%C3%A9,with=props;ttl=30");
  EXPECT_EQ(ParseBaggage(header), baggage);
}

// W3C Baggage: percent-decoded bytes that are not UTF-8 are replaced with
// U+FFFD; UTF-8 comes through as it is.
TEST(BaggageTest, DecodedBytesThatAreNotUtf8BecomeTheReplacementCharacter) {
  const std::string kReplacement = "\xEF\xBF\xBD";
  EXPECT_EQ(ParseBaggage("k=%FF")[0].value, kReplacement);
  EXPECT_EQ(ParseBaggage("k=caf%C3%A9")[0].value, "caf\xC3\xA9");
  EXPECT_EQ(ParseBaggage("k=%F0%9F%98%80")[0].value, "\xF0\x9F\x98\x80");
  EXPECT_EQ(ParseBaggage("k=a%C3")[0].value, "a" + kReplacement);             // cut short
  EXPECT_EQ(ParseBaggage("k=%C0%AF")[0].value, kReplacement + kReplacement);  // overlong
  EXPECT_EQ(ParseBaggage("k=%ED%A0%80")[0].value, kReplacement + kReplacement + kReplacement);
}

TEST(BaggageTest, SkipsMalformedMembersAndKeysThatAreNotTokens) {
  Baggage parsed = ParseBaggage(" a = 1 , novalue, bad key=2, =3 ,b=2");
  ASSERT_EQ(parsed.size(), 2u);
  EXPECT_EQ(parsed[0], (BaggageEntry{"a", "1", ""}));
  EXPECT_EQ(parsed[1], (BaggageEntry{"b", "2", ""}));
  EXPECT_EQ(FormatBaggage({{"bad key", "x", ""}, {"ok", "y", ""}}), "ok=y");
  // Properties that would add a member, or split the header, are left out.
  EXPECT_EQ(FormatBaggage({{"a", "1", "p, evil=1"}, {"b", "2", "q\r\nX: y"}, {"c", "3", "ttl=5"}}),
            "a=1,b=2,c=3;ttl=5");
  EXPECT_EQ(*FindBaggage(parsed, "b"), "2");
  EXPECT_EQ(FindBaggage(parsed, "c"), nullptr);
}

}  // namespace
// W3C Baggage: a platform passes on at most 180 members and 8192 bytes,
// whole members only (a server may refuse a request whose headers are too
// large, failing the call for a header it did not need).
TEST(BaggageTest, AtMost180MembersAnd8192BytesOfWholeMembersGoOn) {
  Baggage many;
  for (int i = 0; i < 200; ++i) many.push_back({"k" + std::to_string(i), "v", ""});
  Baggage sent = ParseBaggage(FormatBaggage(many));
  ASSERT_EQ(sent.size(), kMaxBaggageMembers);
  EXPECT_EQ(sent.back().key, "k179");

  Baggage large;
  for (int i = 0; i < 10; ++i)
    large.push_back({"k" + std::to_string(i), std::string(1000, 'x'), ""});
  std::string header = FormatBaggage(large);
  EXPECT_LE(header.size(), kMaxBaggageBytes);
  Baggage kept = ParseBaggage(header);
  ASSERT_EQ(kept.size(), 8u);  // 8 members of 1 003 bytes and 7 commas; a 9th would pass
  EXPECT_EQ(kept.back(), large[7]);
}

}  // namespace outbound::telemetry
