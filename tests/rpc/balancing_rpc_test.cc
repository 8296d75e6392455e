// SPDX-License-Identifier: Apache-2.0
// rpc::Settings::balancing on the gRPC client: three replicas of backend
// (the kit's fake gRPC servers in h2c on loopback, behind one name on the
// kit's network), in fake time. Calls spread over the replicas; one that
// answers UNAVAILABLE to every call, refuses every stream, refuses every
// connection or never answers (its attempts cut by the attempt timeout) is
// ejected while the others serve, every call ends OK with the breaker
// closed, and its failed attempts' calls were answered by another replica.
#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "methods.h"
#include "outbound/rpc/client.h"
#include "outbound/testing/fake_grpc.h"
#include "outbound/testing/fixed_random.h"
#include "outbound/testing/manual_clock.h"
#include "outbound/testing/network_map.h"

namespace outbound::rpc {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::GrpcReply;

class BalancingRpcTest : public ::testing::Test {
 protected:
  BalancingRpcTest() {
    runtime_.clock = &clock_;
    runtime_.network = &network_;
    runtime_.random = &random_;
  }

  // Three replicas of backend:9090, the second answering `bad`.
  void ServeWithOneBad(const GrpcReply& bad) {
    std::vector<Endpoint> endpoints;
    for (int i = 0; i < 3; ++i) {
      endpoints.push_back({"127.0.0.1", StartReplica(i == 1 ? bad : GrpcReply::Ok("hi"))});
    }
    network_.Set("backend", 9090, endpoints);
  }

  // Two replicas of backend:9090 answering, and `bad` between them.
  void ServeAround(const Endpoint& bad) {
    std::uint16_t first = StartReplica(GrpcReply::Ok("hi"));
    std::uint16_t third = StartReplica(GrpcReply::Ok("hi"));
    network_.Set("backend", 9090, {{"127.0.0.1", first}, bad, {"127.0.0.1", third}});
  }

  // A fake gRPC replica answering every call with `reply`; its port.
  std::uint16_t StartReplica(const GrpcReply& reply) {
    testing::FakeGrpcOptions options;
    options.handler = [reply](const testing::GrpcRequest&) { return reply; };
    options.clock = &clock_;
    auto started = testing::StartFakeGrpc(std::move(options));
    EXPECT_TRUE(started) << started.error().message();
    if (!started) return 0;
    replicas_.push_back(std::move(*started));
    return replicas_.back()->port();
  }

  std::unique_ptr<Client> Make(std::optional<Duration> attempt_timeout = std::nullopt) {
    Settings settings = DefaultSettings();
    settings.addr = "backend:9090";
    settings.balancing = http::Balancing{};
    settings.backoff_base = milliseconds(10);
    settings.backoff_max = milliseconds(20);
    settings.timeout = std::chrono::hours(1);
    settings.attempt_timeout = attempt_timeout;
    auto client = Client::Create(runtime_, std::move(settings));
    EXPECT_TRUE(client) << client.error().message();
    return client ? std::move(*client) : nullptr;
  }

  // `calls` calls, eight at a time, the clock moved to each backoff; the
  // attempts all of them took, or -1 if one did not end OK.
  int CallAll(Client& client, int calls) {
    int attempts = 0;
    for (int next = 0; next < calls;) {
      std::vector<std::future<Reply>> batch;
      for (int i = 0; i < 8 && next < calls; ++i, ++next)
        batch.push_back(client.CallAsync(kSay, ""));
      for (auto& f : batch) {
        while (f.wait_for(milliseconds(1)) != std::future_status::ready) {
          if (clock_.WaitForTimerBy(clock_.Now() + milliseconds(20), milliseconds(1))) {
            clock_.AdvanceTo(*clock_.next_timer());
          }
        }
        Reply reply = f.get();
        if (!reply.status.ok()) return -1;
        attempts += reply.attempts;
      }
    }
    return attempts;
  }

