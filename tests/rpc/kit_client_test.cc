// SPDX-License-Identifier: Apache-2.0
// The gRPC client against the kit's fake gRPC dependency alone, with no
// grpc++ in the process, so that ThreadSanitizer sees every thread (CI
// builds this binary under it): Warm and Connected on the client's
// connection (nothing listening, an untrusted server, plain text to a TLS
// server, a connection that closed), a connection's maximum age (drained,
// replaced, no call failed), and the client destroyed while 16 threads
// are blocked in its calls.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "methods.h"
#include "outbound/rpc/client.h"
#include "outbound/rpc/stream.h"
#include "outbound/testing/fake_grpc.h"
#include "outbound/testing/fixed_random.h"
#include "outbound/testing/manual_clock.h"
#include "outbound/testing/network_map.h"
#include "outbound/testing/test_ca.h"

namespace outbound::rpc {
namespace {

using testing::GrpcReply;

using testing::PortNothingListensOn;

class RpcOnKit : public ::testing::Test {
 protected:
  RpcOnKit() {
    runtime_.clock = &clock_;
    runtime_.network = &network_;
  }

  // The fake as backend:9090, answering every call `reply`; over TLS with a
  // certificate from `issuer` when given.
  void Serve(const testing::Reply& reply, const testing::TestCA* issuer = nullptr) {
    testing::FakeGrpcOptions options;
    options.handler = [reply](const testing::GrpcRequest&) { return reply; };
    options.clock = &clock_;
    if (issuer != nullptr) options.tls = testing::ServerTls(issuer->IssueServer({"backend"}));
    auto started = testing::StartFakeGrpc(std::move(options));
    ASSERT_TRUE(started) << started.error().message();
    server_ = std::move(*started);
    network_.Add("backend", 9090, "127.0.0.1", server_->port());
  }

  // A client of backend:9090, over TLS trusting the test's CA when `tls`.
  std::unique_ptr<Client> Make(bool tls, Settings settings = DefaultSettings()) {
    settings.addr = "backend:9090";
    if (tls) settings.tls = TlsSettings{.root_pem = ca_.pem()};
    auto client = Client::Create(runtime_, std::move(settings));
    EXPECT_TRUE(client) << client.error().message();
    return client ? std::move(*client) : nullptr;
  }

