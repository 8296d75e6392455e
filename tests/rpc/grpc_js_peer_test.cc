// SPDX-License-Identifier: Apache-2.0
// The gRPC client against a server nobody here wrote: grpc-js, in
// tests/rpc/grpc_js_peer.js, started by each test. Waits run on a
// ManualClock the test advances to each timer the call sets.
#include <gtest/gtest.h>

#include <future>

#include "node_peer.h"
#include "outbound/rpc/client.h"
#include "outbound/testing/fixed_random.h"
#include "outbound/testing/manual_clock.h"
#include "outbound/testing/network_map.h"

namespace outbound::rpc {
namespace {

constexpr char kSay[] = "/outbound.test.Echo/Say";

class GrpcJsPeer : public ::testing::Test {
 protected:
  GrpcJsPeer() : random_(0.0) {
    runtime_.clock = &clock_;
    runtime_.network = &network_;
    runtime_.random = &random_;
  }

  // Starts the peer with its answers and a client of it.
  void Start(const std::string& answers) {
    peer_ = std::make_unique<peers::NodePeer>(
        OUTBOUND_RPC_PEER_SCRIPT,
        std::vector<std::string>{"--modules=" OUTBOUND_RPC_PEER_MODULES, "--answers=" + answers});
    network_.Add("backend", 9090, "127.0.0.1", peer_->port());
    Settings settings = DefaultSettings();
    settings.addr = "backend:9090";
    auto client = Client::Create(runtime_, settings);
    ASSERT_TRUE(client) << client.error().message();
    client_ = std::move(*client);
  }

  Reply Call() {
    auto future = std::async(std::launch::async, [&] { return client_->Call(kSay, ""); });
    while (future.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready) {
      if (auto next = clock_.next_timer()) clock_.AdvanceTo(*next);
    }
    return future.get();
  }

  int PeerCalls() { return peer_->Stats().at("calls").get<int>(); }

  testing::ManualClock clock_;
  testing::NetworkMap network_;
  testing::FixedRandom random_;
  Runtime runtime_;
  std::unique_ptr<peers::NodePeer> peer_;
  std::unique_ptr<Client> client_;
};

TEST_F(GrpcJsPeer, UnavailableIsRetriedUntilOk) {
  Start("UNAVAILABLE,UNAVAILABLE,OK");
  Reply reply = Call();
  EXPECT_TRUE(reply.status.ok()) << reply.status.message;
  EXPECT_EQ(reply.attempts, 3);
  EXPECT_EQ(PeerCalls(), 3);
}

TEST_F(GrpcJsPeer, PushbackIsWaitedInFakeTime) {
  Start("RESOURCE_EXHAUSTED:2000,OK");
  TimePoint start = clock_.Now();
  Reply reply = Call();
  EXPECT_TRUE(reply.status.ok()) << reply.status.message;
  EXPECT_EQ(PeerCalls(), 2);
  EXPECT_EQ(clock_.Now() - start, std::chrono::seconds(2));
}

TEST_F(GrpcJsPeer, NegativePushbackStops) {
  Start("UNAVAILABLE:-1,OK");
  Reply reply = Call();
  EXPECT_EQ(reply.status.code, Code::kUnavailable);
  EXPECT_EQ(reply.attempts, 1);
  EXPECT_EQ(PeerCalls(), 1);
}

}  // namespace
}  // namespace outbound::rpc
