// SPDX-License-Identifier: Apache-2.0
// Streamed response bodies (Request::StreamBodyTo), over HTTP/2 and
// HTTP/1.1, in fake time: the body of the call's 2xx answer reaches the
// sink as it arrives and without a size limit; every other answer is read
// whole and retried as without a sink; a body cut after the sink had some
// of it is the call's failure, never retried; a sink that says no more ends
// the call as cancelled, and the breaker counts nothing; the sink hears the
// body's end, and one that finds the body bad ends the call with its error.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "client_test_support.h"

namespace outbound::http {
namespace {

using std::chrono::milliseconds;
using testing::Reply;
using testing::ServerRequest;

// What a sink was given, safe to read from the test's thread while the
// client's loop thread writes it.
class Collected {
 public:
  BodySink Sink(std::size_t stop_after = SIZE_MAX) {
    return [this, stop_after](std::string_view chunk) {
      std::lock_guard lock(mu_);
      if (chunk.empty()) {
        ++ends_;
        ends_after_ = chunks_;
        return true;
      }
      text_.append(chunk);
      ++chunks_;
      return text_.size() < stop_after;
    };
  }
  // How often the sink was told the body ended (an empty chunk), and how
  // many pieces it had been given then.
  int ends() const {
    std::lock_guard lock(mu_);
    return ends_;
  }
  int chunks_before_end() const {
    std::lock_guard lock(mu_);
    return ends_after_;
  }
  std::string text() const {
    std::lock_guard lock(mu_);
    return text_;
  }
  int chunks() const {
    std::lock_guard lock(mu_);
    return chunks_;
  }
  // Waits until the sink holds `size` bytes or `call` has ended (a safety
  // net of 10 s real time, not a tolerance).
  template <typename Call>
  void WaitForSize(std::size_t size, const Call& call) const {
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (text().size() < size && std::chrono::steady_clock::now() < give_up &&
           call.wait_for(std::chrono::milliseconds(0)) == std::future_status::timeout) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

 private:
  mutable std::mutex mu_;
  std::string text_;
  int chunks_ = 0;
  int ends_ = 0;
  int ends_after_ = -1;
};

class StreamedBodyTest : public ClientTestBase, public ::testing::TestWithParam<Protocol> {};

// The first bytes reach the sink while the rest has not come: a caller
// streams what it has, where a buffered call would still hold nothing.
TEST_P(StreamedBodyTest, TheBodyReachesTheSinkAsItArrives) {
  Serve([](const ServerRequest&) { return Reply::Stall(5, "hello, world"); }, GetParam());
  auto client = MakeClient();
  Collected got;
  auto call = client->SendAsync(Request::Get("/feed").StreamBodyTo(got.Sink()));
  got.WaitForSize(5, call);
  EXPECT_EQ(got.text(), "hello");
  EXPECT_EQ(call.wait_for(milliseconds(0)), std::future_status::timeout) << "ended too soon";
  clock.Advance(std::chrono::seconds(10));  // the call's Timeout bounds the body
  auto result = call.get();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind(), ErrorKind::kDeadline) << result.error().message();
  EXPECT_EQ(server->request_count(), 1u);
}

// A streamed answer that classify calls a success is one: the retry loop
// says so (and the retry budget counts it), as for a buffered answer; only
// a retry is out of the question once the sink has part of the body.
TEST_P(StreamedBodyTest, AStreamedAnswerIsASuccessNotAStop) {
  Serve([](const ServerRequest&) { return Reply::Ok("the whole feed"); }, GetParam());
  auto client = MakeClient();
  Collected got;
  auto result = client->Send(Request::Get("/feed").StreamBodyTo(got.Sink()));
  ASSERT_TRUE(result) << result.error().message();
  EXPECT_EQ(got.text(), "the whole feed");
  std::vector<AttemptRecord> seen = Attempts();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].decision, retry::DecisionKind::kSuccess);
  EXPECT_EQ(seen[0].reason.kind, retry::ReasonKind::kSuccess);
}

