// SPDX-License-Identifier: Apache-2.0
// What any gRPC server sees of the client, shown against each one nobody
// here wrote (grpcio_peer_test.cc, grpc_go_peer_test.cc and
// grpc_js_peer_test.cc instantiate StockGrpcServerTest with their
// program): every kind of call in plain
// text and over TLS, statuses and metadata both ways, the deadline,
// retries and pushback, cancels, the trace context.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "grpc_server_test.h"
#include "outbound/telemetry/propagation.h"

namespace outbound::rpc {
namespace {

using namespace std::chrono_literals;
using namespace std::string_literals;

// The metadata a server's handler set, without the date grpc-js adds to
// every answer's (an HTTP field of the server's own, which the caller sees
// as any other).
Metadata HandlersFields(Metadata metadata) {
  metadata.erase("date");
  return metadata;
}

// --- Each kind of call, in plain text and over TLS ---

TEST_P(StockGrpcServerTest, AUnaryCallInPlainTextIsAnswered) {
  Start();
  Reply reply = Call("Echo", "hello");
  ASSERT_TRUE(reply.status.ok()) << reply.status.message;
  EXPECT_EQ(reply.body, "hello");
  EXPECT_EQ(reply.attempts, 1);
  EXPECT_EQ(peer_->Calls("Echo"), 1);
  EXPECT_TRUE(client_->Connected());
}

TEST_P(StockGrpcServerTest, AUnaryCallOverTlsIsAnswered) {
  Start({}, DefaultSettings(), /*tls=*/true);
  Reply reply = Call("Echo", "over tls");
  ASSERT_TRUE(reply.status.ok()) << reply.status.message;
  EXPECT_EQ(reply.body, "over tls");
  EXPECT_EQ(reply.attempts, 1);
}

TEST_P(StockGrpcServerTest, AServerStreamDeliversEveryMessageInOrder) {
  for (bool tls : {false, true}) {
    SCOPED_TRACE(tls ? "over TLS" : "in plain text");
    Start({}, DefaultSettings(), tls);
    std::vector<std::string> got;
    Reply reply = client_->ServerStream(
        "/peer.Test/Count", "100", [&](std::string_view message) { got.emplace_back(message); });
    ASSERT_TRUE(reply.status.ok()) << reply.status.message;
    ASSERT_EQ(got.size(), 100u);
    for (int i = 0; i < 100; ++i) EXPECT_EQ(got[i], std::to_string(i + 1));
  }
}

TEST_P(StockGrpcServerTest, AClientStreamsMessagesAndTheOneReplyJoinsThem) {
  for (bool tls : {false, true}) {
    SCOPED_TRACE(tls ? "over TLS" : "in plain text");
    Start({}, DefaultSettings(), tls);
    Context context;
    context.metadata.emplace("x-tenant", "acme");
    Stream stream = client_->OpenStream("/peer.Test/Join", context);
    for (const char* part : {"a", "b", "c"}) ASSERT_TRUE(stream.Write(std::string_view(part)));
    ASSERT_TRUE(stream.WritesDone());
    std::string reply;
    ASSERT_TRUE(stream.Read(&reply));
    EXPECT_EQ(reply, "a+b+c");
    EXPECT_FALSE(stream.Read(&reply));
    Status status = stream.Finish();
    EXPECT_TRUE(status.ok()) << status.message;
    EXPECT_EQ(peer_->Stats().at("last_metadata").value("x-tenant", ""), "acme");
    EXPECT_THAT(HandlersFields(stream.headers()),
                ::testing::ElementsAre(::testing::Pair("x-served-by", program_.name)));
  }
}

TEST_P(StockGrpcServerTest, ABidiStreamEchoesEachMessageBeforeTheNextIsWritten) {
  for (bool tls : {false, true}) {
    SCOPED_TRACE(tls ? "over TLS" : "in plain text");
    Start({}, DefaultSettings(), tls);
    Stream stream = client_->OpenStream("/peer.Test/Chat");
    for (int i = 0; i < 20; ++i) {
      std::string line = "line " + std::to_string(i);
      ASSERT_TRUE(stream.Write(line));
      std::string echoed;
      ASSERT_TRUE(stream.Read(&echoed)) << "no echo of " << line;
      EXPECT_EQ(echoed, "echo:" + line);
    }
    ASSERT_TRUE(stream.WritesDone());
    std::string more;
    EXPECT_FALSE(stream.Read(&more));
    Status status = stream.Finish();
    EXPECT_TRUE(status.ok()) << status.message;
    EXPECT_EQ(peer_->Stats().at("cancelled").get<int>(), 0);
  }
}

// Many calls at once share the one connection.
TEST_P(StockGrpcServerTest, FiftyConcurrentCallsAreEachAnswered) {
  Start();
  std::vector<std::future<Reply>> calls;
  for (int i = 0; i < 50; ++i) {
    calls.push_back(client_->CallAsync("/peer.Test/Echo", "call " + std::to_string(i)));
  }
  for (int i = 0; i < 50; ++i) {
    ASSERT_EQ(calls[static_cast<std::size_t>(i)].wait_for(kSafetyNet), std::future_status::ready);
    Reply reply = calls[static_cast<std::size_t>(i)].get();
    ASSERT_TRUE(reply.status.ok()) << reply.status.message;
    EXPECT_EQ(reply.body, "call " + std::to_string(i));
  }
  EXPECT_EQ(peer_->Calls("Echo"), 50);
}

// --- Statuses and metadata ---

// The server percent-encodes grpc-message; the caller sees the text as
// the handler wrote it: UTF-8 and '%' intact.
TEST_P(StockGrpcServerTest, AStatusMessageIsPercentDecoded) {
  Start();
  const std::string message = "na\u00efve 100% s\u00fbr \u2713 %41";
  Reply reply = Call("Fail", "INVALID_ARGUMENT " + message);
  EXPECT_EQ(reply.status.code, Code::kInvalidArgument);
  EXPECT_EQ(reply.status.message, message);
  EXPECT_EQ(reply.attempts, 1);
}

// The server's own answers to a method and a service it does not have.
TEST_P(StockGrpcServerTest, AMethodOrServiceTheServerDoesNotHaveIsUnimplemented) {
  Start();
  Reply method = Call("Nothing", "");
  EXPECT_EQ(method.status.code, Code::kUnimplemented) << method.status.message;
  EXPECT_EQ(method.attempts, 1);
  Reply service = client_->Call("/peer.Elsewhere/Echo", "");
  EXPECT_EQ(service.status.code, Code::kUnimplemented) << service.status.message;
  EXPECT_EQ(service.attempts, 1);
}

// A call's metadata reaches the server, a name in any case in lower case
// and a "-bin" value as its bytes (the peer echoes the "x-" ones into its
// trailers, and the server encodes them again); the initial metadata comes
// back as Reply::headers, the trailing as Reply::trailers, "-bin" values
// decoded. A Trailers-Only answer has no headers.
TEST_P(StockGrpcServerTest, MetadataGoesBothWaysBinaryValuesAsTheirBytes) {
  Start();
  const std::string bytes("\x00\x01\xfe\xff binary", 11);
  Context context;
  context.metadata.emplace("Authorization", "Bearer token");
  context.metadata.emplace("x-id-bin", bytes);
  context.metadata.emplace("x-text", "plain value");
  Reply reply = Call("Echo", "m", context);
  ASSERT_TRUE(reply.status.ok()) << reply.status.message;
  nlohmann::json seen = peer_->Stats().at("last_metadata");
  EXPECT_EQ(seen.value("authorization", ""), "Bearer token");
  EXPECT_EQ(seen.value("x-id-bin", ""), "0001feff2062696e617279");  // the bytes, in hex
  EXPECT_EQ(seen.value("x-text", ""), "plain value");
  EXPECT_THAT(reply.trailers, ::testing::IsSupersetOf({::testing::Pair("x-id-bin", bytes),
                                                       ::testing::Pair("x-text", "plain value"s)}));
  EXPECT_THAT(HandlersFields(reply.headers),
              ::testing::ElementsAre(::testing::Pair("x-served-bin", "\x00\xff"s),
                                     ::testing::Pair("x-served-by", program_.name)));
  EXPECT_EQ(reply.trailers.count("x-served-by"), 0u);

  reply = Call("Fail", "NOT_FOUND gone");
  EXPECT_EQ(reply.status.code, Code::kNotFound);
  EXPECT_EQ(reply.status.message, "gone");
  EXPECT_TRUE(reply.headers.empty()) << reply.headers.begin()->first;
}

// The caller's trace context and baggage reach the server as metadata, the
// failure scenario left out of the baggage.
TEST_P(StockGrpcServerTest, TheTraceContextAndBaggageReachTheServer) {
  Settings settings = DefaultSettings();
  settings.faults.enabled = true;
  Start({}, settings);
  Context context;
  context.trace =
      *telemetry::ParseTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  context.baggage = {{"tenant", "acme", ""}, {"outbound-fault", "grpc:other:9090=abort", ""}};
  Reply reply = Call("Echo", "traced", context);
  ASSERT_TRUE(reply.status.ok()) << reply.status.message;
  nlohmann::json seen = peer_->Stats().at("last_metadata");
  EXPECT_EQ(seen.value("traceparent", ""),
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  EXPECT_EQ(seen.value("baggage", ""), "tenant=acme");
}

// --- Deadlines ---

// The call's 7 s reach the server as grpc-timeout: what its handler has
// left is at most that, less the trip (the manual clock did not move, so
// 7 s were sent).
TEST_P(StockGrpcServerTest, TheDeadlineReachesTheServerAsGrpcTimeout) {
  Settings settings = DefaultSettings();
  settings.timeout = 7s;
  Start({}, settings);
  ExpectTimeLeft(Call("Deadline", ""), 7000);
}

// A call that outlives its deadline ends DEADLINE_EXCEEDED when the clock
// reaches it, once, counted by the breaker, and the server sees the call
// go. The deadline is long (60 s) so the server's own timer, in real time,
// never ends it first.
TEST_P(StockGrpcServerTest, ACallThatOutlivesItsDeadlineEndsDeadlineExceeded) {
  Settings settings = DefaultSettings();
  settings.timeout = 60s;
  Start({}, settings);
  TimePoint start = clock_.Now();
  auto call = std::async(std::launch::async, [&] { return client_->Call("/peer.Test/Hang", ""); });
  WaitForCalls("Hang", 1);
  clock_.AdvanceTo(start + 60s);
  ASSERT_EQ(call.wait_for(kSafetyNet), std::future_status::ready);
  Reply reply = call.get();
  EXPECT_EQ(reply.status.code, Code::kDeadlineExceeded) << reply.status.message;
  EXPECT_EQ(reply.attempts, 1);
  EXPECT_EQ(client_->breaker().counts(clock_.Now()).failures, 1);
  EXPECT_TRUE(PeerSawCancelled(1));
  EXPECT_EQ(peer_->Calls("Hang"), 1);
}

// --- Retries and pushback ---

TEST_P(StockGrpcServerTest, UnavailableThenOkIsRetriedAndTheSecondAttemptSucceeds) {
  Start({"--answers=UNAVAILABLE,OK"});
  Reply reply = Call("Flaky", "again");
  ASSERT_TRUE(reply.status.ok()) << reply.status.message;
  EXPECT_EQ(reply.body, "again");
  EXPECT_EQ(reply.attempts, 2);
  EXPECT_EQ(peer_->Calls("Flaky"), 2);
}

TEST_P(StockGrpcServerTest, ANonIdempotentMethodIsNotRetriedAfterUnavailable) {
  Settings settings = DefaultSettings();
  settings.non_idempotent_methods = {"/peer.Test/Flaky"};
  Start({"--answers=UNAVAILABLE,OK"}, settings);
  Reply reply = Call("Flaky", "once");
  EXPECT_EQ(reply.status.code, Code::kUnavailable) << reply.status.message;
  EXPECT_EQ(reply.attempts, 1);
  EXPECT_EQ(peer_->Calls("Flaky"), 1);
}

TEST_P(StockGrpcServerTest, PushbackIsWaitedOnTheClockBeforeTheRetry) {
  Start({"--answers=RESOURCE_EXHAUSTED:2000,OK"});
  TimePoint start = clock_.Now();
  Reply reply = Call("Flaky", "later");
  ASSERT_TRUE(reply.status.ok()) << reply.status.message;
  EXPECT_EQ(reply.attempts, 2);
  EXPECT_EQ(peer_->Calls("Flaky"), 2);
  EXPECT_EQ(clock_.Now() - start, 2s);  // backoff jitter 0, then the pushback
}

TEST_P(StockGrpcServerTest, ANegativePushbackStopsTheRetries) {
  Start({"--answers=UNAVAILABLE:-1,OK"});
  Reply reply = Call("Flaky", "");
  EXPECT_EQ(reply.status.code, Code::kUnavailable);
  EXPECT_EQ(reply.attempts, 1);
  EXPECT_EQ(peer_->Calls("Flaky"), 1);
}

// --- Cancellation ---

TEST_P(StockGrpcServerTest, ACancelFromTheClientReachesTheServer) {
  Settings settings = DefaultSettings();
  settings.timeout = 60s;
  Start({}, settings);
  CancelSource cancel;
  Context context;
  context.cancel = cancel.token();
  auto call =
      std::async(std::launch::async, [&] { return client_->Call("/peer.Test/Hang", "", context); });
  WaitForCalls("Hang", 1);
  cancel.Cancel();
  ASSERT_EQ(call.wait_for(kSafetyNet), std::future_status::ready);
  Reply reply = call.get();
  EXPECT_EQ(reply.status.code, Code::kCancelled) << reply.status.message;
  EXPECT_EQ(client_->breaker().counts(clock_.Now()).failures, 0);
  EXPECT_TRUE(PeerSawCancelled(1));
  // The connection is still good for the next call.
  Reply next = Call("Echo", "after");
  ASSERT_TRUE(next.status.ok()) << next.status.message;
  EXPECT_EQ(next.body, "after");
}

TEST_P(StockGrpcServerTest, ACancelledStreamReachesTheServer) {
  Start();
  CancelSource cancel;
  Context context;
  context.cancel = cancel.token();
  Stream stream = client_->OpenStream("/peer.Test/Chat", context);
  ASSERT_TRUE(stream.Write(std::string_view("one")));
  std::string echoed;
  ASSERT_TRUE(stream.Read(&echoed));
  cancel.Cancel();
  Status status = stream.Finish();
  EXPECT_EQ(status.code, Code::kCancelled) << status.message;
  EXPECT_EQ(client_->breaker().counts(clock_.Now()).failures, 0);
  EXPECT_TRUE(PeerSawCancelled(1));
}

}  // namespace
}  // namespace outbound::rpc
