// SPDX-License-Identifier: Apache-2.0
// rpc::Settings::balancing against servers nobody here wrote: three grpc-js
// servers (tests/rpc/grpc_js_peer.js --host=127.0.0.N) on 127.0.0.1,
// 127.0.0.2 and 127.0.0.3 behind one name, on the real clock, as
// tests/peers/node_balancing_test.cc does for HTTP. The second is killed a
// third of the way into 6000 calls, with calls open on it, and started
// again on its port two thirds in: no call fails, the breaker stays closed,
// and once its short ejection is over it answers calls again.
//
// The kill comes once the replica holds calls unanswered ("hold"), never
// while it writes an answer: grpc-js sends a unary answer's trailers a turn
// after its message, and a call whose answer has begun is committed, as
// gRPC has it (no client sends it again), so a kill in that gap fails the
// call whatever the client.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "methods.h"
#include "node_peer.h"
#include "outbound/rpc/client.h"
#include "outbound/testing/fixed_random.h"
#include "outbound/testing/network_map.h"

namespace outbound::rpc {
namespace {

using std::chrono::milliseconds;

class GrpcJsBalancing : public ::testing::Test {
 protected:
  GrpcJsBalancing() {
    runtime_.network = &network_;
    runtime_.random = &random_;
  }

  // grpc-js on 127.0.0.`n`, on `port` (0: a free one), answering OK.
  static std::unique_ptr<peers::NodePeer> StartReplica(int n, std::uint16_t port = 0) {
    std::vector<std::string> args = {"--modules=" OUTBOUND_RPC_PEER_MODULES,
                                     "--host=127.0.0." + std::to_string(n)};
    if (port != 0) args.push_back("--port=" + std::to_string(port));
    return std::make_unique<peers::NodePeer>(OUTBOUND_RPC_PEER_SCRIPT, args);
  }

  static int Calls(peers::NodePeer& replica) { return replica.Stats().at("calls").get<int>(); }
  static int Held(peers::NodePeer& replica) { return replica.Stats().at("held").get<int>(); }

  testing::NetworkMap network_;
  testing::SeededRandom random_{33};
  Runtime runtime_;
};

TEST_F(GrpcJsBalancing, AReplicaKilledAndRestartedDuringSixThousandCallsCostsNoCall) {
  std::vector<std::unique_ptr<peers::NodePeer>> replicas;
  for (int n = 1; n <= 3; ++n) replicas.push_back(StartReplica(n));
  std::vector<Endpoint> endpoints;
  for (int n = 1; n <= 3; ++n) {
    endpoints.push_back({"127.0.0." + std::to_string(n), replicas[n - 1]->port()});
  }
  network_.Set("backend", 9090, endpoints);
  Settings settings = DefaultSettings();
  settings.addr = "backend:9090";
  settings.balancing = http::Balancing{};
  // Short, so the replica started again is probed back within the run.
  settings.balancing->outlier_detection.base_ejection = milliseconds(100);
  settings.balancing->outlier_detection.max_ejection = milliseconds(300);
  auto created = Client::Create(runtime_, settings);
  ASSERT_TRUE(created) << created.error().message();
  std::unique_ptr<Client> client = std::move(*created);
  const std::uint16_t killed_port = replicas[1]->port();

  constexpr int kCalls = 6000;
  constexpr int kInFlight = 64;
  std::vector<std::future<Reply>> ring(kInFlight);
  int ended = 0;
  int ok = 0;
  std::map<std::string, int> failures;  // by code, message and attempts
  auto tally = [&](Reply reply) {
    ++ended;
    if (reply.status.ok()) {
      ++ok;
    } else {
      ++failures[std::to_string(static_cast<int>(reply.status.code)) + " " + reply.status.message +
                 " (" + std::to_string(reply.attempts) + " attempts)"];
    }
  };
  int answered_before_kill = 0;
  int held_at_kill = 0;
  std::vector<std::future<Reply>> sent_while_holding;
  int ok_before_restart = 0;
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int i = 0;; ++i) {
    auto& slot = ring[i % kInFlight];
    if (slot.valid()) tally(slot.get());
    if (i == kCalls / 3) {
      // Killed once it holds a few calls: its connection drops with them
      // open. The calls sent meanwhile are waited for after the loop, not
      // in it: a call held there ends only with the kill.
      replicas[1]->Command("hold");
      while (Held(*replicas[1]) < 4 && sent_while_holding.size() < 1000) {
        sent_while_holding.push_back(client->CallAsync(kSay, ""));
      }
      answered_before_kill = Calls(*replicas[1]);
      held_at_kill = Held(*replicas[1]);
      replicas[1].reset();
    }
    if (i == 2 * kCalls / 3) {
      replicas[1] = StartReplica(2, killed_port);
      ok_before_restart = ok;
    }
    // Past the 6000, until the restarted replica has answered a call.
    bool back = i > 2 * kCalls / 3 && i % 500 == 0 && Calls(*replicas[1]) > 0;
    if ((i >= kCalls && back) || std::chrono::steady_clock::now() > give_up) break;
    slot = client->CallAsync(kSay, "");
  }
  for (auto& slot : ring) {
    if (slot.valid()) tally(slot.get());
  }
  for (auto& call : sent_while_holding) tally(call.get());
  std::string summary = std::to_string(ended) + " calls, " + std::to_string(ok) + " ok";
  for (const auto& [failure, n] : failures) summary += "; " + failure + " x" + std::to_string(n);
  SCOPED_TRACE(summary);
  EXPECT_GE(ended, kCalls);
  EXPECT_EQ(ok, ended);
  EXPECT_GT(answered_before_kill, 0);  // it was serving
  EXPECT_GE(held_at_kill, 4);          // and had calls open when it died
  EXPECT_GT(ok_before_restart, 0);
  EXPECT_GT(Calls(*replicas[0]), kCalls / 6);
  EXPECT_GT(Calls(*replicas[2]), kCalls / 6);
  EXPECT_GT(Calls(*replicas[1]), 0);  // back after its ejection
  EXPECT_EQ(client->breaker().state(SystemClock().Now()), circuit::State::kClosed);
}

}  // namespace
}  // namespace outbound::rpc