// Settings::max_response_bytes bounds what the client holds; a streamed
// body is the sink's to hold, announced length or not.
TEST_P(StreamedBodyTest, A2xxBodyOverTheLimitStreamsWhole) {
  std::string big;
  for (int i = 0; big.size() < 300 * 1024; ++i) big += std::to_string(i) + ",";
  Serve(
      [&](const ServerRequest& r) {
        Reply reply = Reply::Ok(big);
        if (r.target == "/unannounced") reply.Unannounced();
        return reply;
      },
      GetParam());
  Settings settings = PaymentsSettings();
  settings.max_response_bytes = 1024;
  auto client = MakeClient(settings);
  for (const char* target : {"/announced", "/unannounced"}) {
    SCOPED_TRACE(target);
    Collected got;
    auto result = client->Send(Request::Get(target).StreamBodyTo(got.Sink()));
    ASSERT_TRUE(result) << result.error().message();
    EXPECT_EQ(result->status, 200);
    EXPECT_EQ(result->body, "");
    EXPECT_EQ(got.text(), big);
    EXPECT_GT(got.chunks(), 1);
    EXPECT_EQ(result->attempts, 1);
  }
  // Without a sink the same body is too large, as ever.
  auto buffered = client->Send(Request::Get("/announced"));
  ASSERT_FALSE(buffered);
  EXPECT_EQ(buffered.error().kind(), ErrorKind::kResponseTooLarge);
}

// A 503 is read whole into the answer the retry loop judges, and retried;
// only the 2xx answer that ends the call goes to the sink.
TEST_P(StreamedBodyTest, OnlyThe2xxAnswerStreamsAnyOtherIsReadWholeAndRetried) {
  std::atomic<int> seen{0};
  Serve(
      [&](const ServerRequest&) {
        return seen++ == 0 ? Reply::Status(503, "busy") : Reply::Ok("the data");
      },
      GetParam());
  auto client = MakeClient();
  Collected got;
  auto call = client->SendAsync(Request::Get("/data").StreamBodyTo(got.Sink()));
  AdvanceAfterAttempt(1, milliseconds(50));
  auto result = call.get();
  ASSERT_TRUE(result) << result.error().message();
  EXPECT_EQ(result->status, 200);
  EXPECT_EQ(result->attempts, 2);
  EXPECT_EQ(got.text(), "the data");
  EXPECT_EQ(result->body, "");
}

// The sink has part of the body: the answer cannot be taken back, so a cut
// fails the call, once, and the breaker counts it.
TEST_P(StreamedBodyTest, ABodyCutAfterTheSinkHadSomeFailsTheCallOnce) {
  Serve([](const ServerRequest&) { return Reply::ResetAfter(5, "hello, world"); }, GetParam());
  auto client = MakeClient(TripOnFirstFailure(PaymentsSettings()));
  Collected got;
  auto result = client->Send(Request::Get("/feed").StreamBodyTo(got.Sink()));
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind(), ErrorKind::kTransport) << result.error().message();
  EXPECT_EQ(result.error().attempts(), 1);
  EXPECT_EQ(got.text(), "hello");
  EXPECT_EQ(server->request_count(), 1u);
  EXPECT_EQ(Transitions().size(), 1u) << "the breaker counts the failure";
}

// A sink that says no more: the call ends cancelled, nothing more is read
// or retried, the breaker counts nothing, and the client goes on.
TEST_P(StreamedBodyTest, ASinkThatStopsEndsTheCallCancelledAndTheBreakerCountsNothing) {
  std::string big(200 * 1024, 'x');
  Serve([&](const ServerRequest&) { return Reply::Ok(big); }, GetParam());
  auto client = MakeClient(TripOnFirstFailure(PaymentsSettings()));
  Collected got;
  auto result = client->Send(Request::Get("/big").StreamBodyTo(got.Sink(/*stop_after=*/1)));
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind(), ErrorKind::kCancelled) << result.error().message();
  EXPECT_NE(result.error().message().find("stopped reading the body"), std::string::npos);
  EXPECT_EQ(result.error().attempts(), 1);
  EXPECT_EQ(got.chunks(), 1);
  EXPECT_LT(got.text().size(), big.size());
  EXPECT_TRUE(Transitions().empty());

  auto next = client->Send(Request::Get("/again"));
  ASSERT_TRUE(next) << next.error().message();
  EXPECT_EQ(next->body, big);
  EXPECT_EQ(server->request_count(), 2u);
}

