// SPDX-License-Identifier: Apache-2.0
#include "outbound/telemetry/attributes.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "outbound/random.h"
#include "outbound/telemetry/metric_store.h"
#include "outbound/telemetry/trace.h"

namespace outbound::telemetry {
namespace {

constexpr char kMethodKey[] = "http.request.method";

// Text longer than a std::string keeps in itself, overwritten before it
// goes: a key still looking at it reads '#'s, or trips AddressSanitizer.
std::unique_ptr<std::string> UserKey() {
  return std::make_unique<std::string>("user.chosen.key.of.some.length");
}
void Scribble(std::unique_ptr<std::string>& text) {
  text->assign(text->size(), '#');
  text.reset();
}

// A literal's key is made at compile time, its text up to the terminator.
static_assert(KeyView("http.route").text().size() == 10);

TEST(AttributeKeyTest, ALiteralIsKeptAsItIsAnyOtherTextIsCopied) {
  KeyView literal = kMethodKey;
  EXPECT_TRUE(literal.literal());
  Key kept = literal;
  EXPECT_TRUE(kept.literal());
  EXPECT_EQ(kept.text().data(), kMethodKey);  // the literal itself, not a copy
  Key written = "http.request.method";        // a literal written in place
  EXPECT_TRUE(written.literal());

  auto text = UserKey();
  KeyView borrowed = *text;
  EXPECT_FALSE(borrowed.literal());
  EXPECT_FALSE(KeyView(text->c_str()).literal());
  Key copied = borrowed;
  EXPECT_FALSE(copied.literal());
  Scribble(text);  // the copy outlives what it was copied from
  EXPECT_EQ(copied, "user.chosen.key.of.some.length");

  EXPECT_FALSE(Key("").literal());  // nothing to keep
  EXPECT_EQ(Key(""), "");
}

TEST(AttributeKeyTest, CopiesAndMovesKeepTheText) {
  auto text = UserKey();
  Key owned = *text;
  Scribble(text);
  Key copy = owned;
  EXPECT_EQ(copy, "user.chosen.key.of.some.length");
  EXPECT_NE(copy.text().data(), owned.text().data());  // a copy of its own

  const char* buffer = owned.text().data();
  Key moved = std::move(owned);
  EXPECT_EQ(moved.text().data(), buffer);  // the buffer handed over
  EXPECT_EQ(moved, "user.chosen.key.of.some.length");

  // Given a view of its own text, a key copies it before letting it go.
  moved = Key(KeyView(moved));
  EXPECT_EQ(moved, "user.chosen.key.of.some.length");
  Key& same = moved;
  moved = same;  // itself
  EXPECT_EQ(moved, "user.chosen.key.of.some.length");

  Key literal = KeyView(kMethodKey);
  Key literal_copy = literal;
  EXPECT_EQ(literal_copy.text().data(), kMethodKey);
  literal_copy = copy;  // a literal's key becomes an owned one
  EXPECT_FALSE(literal_copy.literal());
  EXPECT_EQ(literal_copy, "user.chosen.key.of.some.length");
  literal_copy = literal;  // and a literal's again
  EXPECT_EQ(literal_copy.text().data(), kMethodKey);
}

TEST(AttributeKeyTest, KeysCompareByTextWhateverKeptThem) {
  KeyView view = kMethodKey;
  std::string text = "http.request.method";
  Key owned = text;
  EXPECT_TRUE(view == "http.request.method");
  EXPECT_TRUE(view == text);
  EXPECT_TRUE(view == owned);
  EXPECT_TRUE(owned == view);
  EXPECT_TRUE(owned == Key(kMethodKey));
  EXPECT_FALSE(owned == "http.request");

  Attribute from_literal = Own(KeyValue{kMethodKey, "GET"});
  Attribute from_text{text, std::string("GET")};
  EXPECT_EQ(from_literal, from_text);
  EXPECT_TRUE(from_literal.key.literal());
  EXPECT_FALSE(from_text.key.literal());
  const Attributes attributes = {from_text};
  ASSERT_NE(Find(attributes, kMethodKey), nullptr);
  EXPECT_EQ(*Find(attributes, kMethodKey), Value(std::string("GET")));
}

class KeepLast final : public SpanProcessor {
 public:
  void OnEnd(SpanData&& span) override { last = std::move(span); }
  std::optional<SpanData> last;
};

TEST(AttributeKeyTest, ASpanKeepsLiteralKeysAsTheyAreAndCopiesTheRest) {
  KeepLast processor;
  RecordingTracer tracer(DefaultRandom(), processor);
  std::unique_ptr<Span> span = tracer.StartSpan({.scope = "test", .name = "GET"});
  span->SetAttribute({kMethodKey, "GET"});
  auto key = UserKey();
  auto value = UserKey();
  span->SetAttribute({*key, std::string_view(*value)});
  Scribble(key);
  Scribble(value);
  span->SetAttribute({kMethodKey, "POST"});  // the same key again: its value replaced
  span->End(TimePoint{});

  ASSERT_TRUE(processor.last.has_value());
  const Attributes& attributes = processor.last->attributes;
  ASSERT_EQ(attributes.size(), 2u);
  EXPECT_EQ(attributes[0].key.text().data(), kMethodKey);
  EXPECT_EQ(attributes[0].value, Value(std::string("POST")));
  EXPECT_FALSE(attributes[1].key.literal());
  EXPECT_EQ(attributes[1].key, "user.chosen.key.of.some.length");
  EXPECT_EQ(attributes[1].value, Value(std::string("user.chosen.key.of.some.length")));
}

TEST(AttributeKeyTest, KeysOfOneLengthAreToldApartAndASecondSettingReplacesTheFirst) {
  KeepLast processor;
  RecordingTracer tracer(DefaultRandom(), processor);
  std::unique_ptr<Span> span = tracer.StartSpan({.scope = "test", .name = "GET"});
  const std::string long_key(64 + 3, 'k');  // its length the same as "abc"'s, modulo 64
  span->SetAttribute({"abc", std::int64_t{1}});
  span->SetAttribute({"xyz", std::int64_t{2}});  // same length, another key
  span->SetAttribute({std::string_view(long_key), std::int64_t{3}});
  span->SetAttribute({std::string_view(std::string("xyz")), std::int64_t{4}});  // xyz again
  span->SetAttribute({"abc", true});
  span->End(TimePoint{});

  ASSERT_TRUE(processor.last.has_value());
  const Attributes& attributes = processor.last->attributes;
  ASSERT_EQ(attributes.size(), 3u);
  EXPECT_EQ(attributes[0].key, "abc");
  EXPECT_EQ(attributes[0].value, Value(true));
  EXPECT_EQ(attributes[1].key, "xyz");
  EXPECT_EQ(attributes[1].value, Value(std::int64_t{4}));
  EXPECT_EQ(attributes[2].key, long_key);
  EXPECT_EQ(attributes[2].value, Value(std::int64_t{3}));
}

TEST(AttributeKeyTest, AMetricKeepsItsSetsKeysAsTheSpanDoes) {
  MetricStore store;
  auto counter = store.CreateCounter({"test", "calls", "{call}", ""});
  auto key = UserKey();
  {
    const KeyValue attributes[] = {{kMethodKey, "GET"}, {*key, std::int64_t{1}}};
    counter->Add(1, attributes);
  }
  Scribble(key);
  auto metrics = store.Collect();
  ASSERT_EQ(metrics.size(), 1u);
  ASSERT_EQ(metrics[0].points.size(), 1u);
  const Attributes& kept = metrics[0].points[0].attributes;
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0].key.text().data(), kMethodKey);  // sorted by key
  EXPECT_EQ(kept[1].key, "user.chosen.key.of.some.length");
}

}  // namespace
}  // namespace outbound::telemetry
