// SPDX-License-Identifier: Apache-2.0
// Fault matrix: the gRPC client (rpc::Client) against the same fake
// payments:8443 over TLS (h2 by ALPN) as the HTTP rows, answered by the
// kit's FakeGrpc answers, its raw HTTP/2 frames and its scripted resets.
// Each row asserts the status code the call ends with (gRPC's
// doc/PROTOCOL-HTTP2.md and doc/http-grpc-status-mapping.md say which),
// the attempts it made and the calls the server received, what the breaker
// counted, when it ended on the ManualClock (no row hangs: a broken one
// ends at the safety net), and, where the connection is still good, that
// the next call on the same client is answered.
//
// These rows live beside the HTTP rows (not in tests/rpc) so that they are
// the same matrix: one fixture, the `fault_matrix` label, open_rows.txt and
// the leak check; they are built only with the gRPC client
// (OUTBOUND_BUILD_RPC).
#include <atomic>
#include <cstdint>
#include <future>
#include <mutex>
#include <set>
#include <string_view>

#include "matrix_support.h"
#include "outbound/rpc/client.h"
#include "outbound/testing/fake_grpc.h"

namespace outbound::rpc::matrix {
namespace {

namespace h2 = testing::h2;
using http::matrix::kAnswerBound;
using http::matrix::kFloodUnderWay;
using http::matrix::kSafetyNet;
using testing::FakeServer;
using testing::GrpcReply;
using testing::ServerRequest;
using namespace std::chrono_literals;

constexpr char kMethod[] = "/payments.v1.Charges/Charge";

// `message` length-prefixed as gRPC frames it (flag 0).
std::string Framed(const std::string& message) {
  std::string out(5, '\0');
  auto size = static_cast<std::uint32_t>(message.size());
  for (int i = 0; i < 4; ++i)
    out[static_cast<std::size_t>(4 - i)] = static_cast<char>(size >> (8 * i));
  return out + message;
}

// How a row's call must end.
struct Want {
  Code code = Code::kOk;
  int attempts = 1;    // Reply::attempts
  int server_saw = 1;  // calls the server received
  int breaker_failures = 0;
  Duration took{0};          // on the client's clock, from the call's start
  bool next_call_ok = true;  // the next call on the client is answered OK
};

class GrpcMatrix : public http::matrix::MatrixTest {
 protected:
  void TearDown() override {
    grpc.reset();
    MatrixTest::TearDown();
  }

  // The client of payments:8443 over TLS trusting only the test's CA; the
  // breaker stays open for an hour of the clock once it opens.
  Settings GrpcSettings() {
    Settings s = DefaultSettings();
    s.addr = "payments:8443";
    s.tls = TlsSettings{.root_pem = ca.pem()};
    s.breaker.open_for = std::chrono::hours(1);
    return s;
  }

  void StartGrpc(Settings settings) {
    auto made = Client::Create(runtime, std::move(settings));
    ASSERT_TRUE(made) << made.error().message();
    grpc = std::move(*made);
  }

  // Serves `first` for the first `times` calls, then an OK answer ("ok")
  // to every other, and starts the client. With `warm_up`, one call is
  // answered OK first (a row's transparent retries are earned by answers:
  // the core's TransparentRetries), before the row's own.
  void ServeThenOk(testing::Reply first, int times = 1, Settings settings = {},
                   bool warm_up = false) {
    auto calls = std::make_shared<std::atomic<int>>(warm_up ? -1 : 0);
    Serve([first, times, calls](const ServerRequest&) -> testing::Reply {
      int n = ++*calls;
      return n >= 1 && n <= times ? first : GrpcReply::Ok("ok").ToReply();
    });
    StartGrpc(settings.addr.empty() ? GrpcSettings() : std::move(settings));
    if (warm_up) {
      Reply warm = grpc->Call(kMethod, "warm");
      ASSERT_TRUE(warm.status.ok()) << warm.status.message;
    }
  }