// A sink that cancels its own call hears nothing after the cancel, though
// more of the body has arrived in the same read: the call ends cancelled,
// and the breaker counts nothing.
TEST_P(StreamedBodyTest, ASinkThatCancelsItsCallHearsNothingMore) {
  std::string big(200 * 1024, 'x');
  Serve([&](const ServerRequest&) { return Reply::Ok(big); }, GetParam());
  auto client = MakeClient(TripOnFirstFailure(PaymentsSettings()));
  CancelSource cancel;
  Context context;
  context.cancel = cancel.token();
  int pieces = 0;
  auto result =
      client->Send(Request::Get("/big").WithContext(context).StreamBodyTo([&](std::string_view) {
        ++pieces;
        cancel.Cancel();
        return true;
      }));
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind(), ErrorKind::kCancelled) << result.error().message();
  EXPECT_EQ(pieces, 1);
  EXPECT_TRUE(Transitions().empty());
}

// A sink that throws ends the call as one that stopped reading (nothing
// retried, the breaker counts nothing), and its exception reaches the
// caller: Send rethrows it. It never unwinds through the transport, and
// the client goes on.
TEST_P(StreamedBodyTest, ASinkThatThrowsEndsTheCallAndItsExceptionReachesTheCaller) {
  std::string big(200 * 1024, 'x');
  Serve([&](const ServerRequest&) { return Reply::Ok(big); }, GetParam());
  auto client = MakeClient(TripOnFirstFailure(PaymentsSettings()));
  int pieces = 0;
  auto throwing = [&](std::string_view) -> Result<bool> {
    if (++pieces == 2) throw std::runtime_error("the disk is full");
    return true;
  };
  try {
    auto result = client->Send(Request::Get("/big").StreamBodyTo(throwing));
    ADD_FAILURE() << "Send returned instead of rethrowing";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "the disk is full");
  }
  EXPECT_EQ(pieces, 2) << "the sink was called again after it threw";
  EXPECT_EQ(server->request_count(), 1u);
  EXPECT_TRUE(Transitions().empty());

  auto head_throws = client->SendAsync(
      Request::Get("/head")
          .StreamBodyTo([](std::string_view) { return true; })
          .OnBodyHead([](const Response&) -> Result<void> { throw std::logic_error("no head"); }));
  EXPECT_THROW((void)head_throws.get(), std::logic_error);
  EXPECT_EQ(server->request_count(), 2u);

  auto next = client->Send(Request::Get("/again"));
  ASSERT_TRUE(next) << next.error().message();
  EXPECT_EQ(next->body, big);
}

// A classify that asks to retry a streamed 2xx is overruled: the caller
// has the body already.
TEST_P(StreamedBodyTest, AStreamedAnswerIsFinalWhateverClassifySays) {
  Serve([](const ServerRequest&) { return Reply::Ok("once"); }, GetParam());
  Settings settings = PaymentsSettings();
  settings.classify = [](const Result<Response>&) {
    return Classification{retry::Outcome::kRetry, {}, circuit::Outcome::kSuccess};
  };
  auto client = MakeClient(settings);
  Collected got;
  auto result = client->Send(Request::Get("/once").StreamBodyTo(got.Sink()));
  ASSERT_TRUE(result) << result.error().message();
  EXPECT_EQ(result->attempts, 1);
  EXPECT_EQ(got.text(), "once");
  EXPECT_EQ(server->request_count(), 1u);
}