  testing::ManualClock clock_;
  testing::NetworkMap network_;
  Runtime runtime_;
  testing::TestCA ca_;
  std::unique_ptr<testing::FakeServer> server_;
};

class RpcWarm : public RpcOnKit, public ::testing::WithParamInterface<bool> {};

TEST_P(RpcWarm, WarmOpensTheConnectionTheFirstCallUses) {
  bool tls = GetParam();
  Serve(GrpcReply::Ok("hi"), tls ? &ca_ : nullptr);
  auto client = Make(tls);
  EXPECT_FALSE(client->Connected());
  Result<void> warmed = client->Warm().get();
  ASSERT_TRUE(warmed) << warmed.error().message();
  EXPECT_TRUE(client->Connected());
  EXPECT_EQ(server_->connections_opened(), 1);
  EXPECT_EQ(server_->request_count(), 0u);
  Reply reply = client->Call(kSay, "");
  ASSERT_TRUE(reply.status.ok()) << reply.status.message;
  EXPECT_EQ(server_->connections_opened(), 1);
}

INSTANTIATE_TEST_SUITE_P(PlainAndTls, RpcWarm, ::testing::Bool(),
                         [](const auto& p) { return p.param ? "tls" : "plain"; });

// A stream holds its gzip-coded answers coded until they are read: one
// that does not decode ends the stream with its status when it is read,
// and Read says no more.
TEST_F(RpcOnKit, AStreamsAnswerThatDoesNotDecodeEndsItWhenRead) {
  // A message flagged compressed under grpc-encoding gzip, its bytes no gzip.
  Serve(GrpcReply::BadPrefix().InitialMetadata("grpc-encoding", "gzip"));
  auto client = Make(false);
  Stream stream = client->OpenStream(kChat);
  ASSERT_TRUE(stream.WritesDone());
  std::string message;
  EXPECT_FALSE(stream.Read(&message));
  EXPECT_FALSE(stream.Read(&message));
  Status status = stream.Finish();
  EXPECT_EQ(status.code, Code::kInternal) << status.message;
  EXPECT_NE(status.message.find("gzip"), std::string::npos) << status.message;
}

TEST_F(RpcOnKit, WarmWithNothingListeningIsUnavailableAndNotConnected) {
  network_.Add("backend", 9090, "127.0.0.1", PortNothingListensOn());
  auto client = Make(/*tls=*/false);
  Result<void> warmed = client->Warm().get();
  ASSERT_FALSE(warmed);
  EXPECT_EQ(warmed.error().kind(), ErrorKind::kTransport);
  EXPECT_EQ(warmed.error().message().rfind("backend:9090: ", 0), 0u) << warmed.error().message();
  EXPECT_FALSE(client->Connected());
  EXPECT_EQ(client->breaker().counts(clock_.Now()).failures, 0);  // Warm is no call
}

TEST_F(RpcOnKit, WarmToAnUntrustedServerIsNamedAndNotConnected) {
  testing::TestCA other;
  Serve(GrpcReply::Ok("hi"), &other);
  auto client = Make(/*tls=*/true);
  Result<void> warmed = client->Warm().get();
  ASSERT_FALSE(warmed);
  EXPECT_EQ(warmed.error().kind(), ErrorKind::kTlsUntrusted) << warmed.error().message();
  EXPECT_FALSE(client->Connected());
}

// gRPC needs HTTP/2: over TLS the client offers h2 alone, so a server that
// speaks only HTTP/1.1 (a TLS proxy without h2) is never connected, where
// the calls once went over HTTP/1.1 and failed one by one.
TEST_F(RpcOnKit, ATlsServerWithoutHttp2IsNotConnected) {
  testing::FakeServer::Options options;
  options.handler = [](const testing::ServerRequest&) { return testing::Reply::Ok("hi"); };
  options.clock = &clock_;
  options.tls = testing::ServerTls(ca_.IssueServer({"backend"}));
  options.tls->alpn = {"http/1.1"};
  auto started = testing::FakeServer::Start(std::move(options));
  ASSERT_TRUE(started) << started.error().message();
  server_ = std::move(*started);
  network_.Add("backend", 9090, "127.0.0.1", server_->port());
  auto client = Make(/*tls=*/true);
  Result<void> warmed = client->Warm().get();
  ASSERT_FALSE(warmed) << "connected without HTTP/2";
  EXPECT_EQ(warmed.error().kind(), ErrorKind::kTransport) << warmed.error().message();
  EXPECT_FALSE(client->Connected());
  Reply reply = client->Call(kSay, "x");
  EXPECT_EQ(reply.status.code, Code::kUnavailable) << reply.status.message;
}

// No SETTINGS ever comes: the server's TLS refuses the HTTP/2 preface and
// closes, or reads it as the start of a record it waits to complete, and
// Warm ends at its deadline.
TEST_F(RpcOnKit, PlainTextToATlsServerIsNotConnected) {
  Serve(GrpcReply::Ok("hi"), &ca_);
  auto client = Make(/*tls=*/false);
  TimePoint deadline = clock_.Now() + std::chrono::seconds(2);
  auto warmed = client->Warm(Context{.deadline = deadline});
  // The server may close at once (kTransport, and the Warm's timer goes) or
  // wait for a TLS record (the deadline ends it): the clock moves only to
  // that deadline, while the Warm still waits.
  while (warmed.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready) {
    std::optional<TimePoint> next = clock_.next_timer();
    if (next && *next <= deadline) clock_.AdvanceTo(*next);
  }
  Result<void> result = warmed.get();
  ASSERT_FALSE(result);
  EXPECT_TRUE(result.error().kind() == ErrorKind::kDeadline ||
              result.error().kind() == ErrorKind::kTransport)
      << result.error().message();
  EXPECT_FALSE(client->Connected());
}

TEST_F(RpcOnKit, ConnectedStaysOnceTheConnectionCloses) {
  Serve(GrpcReply::Ok("hi"));
  auto client = Make(/*tls=*/false);
  Reply reply = client->Call(kSay, "");  // a call opens the connection too
  ASSERT_TRUE(reply.status.ok()) << reply.status.message;
  EXPECT_TRUE(client->Connected());
  server_->Stop();  // GOAWAY, and the connection closed
  server_.reset();
  EXPECT_TRUE(client->Connected());
}

// Settings::max_connection_age on the gRPC client: a call in flight when
// the connection passes its age ends OK on it, the next call opens a new
// connection, and the old one closes once its stream has ended. The
// server's waits run on a clock of their own, so moving the client's
// across the age releases nothing.
TEST_F(RpcOnKit, AConnectionPastItsMaximumAgeIsReplacedWithoutAFailedCall) {
  testing::ManualClock server_clock;
  testing::FakeGrpcOptions options;
  options.handler = [](const testing::GrpcRequest& r) -> testing::Reply {
    if (!r.messages.empty() && r.messages[0] == "slow") {
      return GrpcReply::Ok("slow").DelayHeaders(std::chrono::seconds(1));
    }
    return GrpcReply::Ok("fast");
  };
  options.clock = &server_clock;
  auto started = testing::StartFakeGrpc(std::move(options));
  ASSERT_TRUE(started) << started.error().message();
  server_ = std::move(*started);
  network_.Add("backend", 9090, "127.0.0.1", server_->port());
  Settings settings = DefaultSettings();
  settings.max_connection_age = std::chrono::minutes(1);
  settings.timeout = std::chrono::hours(1);  // the clock crosses the age mid-call
  testing::FixedRandom middle(0.5);          // the age exactly
  runtime_.random = &middle;
  auto client = Make(/*tls=*/false, settings);

  Reply first = client->Call(kSay, "");
  ASSERT_TRUE(first.status.ok()) << first.status.message;
  auto slow = client->CallAsync(kSay, "slow");
  ASSERT_TRUE(server_->WaitForRequests(2));
  clock_.Advance(std::chrono::minutes(1));

  Reply next = client->Call(kSay, "");
  ASSERT_TRUE(next.status.ok()) << next.status.message;
  EXPECT_EQ(next.attempts, 1);
  EXPECT_EQ(server_->connections_opened(), 2);
  EXPECT_EQ(server_->requests().at(1).connection_id, 1);  // "slow"
  EXPECT_EQ(server_->requests().at(2).connection_id, 2);
  EXPECT_EQ(server_->connections_open(), 2);

  server_clock.Advance(std::chrono::seconds(1));
  Reply slow_reply = slow.get();
  ASSERT_TRUE(slow_reply.status.ok()) << slow_reply.status.message;
  EXPECT_EQ(slow_reply.attempts, 1);
  EXPECT_TRUE(
      server_->WaitFor([](const testing::FakeServer& s) { return s.connections_open() == 1; }));
  EXPECT_EQ(server_->request_count(), 3u);  // nothing sent twice
}

// Off by default: one connection for the client's life, the clock moving
// a minute between calls for three hours.
TEST_F(RpcOnKit, WithoutAMaximumAgeOneConnectionServesForHours) {
  EXPECT_FALSE(DefaultSettings().max_connection_age);
  Serve(GrpcReply::Ok("hi"));
  auto client = Make(/*tls=*/false);
  for (int i = 0; i < 180; ++i) {
    Reply reply = client->Call(kSay, "");
    ASSERT_TRUE(reply.status.ok()) << reply.status.message;
    clock_.Advance(std::chrono::minutes(1));
  }
  EXPECT_EQ(server_->connections_opened(), 1);
}

// Destroying the client while threads are blocked in its calls (each
// blocking form: by name, a future, a server stream) ends every one
// CANCELLED, cancels them at the server, and waits for them to leave
// before anything is freed.
TEST_F(RpcOnKit, DestroyingTheClientUnderSixteenBlockingCallsEndsEachCancelled) {
  constexpr int kCalls = 16;
  Serve(GrpcReply::Hang());
  Settings settings = DefaultSettings();
  settings.timeout = std::chrono::hours(1);  // only the destruction ends them
  auto client = Make(/*tls=*/false, settings);
  std::vector<Status> statuses(kCalls);
  std::vector<std::thread> threads;
  for (int i = 0; i < kCalls; ++i) {
    threads.emplace_back([&, i] {
      switch (i % 3) {
        case 0:
          statuses[i] = client->Call(kSay, "").status;
          break;
        case 1:
          statuses[i] = client->CallAsync(kSay, "").get().status;
          break;
        default:
          statuses[i] = client->ServerStream(kCount, "", [](std::string_view) {}).status;
          break;
      }
    });
  }
  ASSERT_TRUE(server_->WaitForRequests(kCalls));
  client.reset();
  for (std::thread& thread : threads) thread.join();
  for (int i = 0; i < kCalls; ++i) {
    EXPECT_EQ(statuses[i].code, Code::kCancelled) << "call " << i << ": " << statuses[i].message;
    EXPECT_NE(statuses[i].message.find("the client was destroyed"), std::string::npos)
        << i << ": " << statuses[i].message;
  }
  EXPECT_TRUE(server_->WaitFor([](const testing::FakeServer& s) {
    return s.cancelled_requests() == kCalls;
  })) << "the server saw every call cancelled";
}

}  // namespace
}  // namespace outbound::rpc