  // Starts a call; its clock time is the row's zero.
  void Begin(const std::string& method = kMethod, const Context& context = {}) {
    start_ = clock.Now();
    server_before_ = static_cast<int>(server->request_count());
    call_ = grpc->CallAsync(method, "charge", context);
  }

  // Starts a server stream (on a thread of its own: ServerStream blocks)
  // and counts its messages; its clock time is the row's zero.
  void BeginServerStream() {
    start_ = clock.Now();
    server_before_ = static_cast<int>(server->request_count());
    call_ = std::async(std::launch::async, [this] {
      return grpc->ServerStream(kMethod, "charge", [this](std::string_view) { ++streamed_; });
    });
  }

  bool CallDone() { return call_.wait_for(0s) == std::future_status::ready; }

  // Waits for the client to set a timer due by Now() + d, then moves the
  // clock by `d`; returns early if the call has ended instead.
  void WaitThenAdvance(Duration d) {
    TimePoint by = clock.Now() + d;
    auto give_up = std::chrono::steady_clock::now() + kSafetyNet;
    while (!clock.WaitForTimerBy(by, 2ms)) {
      if (CallDone()) return;
      if (std::chrono::steady_clock::now() > give_up) {
        ADD_FAILURE() << "the client never began a wait of " << ToMs(d) << " ms";
        return;
      }
    }
    clock.Advance(d);
  }

  // Waits for the call to end; a call still going at the safety net has
  // failed the row, and the clock is pushed an hour on to end it.
  Reply End() {
    if (call_.wait_for(kSafetyNet) != std::future_status::ready) {
      ADD_FAILURE() << "the call did not end; moving the clock on by an hour to end it";
      clock.Advance(std::chrono::hours(1));
      if (call_.wait_for(kSafetyNet * 6) != std::future_status::ready) {
        ADD_FAILURE() << "the call did not end even then";
        std::abort();  // a hung client cannot be torn down
      }
    }
    took_ = clock.Now() - start_;
    return call_.get();
  }

  Reply ExpectEnds(const Want& want) {
    Reply reply = End();
    EXPECT_EQ(CodeName(reply.status.code), CodeName(want.code)) << reply.status.message;
    EXPECT_EQ(reply.attempts, want.attempts) << "Reply::attempts";
    EXPECT_EQ(static_cast<int>(server->request_count()) - server_before_, want.server_saw)
        << "calls the server received";
    EXPECT_EQ(grpc->breaker().counts(clock.Now()).failures, want.breaker_failures)
        << "failures the breaker counted";
    EXPECT_EQ(ToMs(took_), ToMs(want.took)) << "ms on the client's clock from start to end";
    if (want.next_call_ok) ExpectNextCallOk();
    return reply;
  }

  // The client, on whatever connection it keeps, is answered again.
  void ExpectNextCallOk() {
    auto next = grpc->CallAsync(kMethod, "again");
    ASSERT_EQ(next.wait_for(kSafetyNet), std::future_status::ready)
        << "the next call hung: the client kept a connection that no longer answers";
    Reply reply = next.get();
    EXPECT_TRUE(reply.status.ok())
        << "the next call: " << CodeName(reply.status.code) << ": " << reply.status.message;
    EXPECT_EQ(reply.body, "ok");
  }

  std::unique_ptr<Client> grpc;
  std::atomic<int> streamed_{0};  // messages a server stream handed on