// WithBodyTimeout: the call's Timeout (5 s) bounds the answer, the body
// has its own 60 s. The server trickles 20 bytes, one a second of the
// test's clock: the body outlives the call's deadline and arrives whole.
TEST_P(StreamedBodyTest, ABodyTimeoutLetsTheBodyOutliveTheCallsDeadline) {
  const std::string body = "twenty bytes of body";
  Serve([&](const ServerRequest&) { return Reply::Trickle(body, 1, std::chrono::seconds(1)); },
        GetParam());
  auto client = MakeClient();
  Collected got;
  auto call = client->SendAsync(Request::Get("/feed")
                                    .WithTimeout(std::chrono::seconds(5))
                                    .StreamBodyTo(got.Sink())
                                    .WithBodyTimeout(std::chrono::seconds(60)));
  // The first byte comes at once, each next one a second later.
  for (std::size_t byte = 1; byte <= body.size(); ++byte) {
    if (byte > 1) {
      ASSERT_TRUE(clock.WaitForTimerBy(clock.Now() + std::chrono::seconds(1)));
      clock.Advance(std::chrono::seconds(1));
    }
    got.WaitForSize(byte, call);
    ASSERT_EQ(got.text(), body.substr(0, byte)) << "at second " << byte;
  }
  auto result = call.get();
  ASSERT_TRUE(result) << result.error().message();
  EXPECT_EQ(result->attempts, 1);
  EXPECT_EQ(got.text(), body);
}

// The body's own bound ends a body that stalls, counted from its headers,
// with a message that names it; the call's longer Timeout does not matter.
TEST_P(StreamedBodyTest, ABodyTimeoutEndsAStalledBodyAtItsOwnTime) {
  Serve([](const ServerRequest&) { return Reply::Stall(5, "hello, world"); }, GetParam());
  auto client = MakeClient();
  Collected got;
  auto call = client->SendAsync(Request::Get("/feed")
                                    .WithTimeout(std::chrono::seconds(10))
                                    .StreamBodyTo(got.Sink())
                                    .WithBodyTimeout(std::chrono::seconds(3)));
  ASSERT_TRUE(clock.WaitForTimerBy(clock.Now() + std::chrono::seconds(3)));
  got.WaitForSize(5, call);
  ASSERT_EQ(got.text(), "hello");
  clock.Advance(std::chrono::milliseconds(2999));
  EXPECT_EQ(call.wait_for(milliseconds(0)), std::future_status::timeout) << "ended too soon";
  clock.Advance(std::chrono::milliseconds(1));
  auto result = call.get();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind(), ErrorKind::kDeadline);
  EXPECT_NE(result.error().message().find("body timeout (3000ms)"), std::string::npos)
      << result.error().message();
}

// Until the headers come, the call's deadline is the bound, body timeout
// or not; and a body timeout needs a streamed body.
TEST_P(StreamedBodyTest, ABodyTimeoutLeavesTheWaitForTheAnswerToTheCallsDeadline) {
  Serve([](const ServerRequest&) { return Reply::Hang(); }, GetParam());
  auto client = MakeClient();
  Collected got;
  auto call = client->SendAsync(Request::Get("/feed")
                                    .WithTimeout(std::chrono::seconds(1))
                                    .StreamBodyTo(got.Sink())
                                    .WithBodyTimeout(std::chrono::seconds(60)));
  ASSERT_TRUE(server->WaitForRequests(1));
  clock.Advance(std::chrono::seconds(1));
  auto result = call.get();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind(), ErrorKind::kDeadline) << result.error().message();

  auto unstreamed = client->Send(Request::Get("/feed").WithBodyTimeout(std::chrono::seconds(60)));
  ASSERT_FALSE(unstreamed);
  EXPECT_EQ(unstreamed.error().kind(), ErrorKind::kInvalidRequest);
}

// The sink hears the end of a body that came whole, once, after its last
// piece: a parser can tell a body that stopped inside a record. An empty
// body gives the sink nothing, end included.
TEST_P(StreamedBodyTest, TheSinkHearsTheBodysEndOnceAfterItsLastPiece) {
  std::string big(100 * 1024, 'y');
  Serve(
      [&](const ServerRequest& r) {
        if (r.target == "/cut") return Reply::ResetAfter(5, "hello, world");
        return Reply::Ok(r.target == "/empty" ? "" : big);
      },
      GetParam());
  auto client = MakeClient();
  for (const char* target : {"/big", "/empty"}) {
    SCOPED_TRACE(target);
    Collected got;
    auto result = client->Send(Request::Get(target).StreamBodyTo(got.Sink()));
    ASSERT_TRUE(result) << result.error().message();
    bool empty = std::string(target) == "/empty";
    EXPECT_EQ(got.ends(), empty ? 0 : 1);
    if (!empty) {
      EXPECT_EQ(got.chunks_before_end(), got.chunks()) << "the end came before a piece";
    }
    EXPECT_EQ(got.text(), empty ? "" : big);
  }
  // A body cut short is not an end.
  Collected cut;
  auto result = client->Send(Request::Get("/cut").StreamBodyTo(cut.Sink()));
  ASSERT_FALSE(result);
  EXPECT_EQ(cut.ends(), 0);
}

