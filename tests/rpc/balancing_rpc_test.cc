// SPDX-License-Identifier: Apache-2.0
// rpc::Settings::balancing on the gRPC client: three replicas of backend
// (the kit's fake gRPC servers in h2c on loopback, behind one name on the
// kit's network), in fake time. Calls spread over the replicas; one that
// answers UNAVAILABLE to every call, or refuses every stream, is ejected
// while the others serve, every call ends OK, and its failed attempts'
// calls were answered by another replica.
#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "outbound/rpc/client.h"
#include "outbound/testing/fake_grpc.h"
#include "outbound/testing/fixed_random.h"
#include "outbound/testing/manual_clock.h"
#include "outbound/testing/network_map.h"

namespace outbound::rpc {
namespace {

using std::chrono::milliseconds;
using testing::GrpcReply;

constexpr char kSay[] = "/outbound.test.Echo/Say";

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
      testing::FakeGrpcOptions options;
      GrpcReply reply = i == 1 ? bad : GrpcReply::Ok("hi");
      options.handler = [reply](const testing::GrpcRequest&) { return reply; };
      options.clock = &clock_;
      auto started = testing::StartFakeGrpc(std::move(options));
      ASSERT_TRUE(started) << started.error().message();
      endpoints.push_back({"127.0.0.1", (*started)->port()});
      replicas_.push_back(std::move(*started));
    }
    network_.Set("backend", 9090, endpoints);
  }

  std::unique_ptr<Client> Make() {
    Settings settings = DefaultSettings();
    settings.addr = "backend:9090";
    settings.balancing = http::Balancing{};
    settings.backoff_base = milliseconds(10);
    settings.backoff_max = milliseconds(20);
    settings.timeout = std::chrono::hours(1);
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

}  // namespace
}  // namespace outbound::rpc
