// SPDX-License-Identifier: Apache-2.0
// gRPC's Length-Prefixed-Message: framing a request, deframing a response
// split anywhere, and every way a response body can be refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "../../src/rpc/wire/framing.h"
#include "../../src/rpc/wire/gzip.h"

// The largest single allocation while a test watches (LargestAllocation):
// how a test proves a length is refused before anything of that size is
// held. This binary's operator new and delete are these.
namespace {
std::atomic<bool> watching{false};
std::atomic<std::size_t> largest{0};
}  // namespace

void* operator new(std::size_t size) {
  if (watching.load(std::memory_order_relaxed)) {
    std::size_t seen = largest.load(std::memory_order_relaxed);
    while (size > seen && !largest.compare_exchange_weak(seen, size)) {
    }
  }
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace outbound::rpc::internal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace std::string_literals;

// A prefix by hand: flag and big-endian length.
std::string Prefix(unsigned char flag, std::uint32_t length) {
  std::string prefix;
  prefix += static_cast<char>(flag);
  prefix += static_cast<char>((length >> 24) & 0xFF);
  prefix += static_cast<char>((length >> 16) & 0xFF);
  prefix += static_cast<char>((length >> 8) & 0xFF);
  prefix += static_cast<char>(length & 0xFF);
  return prefix;
}

std::string Gzip(std::string_view message) {
  auto coded = GzipCompress(message);
  EXPECT_TRUE(coded.has_value());
  return coded ? *coded : std::string();
}

// Watches the allocations made while it lives.
class LargestAllocation {
 public:
  LargestAllocation() {
    largest = 0;
    watching = true;
  }
  ~LargestAllocation() { watching = false; }
  LargestAllocation(const LargestAllocation&) = delete;
  LargestAllocation& operator=(const LargestAllocation&) = delete;
  std::size_t bytes() const { return largest.load(); }
};

// A Deframer that keeps what it hands on.
struct Collected {
  explicit Collected(std::string_view encoding = "", std::size_t limit = kDefaultReceiveLimit)
      : deframer(encoding, limit, [this](std::string m, bool coded) {
          messages.push_back(std::move(m));
          compressed.push_back(coded);
        }) {}
  std::vector<std::string> messages;
  std::vector<bool> compressed;  // each message's flag as handed on
  Deframer deframer;
};

// "hello, wire" gzip-coded by Python's gzip module (mtime 0), an encoder
// other than ours.
const std::string kPythonGzip =
    "\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\x03\xcb\x48\xcd\xc9\xc9\xd7\x51\x28\xcf\x2c\x4a\x05"
    "\x00\x8d\xfe\x23\xd6\x0b\x00\x00\x00"s;

TEST(FrameTest, AMessageIsPrefixedWithFlagZeroAndItsBigEndianLength) {
  EXPECT_EQ(Frame("abc"), "\x00\x00\x00\x00\x03"s + "abc");
  std::string long_message(0x010203, 'x');
  EXPECT_EQ(Frame(long_message), "\x00\x00\x01\x02\x03"s + long_message);
}

TEST(FrameTest, AnEmptyMessageIsItsPrefixAlone) { EXPECT_EQ(Frame(""), "\x00\x00\x00\x00\x00"s); }

TEST(FrameTest, FrameToAppendsToWhatIsThere) {
  std::string out = "before";
  FrameTo(out, "ab");
  EXPECT_EQ(out, "before"s + "\x00\x00\x00\x00\x02"s + "ab");
}

TEST(FrameForSendingTest, AMessageAtTheSendLimitIsFramed) {
  auto framed = FrameForSending("12345", 5, false);
  ASSERT_TRUE(framed.has_value());
  EXPECT_EQ(*framed, Frame("12345"));
}

TEST(FrameForSendingTest, AMessageOverTheSendLimitIsResourceExhaustedNamingBothSizes) {
  auto framed = FrameForSending("123456", 5, false);
  ASSERT_FALSE(framed.has_value());
  EXPECT_EQ(framed.error().code, Code::kResourceExhausted);
  EXPECT_EQ(framed.error().message,
            "the request message is 6 bytes, over the send limit of 5 bytes");
}

TEST(FrameForSendingTest, TheSendLimitIsCheckedOnTheMessageBeforeGzip) {
  std::string compressible(100, 'a');
  auto framed = FrameForSending(compressible, 99, true);
  ASSERT_FALSE(framed.has_value());
  EXPECT_EQ(framed.error().code, Code::kResourceExhausted);
  EXPECT_EQ(framed.error().message,
            "the request message is 100 bytes, over the send limit of 99 bytes");
}

TEST(FrameForSendingTest, WithGzipTheFlagIsOneAndTheBodyInflatesToTheMessage) {
  std::string message(1000, 'a');
  auto framed = FrameForSending(message, 1000, true);
  ASSERT_TRUE(framed.has_value());
  ASSERT_GT(framed->size(), kFramePrefixSize);
  std::string coded = framed->substr(kFramePrefixSize);
  EXPECT_EQ(framed->substr(0, kFramePrefixSize),
            Prefix(1, static_cast<std::uint32_t>(coded.size())));
  EXPECT_EQ(coded.substr(0, 3), "\x1f\x8b\x08"s);  // gzip's magic and deflate
  auto inflated = GzipDecompress(coded, 1000);
  ASSERT_TRUE(inflated.has_value());
  EXPECT_EQ(*inflated, message);
}

TEST(GzipTest, AnotherEncodersGzipInflates) {
  auto inflated = GzipDecompress(kPythonGzip, 100);
  ASSERT_TRUE(inflated.has_value()) << inflated.error().message;
  EXPECT_EQ(*inflated, "hello, wire");
}

TEST(GzipTest, MembersBackToBackInflateToTheirConcatenation) {
  auto inflated = GzipDecompress(kPythonGzip + Gzip("!"), 100);
  ASSERT_TRUE(inflated.has_value()) << inflated.error().message;
  EXPECT_EQ(*inflated, "hello, wire!");
}

TEST(GzipTest, IncompressibleBytesRoundTrip) {
  std::mt19937 random(7);
  std::string bytes(200 * 1024, '\0');
  for (char& c : bytes) c = static_cast<char>(random() & 0xFF);
  auto inflated = GzipDecompress(Gzip(bytes), bytes.size());
  ASSERT_TRUE(inflated.has_value()) << inflated.error().message;
  EXPECT_EQ(*inflated, bytes);
}

TEST(GzipTest, AnEmptyMessageRoundTrips) {
  auto inflated = GzipDecompress(Gzip(""), 0);
  ASSERT_TRUE(inflated.has_value()) << inflated.error().message;
  EXPECT_EQ(*inflated, "");
}

TEST(GzipTest, CutShortIsInternal) {
  auto inflated = GzipDecompress(kPythonGzip.substr(0, kPythonGzip.size() - 4), 100);
  ASSERT_FALSE(inflated.has_value());
  EXPECT_EQ(inflated.error().code, Code::kInternal);
}

TEST(GzipTest, BytesAfterTheLastMemberThatAreNotGzipAreInternal) {
  auto inflated = GzipDecompress(kPythonGzip + "junk", 100);
  ASSERT_FALSE(inflated.has_value());
  EXPECT_EQ(inflated.error().code, Code::kInternal);
}

TEST(GzipTest, InflatingPastTheLimitIsResourceExhausted) {
  std::string large(10 * 1024 * 1024, 'z');
  auto inflated = GzipDecompress(Gzip(large), 1000);
  ASSERT_FALSE(inflated.has_value());
  EXPECT_EQ(inflated.error().code, Code::kResourceExhausted);
  EXPECT_EQ(inflated.error().message,
            "the response message inflates to more than the receive limit of 1000 bytes");
}

TEST(GzipTest, InflatingStopsOneBytePastTheLimit) {
  std::string bomb = Gzip(std::string(10 * 1024 * 1024, 'z'));
  for (std::size_t limit : {std::size_t{1000}, std::size_t{100'000}, std::size_t{1'000'000}}) {
    LargestAllocation allocation;
    auto inflated = GzipDecompress(bomb, limit);
    ASSERT_FALSE(inflated.has_value());
    EXPECT_EQ(inflated.error().code, Code::kResourceExhausted);
    // limit + 1 decoded bytes and a string's terminator, nothing larger.
    EXPECT_LE(allocation.bytes(), limit + 2) << limit;
  }
}

TEST(DeframerTest, TheDefaultReceiveLimitIsFourMebibytes) {
  EXPECT_EQ(kDefaultReceiveLimit, 4u * 1024 * 1024);
}

TEST(DeframerTest, MessagesInOnePieceAreHandedOnInOrder) {
  Collected c;
  EXPECT_TRUE(c.deframer.Feed(Frame("one") + Frame("") + Frame("three")).ok());
  EXPECT_TRUE(c.deframer.Finish().ok());
  EXPECT_THAT(c.messages, ElementsAre("one", "", "three"));
  EXPECT_EQ(c.deframer.messages(), 3u);
}

TEST(DeframerTest, AnEmptyBodyFinishesWithNoMessages) {
  Collected c;
  EXPECT_TRUE(c.deframer.Feed("").ok());
  EXPECT_TRUE(c.deframer.Finish().ok());
  EXPECT_TRUE(c.messages.empty());
}

TEST(DeframerTest, AMessageIsHandedOnOnlyOnceItIsWhole) {
  Collected c;
  std::string framed = Frame("abcdef");
  EXPECT_TRUE(c.deframer.Feed(framed.substr(0, framed.size() - 1)).ok());
  EXPECT_TRUE(c.messages.empty());
  EXPECT_TRUE(c.deframer.Feed(framed.substr(framed.size() - 1)).ok());
  EXPECT_THAT(c.messages, ElementsAre("abcdef"));
}

// The body of a response of several messages, plain and gzip-coded, and
// what it should give.
struct Body {
  std::string bytes;
  std::vector<std::string> messages;
};

Body MixedBody() {
  Body body;
  std::mt19937 random(31);
  for (int i = 0; i < 12; ++i) {
    std::string message(random() % 300, '\0');
    for (char& c : message) c = static_cast<char>(random() % 4 == 0 ? random() & 0xFF : 'q');
    if (i % 3 == 1) {
      std::string coded = Gzip(message);
      body.bytes += Prefix(1, static_cast<std::uint32_t>(coded.size())) + coded;
    } else {
      body.bytes += Frame(message);
    }
    body.messages.push_back(std::move(message));
  }
  body.bytes += Frame("");
  body.messages.emplace_back();
  return body;
}

TEST(DeframerTest, OneByteAtATimeGivesTheSameMessages) {
  Body body = MixedBody();
  Collected c("gzip");
  for (char byte : body.bytes) ASSERT_TRUE(c.deframer.Feed(std::string_view(&byte, 1)).ok());
  EXPECT_TRUE(c.deframer.Finish().ok());
  EXPECT_EQ(c.messages, body.messages);
}

TEST(DeframerTest, AnySplitGivesTheSameMessages) {
  Body body = MixedBody();
  std::mt19937 random(2026);  // fixed: a failure replays
  for (int trial = 0; trial < 400; ++trial) {
    Collected c("gzip");
    std::string_view rest = body.bytes;
    while (!rest.empty()) {
      // Small pieces most of the time, so prefixes are split too.
      std::size_t size = 1 + random() % (trial % 2 == 0 ? 7 : 200);
      size = std::min(size, rest.size());
      ASSERT_TRUE(c.deframer.Feed(rest.substr(0, size)).ok()) << "trial " << trial;
      rest.remove_prefix(size);
    }
    ASSERT_TRUE(c.deframer.Finish().ok()) << "trial " << trial;
    ASSERT_EQ(c.messages, body.messages) << "trial " << trial;
  }
}

// What a Deframer made of `body` fed in the given pieces, or whole.
struct Outcome {
  Status status;
  std::vector<std::string> messages;
};
Outcome Deframe(std::string_view body, std::mt19937* split) {
  Collected c("gzip", 64);
  while (!body.empty()) {
    std::size_t size = split == nullptr ? body.size() : 1 + (*split)() % 9;
    size = std::min(size, body.size());
    (void)c.deframer.Feed(body.substr(0, size));
    body.remove_prefix(size);
  }
  return {c.deframer.Finish(), c.messages};
}

TEST(DeframerTest, AnySplitOfAMalformedBodyGivesTheSameOutcome) {
  std::mt19937 random(99);  // fixed: a failure replays
  std::set<Code> seen;
  for (int trial = 0; trial < 300; ++trial) {
    // Prefixes with flags 0-2 and lengths near the limit, around random
    // bytes and gzip members, so every error comes up.
    std::string body;
    for (int part = 1 + static_cast<int>(random() % 5); part > 0; --part) {
      switch (random() % 4) {
        case 0:
          body += Prefix(static_cast<unsigned char>(random() % 3),
                         static_cast<std::uint32_t>(random() % 80));
          break;
        case 1:
          body += std::string(random() % 40, static_cast<char>(random() & 0xFF));
          break;
        case 2:
          body += Frame(std::string(random() % 70, 'm'));
          break;
        default: {
          std::string coded = Gzip(std::string(random() % 100, 'g'));
          body += Prefix(1, static_cast<std::uint32_t>(coded.size())) + coded;
        }
      }
    }
    Outcome whole = Deframe(body, nullptr);
    Outcome split = Deframe(body, &random);
    ASSERT_EQ(split.status.code, whole.status.code) << "trial " << trial;
    ASSERT_EQ(split.status.message, whole.status.message) << "trial " << trial;
    ASSERT_EQ(split.messages, whole.messages) << "trial " << trial;
    seen.insert(whole.status.code);
  }
  // The bodies were malformed in each way, and sometimes not at all.
  EXPECT_EQ(seen, (std::set<Code>{Code::kOk, Code::kResourceExhausted, Code::kInternal}));
}

TEST(DeframerTest, AMessageAtTheLimitIsHandedOn) {
  Collected c("", 10);
  EXPECT_TRUE(c.deframer.Feed(Frame("0123456789")).ok());
  EXPECT_THAT(c.messages, ElementsAre("0123456789"));
}

TEST(DeframerTest, AMessageOneByteOverTheLimitIsResourceExhausted) {
  Collected c("", 10);
  Status status = c.deframer.Feed(Frame("0123456789A"));
  EXPECT_EQ(status.code, Code::kResourceExhausted);
  EXPECT_EQ(status.message, "the response message is 11 bytes, over the receive limit of 10 bytes");
  EXPECT_TRUE(c.messages.empty());
}

TEST(DeframerTest, AMessageOverTheLimitIsRefusedBeforeItIsBuffered) {
  Collected c;
  LargestAllocation allocation;
  // The prefix alone, announcing 4 GiB - 1: refused with no byte of the
  // message here, and nothing of its size reserved.
  Status status = c.deframer.Feed(Prefix(0, 0xFFFF'FFFF));
  EXPECT_EQ(status.code, Code::kResourceExhausted);
  EXPECT_EQ(status.message,
            "the response message is 4294967295 bytes, over the receive limit of 4194304 bytes");
  EXPECT_LT(allocation.bytes(), 4096u);
  EXPECT_TRUE(c.messages.empty());
}

TEST(DeframerTest, ACompressedMessageOverTheLimitIsRefusedFromItsPrefix) {
  Collected c("gzip", 10);
  Status status = c.deframer.Feed(Prefix(1, 11));
  EXPECT_EQ(status.code, Code::kResourceExhausted);
  EXPECT_EQ(status.message, "the response message is 11 bytes, over the receive limit of 10 bytes");
}

TEST(DeframerTest, AFlagOtherThanZeroOrOneIsInternal) {
  for (int flag : {2, 3, 0x80, 0xFF}) {
    Collected c("gzip");
    Status status =
        c.deframer.Feed(Frame("ok") + Prefix(static_cast<unsigned char>(flag), 1) + "x");
    EXPECT_EQ(status.code, Code::kInternal) << flag;
    EXPECT_EQ(status.message, "message 2 of the response has compressed flag " +
                                  std::to_string(flag) + ", not 0 or 1");
    EXPECT_THAT(c.messages, ElementsAre("ok"));
  }
}

TEST(DeframerTest, ACompressedMessageWithNoEncodingIsInternal) {
  Collected c("");
  Status status = c.deframer.Feed(Prefix(1, 1) + "x");
  EXPECT_EQ(status.code, Code::kInternal);
  EXPECT_EQ(status.message,
            "message 1 of the response is compressed, but the response's grpc-encoding is absent");
}

TEST(DeframerTest, ACompressedMessageUnderTheIdentityEncodingIsInternal) {
  Collected c("identity");
  Status status = c.deframer.Feed(Prefix(1, 1) + "x");
  EXPECT_EQ(status.code, Code::kInternal);
  EXPECT_THAT(status.message, HasSubstr("grpc-encoding is \"identity\""));
}

TEST(DeframerTest, ACompressedMessageUnderAnEncodingOtherThanGzipIsUnimplemented) {
  for (std::string encoding : {"deflate", "snappy", "br"}) {
    Collected c(encoding);
    Status status = c.deframer.Feed(Prefix(1, 1) + "x");
    EXPECT_EQ(status.code, Code::kUnimplemented) << encoding;
    EXPECT_EQ(status.message, "message 1 of the response is compressed with \"" + encoding +
                                  "\", which this client cannot decode (it takes gzip)");
  }
}

TEST(DeframerTest, UncompressedMessagesPassUnderAnyEncoding) {
  for (std::string encoding : {"", "identity", "gzip", "snappy"}) {
    Collected c(encoding);
    EXPECT_TRUE(c.deframer.Feed(Frame("plain")).ok()) << encoding;
    EXPECT_THAT(c.messages, ElementsAre("plain"));
  }
}

TEST(DeframerTest, AGzipMessageIsHandedOnInflated) {
  Collected c("gzip");
  EXPECT_TRUE(
      c.deframer.Feed(Prefix(1, static_cast<std::uint32_t>(kPythonGzip.size())) + kPythonGzip)
          .ok());
  EXPECT_THAT(c.messages, ElementsAre("hello, wire"));
}

// For a reader that decodes each message as it takes it (a stream's): a
// gzip-coded message is handed on as it came, flagged; a plain one as it is.
TEST(DeframerTest, LeftCompressedAGzipMessageIsHandedOnCoded) {
  std::string coded = Gzip(std::string(100000, 'a'));  // what would inflate a hundredfold
  Collected c("gzip", 1000);
  c.deframer.LeaveCompressed();
  EXPECT_TRUE(c.deframer
                  .Feed(Prefix(1, static_cast<std::uint32_t>(coded.size())) + coded + Prefix(0, 5) +
                        "plain")
                  .ok());
  EXPECT_THAT(c.messages, ElementsAre(coded, "plain"));
  EXPECT_THAT(c.compressed, ElementsAre(true, false));
}

TEST(DeframerTest, TheGzipEncodingNameIsTakenInAnyCase) {
  Collected c("GZIP");
  EXPECT_TRUE(
      c.deframer.Feed(Prefix(1, static_cast<std::uint32_t>(kPythonGzip.size())) + kPythonGzip)
          .ok());
  EXPECT_THAT(c.messages, ElementsAre("hello, wire"));
}

TEST(DeframerTest, GzipThatDoesNotInflateIsInternal) {
  Collected c("gzip");
  Status status = c.deframer.Feed(Prefix(1, 9) + "not gzip!");
  EXPECT_EQ(status.code, Code::kInternal);
  EXPECT_THAT(status.message, HasSubstr("gzip"));
  EXPECT_TRUE(c.messages.empty());
}

TEST(DeframerTest, AnEmptyCompressedMessageIsInternal) {
  Collected c("gzip");
  Status status = c.deframer.Feed(Prefix(1, 0));
  EXPECT_EQ(status.code, Code::kInternal);
  EXPECT_TRUE(c.messages.empty());
}

TEST(DeframerTest, AGzipMessageThatInflatesPastTheLimitIsResourceExhausted) {
  std::string coded = Gzip(std::string(1001, 'a'));
  ASSERT_LT(coded.size(), 1000u);  // the coded message itself is under the limit
  Collected c("gzip", 1000);
  Status status = c.deframer.Feed(Prefix(1, static_cast<std::uint32_t>(coded.size())) + coded);
  EXPECT_EQ(status.code, Code::kResourceExhausted);
  EXPECT_EQ(status.message,
            "the response message inflates to more than the receive limit of 1000 bytes");
  EXPECT_TRUE(c.messages.empty());
}

TEST(DeframerTest, AGzipMessageThatInflatesToExactlyTheLimitIsHandedOn) {
  std::string message(1000, 'a');
  std::string coded = Gzip(message);
  Collected c("gzip", 1000);
  EXPECT_TRUE(c.deframer.Feed(Prefix(1, static_cast<std::uint32_t>(coded.size())) + coded).ok());
  EXPECT_THAT(c.messages, ElementsAre(message));
}

TEST(DeframerTest, FinishInsideAMessageIsInternalNamingTheBytes) {
  Collected c;
  EXPECT_TRUE(c.deframer.Feed(Frame("whole") + Prefix(0, 10) + "abc").ok());
  Status status = c.deframer.Finish();
  EXPECT_EQ(status.code, Code::kInternal);
  EXPECT_EQ(status.message, "the response ended inside a message: 3 of 10 bytes");
  EXPECT_THAT(c.messages, ElementsAre("whole"));
}

TEST(DeframerTest, FinishInsideAPrefixIsInternal) {
  Collected c;
  EXPECT_TRUE(c.deframer.Feed(Prefix(0, 10).substr(0, 2)).ok());
  Status status = c.deframer.Finish();
  EXPECT_EQ(status.code, Code::kInternal);
  EXPECT_EQ(status.message, "the response ended inside a message's prefix: 2 of 5 bytes");
}

TEST(DeframerTest, AfterAnErrorItTakesNothingMore) {
  Collected c;
  Status first = c.deframer.Feed(Prefix(7, 1) + "x");
  ASSERT_EQ(first.code, Code::kInternal);
  Status again = c.deframer.Feed(Frame("later"));
  EXPECT_EQ(again.code, first.code);
  EXPECT_EQ(again.message, first.message);
  Status finished = c.deframer.Finish();
  EXPECT_EQ(finished.code, first.code);
  EXPECT_EQ(finished.message, first.message);
  EXPECT_EQ(c.deframer.status().message, first.message);
  EXPECT_TRUE(c.messages.empty());
}

TEST(DeframerTest, AnErrorMidPieceStopsTheMessagesAfterIt) {
  Collected c;
  Status status = c.deframer.Feed(Frame("first") + Prefix(9, 0) + Frame("never"));
  EXPECT_EQ(status.code, Code::kInternal);
  EXPECT_THAT(c.messages, ElementsAre("first"));
}

}  // namespace
}  // namespace outbound::rpc::internal