// A sink that finds the body bad ends the call with its error: one
// attempt, whatever classify says, a failure to the breaker, the error as
// the sink gave it.
TEST_P(StreamedBodyTest, ASinkThatFindsTheBodyBadEndsTheCallWithItsError) {
  Serve([](const ServerRequest&) { return Reply::Ok("{not json"); }, GetParam());
  Settings settings = TripOnFirstFailure(PaymentsSettings());
  settings.classify = [](const Result<Response>&) {
    return Classification{retry::Outcome::kRetry, {}, circuit::Outcome::kFailure};
  };
  auto client = MakeClient(settings);
  auto result = client->Send(
      Request::Get("/records").StreamBodyTo([](std::string_view chunk) -> Result<bool> {
        if (chunk.starts_with('{') && chunk.find('}') == std::string_view::npos) {
          return Fail(ErrorKind::kInvalidResponse, "record 1 does not parse");
        }
        return true;
      }));
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind(), ErrorKind::kInvalidResponse) << result.error().message();
  EXPECT_EQ(result.error().message(), "payments:8443: record 1 does not parse");
  EXPECT_EQ(result.error().attempts(), 1);
  EXPECT_EQ(server->request_count(), 1u);
  EXPECT_EQ(Transitions().size(), 1u) << "the breaker counts the failure";
}

// The same at the body's end: a body that stopped inside a record.
TEST_P(StreamedBodyTest, ASinkThatFindsTheBodyCutShortAtItsEndEndsTheCallWithItsError) {
  Serve([](const ServerRequest&) { return Reply::Ok("line 1\nline 2 with no end"); }, GetParam());
  auto client = MakeClient(TripOnFirstFailure(PaymentsSettings()));
  std::string pending;
  auto result =
      client->Send(Request::Get("/lines").StreamBodyTo([&](std::string_view chunk) -> Result<bool> {
        if (chunk.empty() && !pending.empty()) {
          return Fail(ErrorKind::kInvalidResponse, "the body ended inside a line");
        }
        pending.append(chunk);
        pending.erase(0, pending.rfind('\n') == std::string::npos ? 0 : pending.rfind('\n') + 1);
        return true;
      }));
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind(), ErrorKind::kInvalidResponse) << result.error().message();
  EXPECT_EQ(result.error().message(), "payments:8443: the body ended inside a line");
  EXPECT_EQ(result.error().attempts(), 1);
  EXPECT_EQ(Transitions().size(), 1u) << "the breaker counts the failure";
}

// A sink's error of a kind that is the caller's own limit (a record over
// what it keeps): the call ends with it and the breaker counts nothing.
TEST_P(StreamedBodyTest, ASinkErrorThatIsTheCallersOwnLimitIsNotTheDependencysFailure) {
  Serve([](const ServerRequest&) { return Reply::Ok(std::string(4096, 'z')); }, GetParam());
  auto client = MakeClient(TripOnFirstFailure(PaymentsSettings()));
  auto result =
      client->Send(Request::Get("/big").StreamBodyTo([](std::string_view) -> Result<bool> {
        return Fail(ErrorKind::kResponseTooLarge, "a record over 1 KiB");
      }));
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind(), ErrorKind::kResponseTooLarge);
  EXPECT_EQ(result.error().attempts(), 1);
  EXPECT_TRUE(Transitions().empty());
  EXPECT_TRUE(client->Send(Request::Get("/again")));
}