 private:
  TimePoint start_;
  int server_before_ = 0;  // calls the server had received when the row's began
  Duration took_{0};
  std::future<Reply> call_;
};

// --- Answers without a status, or with a broken one ---

// DATA, then END_STREAM on it, and no grpc-status anywhere: INTERNAL at
// once (not a wait for trailers that never come), not retried (INTERNAL
// is not a code to retry), one failure; the connection is fine.
TEST_F(GrpcMatrix, AMessageEndingTheStreamWithoutTrailersIsInternal) {
  ServeThenOk(GrpcReply::MissingStatus({"half an answer"}));
  Begin();
  ExpectEnds({.code = Code::kInternal, .breaker_failures = 1});
}

TEST_F(GrpcMatrix, AnEmptyAnswerWithoutTrailersIsInternal) {
  ServeThenOk(GrpcReply::MissingStatus({}));
  Begin();
  ExpectEnds({.code = Code::kInternal, .breaker_failures = 1});
}

// A HEADERS frame with END_STREAM, status 200 and gRPC's content-type but
// no grpc-status: a Trailers-Only answer without its status.
TEST_F(GrpcMatrix, HeadersOnlyWithoutGrpcStatusIsInternal) {
  ServeThenOk(testing::Reply::Ok().Header("content-type", "application/grpc").HeadersOnly());
  Begin();
  ExpectEnds({.code = Code::kInternal, .breaker_failures = 1});
}

// A grpc-status that is not a number.
TEST_F(GrpcMatrix, AGarbledGrpcStatusIsUnknown) {
  ServeThenOk(testing::Reply::Ok(Framed("m"))
                  .Header("content-type", "application/grpc")
                  .Trailer("grpc-status", "fine"));
  Begin();
  ExpectEnds({.code = Code::kUnknown, .breaker_failures = 1});
}

// --- Bad length prefixes ---

TEST_F(GrpcMatrix, ACompressedFlagWithoutGrpcEncodingIsInternal) {
  ServeThenOk(GrpcReply::BadPrefix(GrpcReply::BadFlag::kCompressedWithoutEncoding));
  Begin();
  ExpectEnds({.code = Code::kInternal, .breaker_failures = 1});
}

TEST_F(GrpcMatrix, AFlagNoEncodingDefinesIsInternal) {
  ServeThenOk(GrpcReply::BadPrefix(GrpcReply::BadFlag::kTwo));
  Begin();
  ExpectEnds({.code = Code::kInternal, .breaker_failures = 1});
}

// A prefix announcing 100 bytes, 3 sent, then status OK in trailers: the
// message was cut short, whatever the status says.
TEST_F(GrpcMatrix, APrefixAnnouncingMoreThanTheStreamHoldsIsInternal) {
  std::string cut = Framed(std::string(100, 'x')).substr(0, 8);
  ServeThenOk(testing::Reply::Ok(cut)
                  .Header("content-type", "application/grpc")
                  .Trailer("grpc-status", "0"));
  Begin();
  ExpectEnds({.code = Code::kInternal, .breaker_failures = 1});
}

// A unary answer must hold exactly one message: status OK with none, or
// with two, is INTERNAL to the caller and a failure to the breaker.
TEST_F(GrpcMatrix, AUnaryAnswerOfStatusOkWithNoMessageIsInternal) {
  ServeThenOk(GrpcReply::Status(Code::kOk));
  Begin();
  ExpectEnds({.code = Code::kInternal, .breaker_failures = 1});
}

TEST_F(GrpcMatrix, AUnaryAnswerOfStatusOkWithTwoMessagesIsInternal) {
  ServeThenOk(GrpcReply::Messages({"one", "two"}));
  Begin();
  ExpectEnds({.code = Code::kInternal, .breaker_failures = 1});
}

// Three bytes of a five-byte prefix, then status OK.
TEST_F(GrpcMatrix, APrefixCutShortIsInternal) {
  ServeThenOk(testing::Reply::Ok(std::string("\0\0\0", 3))
                  .Header("content-type", "application/grpc")
                  .Trailer("grpc-status", "0"));
  Begin();
  ExpectEnds({.code = Code::kInternal, .breaker_failures = 1});
}

// A message over Settings::max_receive_message_bytes: RESOURCE_EXHAUSTED,
// not retried, and not counted (the caller's own limit says nothing of the
// dependency's health, as for an HTTP answer over max_response_bytes).
TEST_F(GrpcMatrix, AMessageOverTheReceiveLimitIsResourceExhausted) {
  Settings settings = GrpcSettings();
  settings.max_receive_message_bytes = 1024;
  ServeThenOk(GrpcReply::Oversized(1025), 1, settings);
  Begin();
  ExpectEnds({.code = Code::kResourceExhausted});
}

// --- The same framing faults in a server stream's answer ---
// Its messages go to the caller as they come, so the stream's own check
// decides as the body arrives; the core hears the failure the caller
// hears (DeframingSink): the breaker counts it, the call is not retried.

TEST_F(GrpcMatrix, AServerStreamsCompressedFlagWithoutGrpcEncodingIsInternalAndCounted) {
  ServeThenOk(GrpcReply::BadPrefix(GrpcReply::BadFlag::kCompressedWithoutEncoding));
  BeginServerStream();
  ExpectEnds({.code = Code::kInternal, .breaker_failures = 1});
  EXPECT_EQ(streamed_.load(), 0);
}

// Messages before the fault reach the caller; the stream is final then.
TEST_F(GrpcMatrix, AServerStreamCutInsideItsThirdMessageUnderStatusOkIsInternalAndCounted) {
  std::string body = Framed("one") + Framed("two") + Framed(std::string(100, 'x')).substr(0, 8);
  ServeThenOk(testing::Reply::Ok(body)
                  .Header("content-type", "application/grpc")
                  .Trailer("grpc-status", "0"));
  BeginServerStream();
  Reply reply = ExpectEnds({.code = Code::kInternal, .breaker_failures = 1});
  EXPECT_EQ(streamed_.load(), 2);
  EXPECT_NE(reply.status.message.find("ended inside a message"), std::string::npos)
      << reply.status.message;
}

// The caller's own limit: RESOURCE_EXHAUSTED, and the breaker counts
// nothing, as for a unary answer.
TEST_F(GrpcMatrix, AServerStreamsMessageOverTheReceiveLimitIsResourceExhaustedNotCounted) {
  Settings settings = GrpcSettings();
  settings.max_receive_message_bytes = 1024;
  ServeThenOk(GrpcReply::Oversized(1025), 1, settings);
  BeginServerStream();
  ExpectEnds({.code = Code::kResourceExhausted});
}

// A prefix announcing 4 GiB - 1 bytes, then status OK with nothing after
// it: the caller hears RESOURCE_EXHAUSTED (refused from the prefix, not
// waited for), and the breaker a failure: the stream ended inside the
// message it announced, which no limit explains.
TEST_F(GrpcMatrix, APrefixAnnouncingFourGibibytesIsRefusedAtOnce) {
  ServeThenOk(testing::Reply::Ok(std::string("\0\xff\xff\xff\xff", 5))
                  .Header("content-type", "application/grpc")
                  .Trailer("grpc-status", "0"));
  Begin();
  ExpectEnds({.code = Code::kResourceExhausted, .breaker_failures = 1});
}

// --- HTTP statuses other than 200 (doc/http-grpc-status-mapping.md) ---

struct HttpStatusRow {
  int http_status;
  Code code;
};

class HttpStatusMatrix : public GrpcMatrix, public ::testing::WithParamInterface<HttpStatusRow> {};

// UNAVAILABLE (429, 502, 503, 504) is retried, after backoffs of 50 ms and
// 100 ms with this jitter, three failures; INTERNAL and UNKNOWN are
// failures not retried; the rest are the caller's business (Success).
TEST_P(HttpStatusMatrix, IsMappedAsGrpcSays) {
  HttpStatusRow row = GetParam();
  bool unavailable = row.code == Code::kUnavailable;
  ServeThenOk(GrpcReply::HttpStatus(row.http_status, "from a proxy"), unavailable ? 3 : 1);
  Begin();
  if (unavailable) {
    WaitThenAdvance(50ms);
    WaitThenAdvance(100ms);
  }
  bool failure = unavailable || row.code == Code::kInternal || row.code == Code::kUnknown;
  ExpectEnds({.code = row.code,
              .attempts = unavailable ? 3 : 1,
              .server_saw = unavailable ? 3 : 1,
              .breaker_failures = failure ? (unavailable ? 3 : 1) : 0,
              .took = unavailable ? 150ms : 0ms});
}

std::string HttpStatusName(const ::testing::TestParamInfo<HttpStatusRow>& param) {
  return "Http" + std::to_string(param.param.http_status);
}

INSTANTIATE_TEST_SUITE_P(Statuses, HttpStatusMatrix,
                         ::testing::Values(HttpStatusRow{400, Code::kInternal},
                                           HttpStatusRow{401, Code::kUnauthenticated},
                                           HttpStatusRow{403, Code::kPermissionDenied},
                                           HttpStatusRow{404, Code::kUnimplemented},
                                           HttpStatusRow{429, Code::kUnavailable},
                                           HttpStatusRow{431, Code::kInternal},
                                           HttpStatusRow{500, Code::kUnknown},
                                           HttpStatusRow{502, Code::kUnavailable},
                                           HttpStatusRow{503, Code::kUnavailable},
                                           HttpStatusRow{504, Code::kUnavailable}),
                         HttpStatusName);

// A grpc-status is the status whatever HTTP status comes with it: the
// mapping above is only for answers without one. nginx's gRPC error page
// (its documentation's) answers 204 with grpc-status 14, UNAVAILABLE,
// which is retried; a 503 saying RESOURCE_EXHAUSTED is a failure, not
// retried.
TEST_F(GrpcMatrix, AGrpcStatusUnderAnotherHttpStatusIsTheStatus) {
  ServeThenOk(
      testing::Reply::Status(204).Header("grpc-status", "14").Header("grpc-message", "unavailable"),
      3);
  Begin();
  WaitThenAdvance(50ms);
  WaitThenAdvance(100ms);
  ExpectEnds({.code = Code::kUnavailable,
              .attempts = 3,
              .server_saw = 3,
              .breaker_failures = 3,
              .took = 150ms});
}

TEST_F(GrpcMatrix, A503SayingResourceExhaustedIsResourceExhausted) {
  ServeThenOk(testing::Reply::Status(503).Header("grpc-status", "8"));
  Begin();
  ExpectEnds({.code = Code::kResourceExhausted, .breaker_failures = 1});
}

// A 200 whose content-type is not gRPC's (an HTML error page).
TEST_F(GrpcMatrix, AContentTypeOtherThanGrpcIsUnknown) {
  ServeThenOk(testing::Reply::Ok("<html>oops</html>").Header("content-type", "text/html"));
  Begin();
  ExpectEnds({.code = Code::kUnknown, .breaker_failures = 1});
}

// A page that is not gRPC's holds no message: larger than the receive
// limit, it is still told by its status (a proxy's 502 is UNAVAILABLE,
// retried; an HTML 200 UNKNOWN), on a unary call and a server stream, not
// RESOURCE_EXHAUSTED. Its body is read and dropped.
TEST_F(GrpcMatrix, AProxysErrorPageOverTheReceiveLimitIsItsStatus) {
  Settings settings = GrpcSettings();
  settings.max_receive_message_bytes = 1024;
  std::string page = "<html>" + std::string(4096, ' ') + "bad gateway</html>";
  ServeThenOk(testing::Reply::Status(502, page).Header("content-type", "text/html"), 3, settings);
  Begin();
  WaitThenAdvance(50ms);
  WaitThenAdvance(100ms);
  Reply reply = ExpectEnds({.code = Code::kUnavailable,
                            .attempts = 3,
                            .server_saw = 3,
                            .breaker_failures = 3,
                            .took = 150ms});
  EXPECT_EQ(reply.status.message, "HTTP status 502");
}

TEST_F(GrpcMatrix, AServerStreamsErrorPageOverTheReceiveLimitIsItsStatus) {
  Settings settings = GrpcSettings();
  settings.max_receive_message_bytes = 1024;
  std::string page = "<html>" + std::string(4096, ' ') + "forbidden</html>";
  ServeThenOk(testing::Reply::Status(403, page).Header("content-type", "text/html"), 1, settings);
  BeginServerStream();
  ExpectEnds({.code = Code::kPermissionDenied});
  EXPECT_EQ(streamed_.load(), 0);
}

// Dropped, not unbounded: a page past 1 MiB (the core's
// max_error_response_bytes) still ends the call as too large, on a unary
// call and a stream, so an endless one cannot hold it to its deadline.
TEST_F(GrpcMatrix, APagePastAMebibyteIsStillTooLarge) {
  auto page =
      testing::Reply::Ok(std::string((1 << 20) + 1, ' ')).Header("content-type", "text/html");
  ServeThenOk(page, 2);
  Begin();
  Reply unary = ExpectEnds({.code = Code::kResourceExhausted, .next_call_ok = false});
  EXPECT_NE(unary.status.message.find("does not keep"), std::string::npos) << unary.status.message;
  BeginServerStream();
  ExpectEnds({.code = Code::kResourceExhausted});
  EXPECT_EQ(streamed_.load(), 0);
}

TEST_F(GrpcMatrix, AnHtmlPageUnder200OverTheReceiveLimitIsUnknown) {
  Settings settings = GrpcSettings();
  settings.max_receive_message_bytes = 1024;
  std::string page = "<html>" + std::string(4096, ' ') + "oops</html>";
  ServeThenOk(testing::Reply::Ok(page).Header("content-type", "text/html"), 1, settings);
  Begin();
  Reply reply = ExpectEnds({.code = Code::kUnknown, .breaker_failures = 1});
  EXPECT_NE(reply.status.message.find("text/html"), std::string::npos) << reply.status.message;
}

// --- RST_STREAM ---

// REFUSED_STREAM says the server processed nothing: sent again at once,
// even for a method that must not run twice and with retries off, and not
// counted against the dependency.
TEST_F(GrpcMatrix, RefusedStreamIsSentAgainTransparently) {
  Settings settings = GrpcSettings();
  settings.max_attempts = 1;
  settings.non_idempotent_methods = {kMethod};
  ServeThenOk(GrpcReply::ResetStream(h2::kRefusedStream), 1, settings, /*warm_up=*/true);
  Begin();
  ExpectEnds({.code = Code::kOk, .attempts = 2, .server_saw = 2});
}

struct ResetRow {
  std::uint32_t h2_code;
  Code code;
  const char* name;
};

class ResetMatrix : public GrpcMatrix,
                    public ::testing::WithParamInterface<std::tuple<bool, ResetRow>> {};

// Before any answer, or after the headers and part of a message: the code
// gRPC gives the HTTP/2 error; none of them is retried for a method that
// may have run (the method is marked as one that must not run twice).
// Before any answer, classify decides: CANCELLED is not the dependency's
// failure, PERMISSION_DENIED the caller's business (Success), INTERNAL and
// RESOURCE_EXHAUSTED failures. Once the answer has begun, a reset of any
// code is the dependency failing part way: a failure (the core's rule, as
// the HTTP rows' ResetPhaseMatrix has it).
TEST_P(ResetMatrix, EndsTheCallWithTheMappedCode) {
  auto [mid_answer, row] = GetParam();
  Settings settings = GrpcSettings();
  settings.non_idempotent_methods = {kMethod};
  testing::Reply reset = mid_answer ? testing::Reply::ResetAfter(7, Framed("a message cut short"))
                                          .Header("content-type", "application/grpc")
                                          .ResetCode(row.h2_code)
                                    : GrpcReply::ResetStream(row.h2_code).ToReply();
  ServeThenOk(reset, 1, settings);
  Begin();
  bool failure = mid_answer || row.code == Code::kInternal || row.code == Code::kResourceExhausted;
  ExpectEnds({.code = row.code, .breaker_failures = failure ? 1 : 0});
}

std::string ResetName(const ::testing::TestParamInfo<std::tuple<bool, ResetRow>>& param) {
  return std::string(std::get<0>(param.param) ? "MidAnswer_" : "BeforeAnswer_") +
         std::get<1>(param.param).name;
}

INSTANTIATE_TEST_SUITE_P(
    Codes, ResetMatrix,
    ::testing::Combine(
        ::testing::Bool(),
        ::testing::Values(ResetRow{h2::kNoError, Code::kInternal, "NoError"},
                          ResetRow{h2::kProtocolError, Code::kInternal, "ProtocolError"},
                          ResetRow{h2::kInternalError, Code::kInternal, "InternalError"},
                          ResetRow{h2::kCancel, Code::kCancelled, "Cancel"},
                          ResetRow{h2::kEnhanceYourCalm, Code::kResourceExhausted,
                                   "EnhanceYourCalm"},
                          ResetRow{0xc, Code::kPermissionDenied, "InadequateSecurity"})),
    ResetName);

// REFUSED_STREAM once the answer has begun: the server did process the
// call, so it is not sent again for a method that must not run twice; the
// code is the one gRPC gives REFUSED_STREAM, UNAVAILABLE.
TEST_F(GrpcMatrix, RefusedStreamMidAnswerIsNotSentAgain) {
  Settings settings = GrpcSettings();
  settings.non_idempotent_methods = {kMethod};
  ServeThenOk(testing::Reply::ResetAfter(7, Framed("a message cut short"))
                  .Header("content-type", "application/grpc")
                  .ResetCode(h2::kRefusedStream),
              1, settings);
  Begin();
  ExpectEnds({.code = Code::kUnavailable, .breaker_failures = 1});
}

// --- GOAWAY ---

// The server's GOAWAY leaves the call's stream out (not processed): sent
// again on a new connection, though the method must not run twice, and
// answered there.
TEST_F(GrpcMatrix, AGoawayLeavingTheStreamOutIsSentAgainOnANewConnection) {
  Settings settings = GrpcSettings();
  settings.max_attempts = 1;
  settings.non_idempotent_methods = {kMethod};
  ServeThenOk(GrpcReply::Goaway(h2::kNoError), 1, settings, /*warm_up=*/true);
  Begin();
  ExpectEnds({.code = Code::kOk, .attempts = 2, .server_saw = 2});
  EXPECT_EQ(server->connections_opened(), 2);
}

// After a warm-up, three calls go out together on one connection; the
// server's GOAWAY names only the first as processed. It finishes there; the
// two above it are sent again on a new connection: each call answered OK
// and processed exactly once, nothing counted.
TEST_F(GrpcMatrix, StreamsAboveAGoawayMoveToANewConnectionAndThoseBelowFinish) {
  std::mutex mu;
  std::multiset<std::string> processed;
  Serve(
      [&](const ServerRequest& r) -> testing::Reply {
        testing::GrpcRequest call = testing::GrpcRequest::From(r);
        std::lock_guard lock(mu);
        if (!call.messages.empty()) processed.insert(call.messages[0]);
        return GrpcReply::Ok("charged");
      },
      {.goaway_after_streams = 4, .goaway_unprocessed = 2});
  Settings settings = GrpcSettings();
  settings.non_idempotent_methods = {kMethod};
  StartGrpc(settings);
  ASSERT_TRUE(grpc->Call(kMethod, "warm").status.ok());
  std::vector<std::future<Reply>> calls;
  for (int i = 0; i < 3; ++i)
    calls.push_back(grpc->CallAsync(kMethod, "charge-" + std::to_string(i)));
  for (auto& call : calls) {
    ASSERT_EQ(call.wait_for(kSafetyNet), std::future_status::ready);
    Reply reply = call.get();
    EXPECT_TRUE(reply.status.ok()) << CodeName(reply.status.code) << ": " << reply.status.message;
  }
  for (int i = 0; i < 3; ++i) EXPECT_EQ(processed.count("charge-" + std::to_string(i)), 1u);
  EXPECT_EQ(server->connections_opened(), 2);
  EXPECT_EQ(grpc->breaker().counts(clock.Now()).failures, 0);
}

// --- Floods ---
//
// The server answers with a flood, forever. The client may end the
// connection (ENHANCE_YOUR_CALM, UNAVAILABLE or INTERNAL to the caller) or
// outlast it until the deadline (DEADLINE_EXCEEDED); either way the caller
// hears by the deadline + 50 ms of real time, after one attempt. The
// flooded connection is the test's own (raw frames), so the next call is
// not asked of it.
class GrpcFloodMatrix : public GrpcMatrix {
 protected:
  void Flood(h2::Frame frame, std::vector<h2::Frame> first = {}) {
    Serve([frame, first](const ServerRequest&) { return testing::Reply::Flood(frame, 0, first); });
    Settings settings = GrpcSettings();
    settings.timeout = 2s;
    settings.max_attempts = 1;
    StartGrpc(settings);
    TimePoint start = clock.Now();
    auto call = grpc->CallAsync(kMethod, "charge");
    EXPECT_TRUE(server->WaitFor(
        [](const FakeServer& s) {
          return s.raw_frames_written() >= kFloodUnderWay ||
                 (s.connections_opened() > 0 && s.connections_open() == 0);
        },
        kSafetyNet));
    clock.AdvanceTo(start + 2s);
    auto deadline_reached = std::chrono::steady_clock::now();
    ASSERT_EQ(call.wait_for(kSafetyNet), std::future_status::ready) << "the call hung";
    if (http::matrix::kAtSpeed) {
      EXPECT_LE(std::chrono::steady_clock::now() - deadline_reached, kAnswerBound)
          << "real time from the deadline to the answer";
    }
    Reply reply = call.get();
    EXPECT_TRUE(reply.status.code == Code::kDeadlineExceeded ||
                reply.status.code == Code::kUnavailable || reply.status.code == Code::kInternal ||
                reply.status.code == Code::kResourceExhausted)
        << CodeName(reply.status.code) << ": " << reply.status.message;
    EXPECT_EQ(reply.attempts, 1);
    EXPECT_EQ(server->request_count(), 1u);
  }
};

TEST_F(GrpcFloodMatrix, APingFloodIsAnsweredByTheDeadline) { Flood(h2::Ping()); }

TEST_F(GrpcFloodMatrix, ASettingsFloodIsAnsweredByTheDeadline) { Flood(h2::Settings()); }

TEST_F(GrpcFloodMatrix, AWindowUpdateFloodIsAnsweredByTheDeadline) {
  Flood(h2::WindowUpdate(0, 1));
}

TEST_F(GrpcFloodMatrix, AnEmptyDataFloodIsAnsweredByTheDeadline) {
  Flood(h2::Data(h2::kThisStream, ""),
        {h2::Headers(h2::kThisStream, {{":status", "200"}, {"content-type", "application/grpc"}},
                     false, true)});
}

// RST_STREAM over and over on the call's stream: the first ends the call
// at once (INTERNAL_ERROR: INTERNAL); the rest are on a closed stream.
TEST_F(GrpcFloodMatrix, AnRstStreamFloodEndsTheCallAtTheFirst) {
  Serve([](const ServerRequest&) {
    return testing::Reply::Flood(h2::RstStream(h2::kThisStream, h2::kInternalError), 0);
  });
  StartGrpc(GrpcSettings());
  Begin();
  ExpectEnds({.code = Code::kInternal, .breaker_failures = 1, .next_call_ok = false});
}

TEST_F(GrpcFloodMatrix, AContinuationFloodIsAnsweredByTheDeadline) {
  Flood(h2::Continuation(h2::kThisStream, {{"x-flood", "0123456789"}}, false),
        {h2::Headers(h2::kThisStream, {{":status", "200"}, {"content-type", "application/grpc"}},
                     false, false)});
}

}  // namespace
}  // namespace outbound::rpc::matrix