  testing::ManualClock clock_;
  testing::NetworkMap network_;
  testing::SeededRandom random_{33};
  Runtime runtime_;
  std::vector<std::unique_ptr<testing::FakeServer>> replicas_;
};

TEST_F(BalancingRpcTest, CallsSpreadOverEveryReplica) {
  ServeWithOneBad(GrpcReply::Ok("hi"));
  auto client = Make();
  EXPECT_EQ(CallAll(*client, 300), 300);
  for (const auto& replica : replicas_) {
    EXPECT_GE(replica->request_count(), 60u);
    EXPECT_EQ(replica->connections_opened(), 1);
  }
}

TEST_F(BalancingRpcTest, AReplicaAnsweringUnavailableIsEjectedAndEveryCallEndsOk) {
  ServeWithOneBad(GrpcReply::Status(Code::kUnavailable, "draining"));
  auto client = Make();
  int attempts = CallAll(*client, 1000);
  ASSERT_GT(attempts, 0) << "a call did not end OK";
  std::size_t bad = replicas_[1]->request_count();
  EXPECT_GE(bad, 5u);
  EXPECT_LE(bad, 10u);  // 1 % of 1000
  // Each UNAVAILABLE was followed by one more attempt, elsewhere.
  EXPECT_EQ(static_cast<std::size_t>(attempts), 1000u + bad);
  EXPECT_EQ(client->breaker().state(clock_.Now()), circuit::State::kClosed);
}

TEST_F(BalancingRpcTest, AReplicaRefusingEveryStreamIsEjectedAndEveryCallEndsOk) {
  ServeWithOneBad(GrpcReply::ResetStream(7));  // REFUSED_STREAM
  auto client = Make();
  int attempts = CallAll(*client, 1000);
  ASSERT_GT(attempts, 0) << "a call did not end OK";
  std::size_t bad = replicas_[1]->request_count();
  EXPECT_GE(bad, 5u);
  EXPECT_LE(bad, 10u);
  EXPECT_EQ(static_cast<std::size_t>(attempts), 1000u + bad);
  EXPECT_EQ(client->breaker().state(clock_.Now()), circuit::State::kClosed);
}

TEST_F(BalancingRpcTest, AReplicaRefusingConnectionsIsEjectedAndEveryCallEndsOk) {
  ServeAround({"127.0.0.1", testing::PortNothingListensOn()});
  auto client = Make();
  int attempts = CallAll(*client, 200);
  ASSERT_GT(attempts, 0) << "a call did not end OK";
  // Five refused dials in a row eject it (the attempts waiting on one dial
  // count once), and every refused attempt's call went on elsewhere.
  EXPECT_GE(attempts - 200, 5);
  // Out for 30 s (the clock moves only by backoffs): none of 1000 more
  // calls is sent there, each answered at its first attempt.
  EXPECT_EQ(CallAll(*client, 1000), 1000);
  EXPECT_EQ(client->breaker().state(clock_.Now()), circuit::State::kClosed);
}

TEST_F(BalancingRpcTest, AReplicaThatNeverAnswersIsEjectedByItsAttemptTimeouts) {
  ServeWithOneBad(GrpcReply::Hang());
  testing::FakeServer& hung = *replicas_[1];
  auto client = Make(seconds(1));
  // One call at a time: when the hanging replica has the attempt, the
  // clock moves by the attempt timeout; otherwise only to backoffs.
  std::size_t seen_hung = 0;
  for (int i = 0; i < 300; ++i) {
    std::future<Reply> answer = client->CallAsync(kSay, "");
    while (answer.wait_for(milliseconds(1)) != std::future_status::ready) {
      if (hung.request_count() > seen_hung) {
        ++seen_hung;
        ASSERT_TRUE(clock_.WaitForTimerBy(clock_.Now() + seconds(1)));
        clock_.Advance(seconds(1));
      } else if (clock_.WaitForTimerBy(clock_.Now() + milliseconds(20), milliseconds(1))) {
        clock_.AdvanceTo(*clock_.next_timer());
      }
    }
    Reply reply = answer.get();
    ASSERT_TRUE(reply.status.ok()) << reply.status.message;
  }
  // Five timeouts in a row eject it; 30 s have not passed (5 s of timeouts
  // and the backoffs).
  EXPECT_EQ(hung.request_count(), 5u);
  EXPECT_EQ(client->breaker().state(clock_.Now()), circuit::State::kClosed);
}

TEST_F(BalancingRpcTest, AReplicaAddedToTheNameGetsCallsWithinOneReResolution) {
  std::uint16_t first = StartReplica(GrpcReply::Ok("hi"));
  std::uint16_t second = StartReplica(GrpcReply::Ok("hi"));
  std::uint16_t added = StartReplica(GrpcReply::Ok("hi"));
  network_.Set("backend", 9090, {{"127.0.0.1", first}, {"127.0.0.1", second}});
  auto client = Make();
  EXPECT_EQ(CallAll(*client, 100), 100);
  network_.Set("backend", 9090,
               {{"127.0.0.1", first}, {"127.0.0.1", second}, {"127.0.0.1", added}});
  EXPECT_EQ(CallAll(*client, 100), 100);
  EXPECT_EQ(replicas_[2]->request_count(), 0u);  // not resolved again yet

  clock_.Advance(seconds(33));  // 30 s within ±10 %
  EXPECT_EQ(CallAll(*client, 300), 300);
  EXPECT_GE(replicas_[2]->request_count(), 60u);
}

TEST_F(BalancingRpcTest, AReplicaRemovedFromTheNameGetsNoneOnceItsConnectionsDrain) {
  std::uint16_t kept = StartReplica(GrpcReply::Ok("hi"));
  std::uint16_t removed = StartReplica(GrpcReply::Ok("hi"));
  network_.Set("backend", 9090, {{"127.0.0.1", kept}, {"127.0.0.1", removed}});
  auto client = Make();
  EXPECT_EQ(CallAll(*client, 100), 100);
  ASSERT_GT(replicas_[1]->request_count(), 0u);

  network_.Set("backend", 9090, {{"127.0.0.1", kept}});
  clock_.Advance(seconds(33));
  // Its connection, idle, is closed.
  EXPECT_TRUE(replicas_[1]->WaitFor(
      [](const testing::FakeServer& s) { return s.connections_open() == 0; }));
  std::size_t before = replicas_[1]->request_count();
  EXPECT_EQ(CallAll(*client, 100), 100);
  EXPECT_EQ(replicas_[1]->request_count(), before);
}

TEST_F(BalancingRpcTest, AnAttemptCutByItsTimeoutEndsUnavailableAndTheServerIsToldTheShorterTime) {
  network_.Set("backend", 9090, {{"127.0.0.1", StartReplica(GrpcReply::Hang())}});
  Settings settings = DefaultSettings();
  settings.addr = "backend:9090";
  settings.max_attempts = 1;
  settings.attempt_timeout = milliseconds(1500);
  auto client = Client::Create(runtime_, settings);
  ASSERT_TRUE(client) << client.error().message();
  std::future<Reply> answer = (*client)->CallAsync(kSay, "");
  ASSERT_TRUE(replicas_[0]->WaitForRequests(1));
  ASSERT_TRUE(clock_.WaitForTimerBy(clock_.Now() + milliseconds(1500)));
  clock_.Advance(milliseconds(1500));
  Reply reply = answer.get();
  EXPECT_EQ(reply.status.code, Code::kUnavailable);
  EXPECT_NE(reply.status.message.find("no response headers within the attempt timeout (1500ms)"),
            std::string::npos)
      << reply.status.message;
  // 1.5 s, not the call's 10 s.
  EXPECT_EQ(replicas_[0]->requests()[0].header("grpc-timeout"), "1500000u");

  settings.attempt_timeout = Duration::zero();
  auto refused = Client::Create(runtime_, settings);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("Settings.attempt_timeout"), std::string::npos)
      << refused.error().message();
}

}  // namespace
}  // namespace outbound::rpc