// The head of the answer that streams reaches OnBodyHead once, before the
// sink has any of its body; the 503 read whole before it never does.
TEST_P(StreamedBodyTest, TheHeadOfTheAnswerThatStreamsIsHeardOnceBeforeItsBody) {
  std::atomic<int> seen{0};
  Serve(
      [&](const ServerRequest&) {
        return seen++ == 0 ? Reply::Status(503, "busy")
                           : Reply::Ok("a,b\n1,2\n").Header("Content-Type", "text/csv");
      },
      GetParam());
  auto client = MakeClient();
  Collected got;
  std::vector<std::string> heads;  // what each head said, and when
  auto call = client->SendAsync(
      Request::Get("/export")
          .StreamBodyTo(got.Sink())
          .OnBodyHead([&](const Response& head) -> Result<void> {
            heads.push_back(std::to_string(head.status) + " " +
                            std::string(head.headers.Find("content-type")) + " body=" + head.body +
                            " after " + std::to_string(got.chunks()) + " pieces");
            return {};
          }));
  AdvanceAfterAttempt(1, milliseconds(50));
  auto result = call.get();
  ASSERT_TRUE(result) << result.error().message();
  EXPECT_EQ(result->attempts, 2);
  EXPECT_EQ(got.text(), "a,b\n1,2\n");
  EXPECT_EQ(heads, std::vector<std::string>{"200 text/csv body= after 0 pieces"});
}

// A head the caller refuses ends the call with its error: final (the 2xx
// is the dependency's answer), a failure to the breaker, and the sink
// hears nothing of the body.
TEST_P(StreamedBodyTest, AHeadTheCallerRefusesEndsTheCallWithItsErrorOnce) {
  Serve(
      [](const ServerRequest&) { return Reply::Ok("<html>").Header("Content-Type", "text/html"); },
      GetParam());
  auto client = MakeClient(TripOnFirstFailure(PaymentsSettings()));
  Collected got;
  auto result = client->Send(
      Request::Get("/export").StreamBodyTo(got.Sink()).OnBodyHead([](const Response& head) {
        return Fail(
            ErrorKind::kInvalidResponse,
            "the export is " + std::string(head.headers.Find("content-type")) + ", not CSV");
      }));
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind(), ErrorKind::kInvalidResponse);
  EXPECT_EQ(result.error().message(), "payments:8443: the export is text/html, not CSV");
  EXPECT_EQ(result.error().attempts(), 1);
  EXPECT_EQ(server->request_count(), 1u);
  EXPECT_EQ(got.chunks(), 0);
  EXPECT_EQ(Transitions().size(), 1u) << "the breaker counts the failure";
}

// An answer with no body gives the sink nothing, and OnBodyHead nothing:
// the head is the call's Response.
TEST_P(StreamedBodyTest, AnEmptyBodyIsNotHeardAsAHead) {
  Serve([](const ServerRequest&) { return Reply::Ok("").Header("X-Count", "0"); }, GetParam());
  auto client = MakeClient();
  int heads = 0;
  auto result = client->Send(Request::Get("/none")
                                 .StreamBodyTo([](std::string_view) { return true; })
                                 .OnBodyHead([&](const Response&) -> Result<void> {
                                   ++heads;
                                   return {};
                                 }));
  ASSERT_TRUE(result) << result.error().message();
  EXPECT_EQ(result->headers.Find("x-count"), "0");
  EXPECT_EQ(heads, 0);
}

// OnBodyHead hears a streamed body's head: without StreamBodyTo it is the
// caller's mistake, refused before anything is sent.
TEST_P(StreamedBodyTest, OnBodyHeadWithoutASinkIsRefused) {
  Serve([](const ServerRequest&) { return Reply::Ok("x"); }, GetParam());
  auto client = MakeClient();
  auto result = client->Send(
      Request::Get("/x").OnBodyHead([](const Response&) -> Result<void> { return {}; }));
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind(), ErrorKind::kInvalidRequest);
  EXPECT_NE(result.error().message().find("OnBodyHead"), std::string::npos)
      << result.error().message();
  EXPECT_EQ(server->request_count(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Protocols, StreamedBodyTest,
                         ::testing::Values(Protocol::kHttp2, Protocol::kHttp11), ProtocolName);

}  // namespace
}  // namespace outbound::http
