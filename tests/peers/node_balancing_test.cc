// SPDX-License-Identifier: Apache-2.0
// Settings::balancing against three of Node 20's own http2 servers
// (tests/peers/h2_server.js) on 127.0.0.1, 127.0.0.2 and 127.0.0.3, on
// the real clock: calls spread over all three; one replica killed in the
// middle of 30 000 calls (its connection lost with streams open, then every
// dial refused) and started again on its port costs no call, and once its
// short ejection is over it answers calls again; one replica answering
// 502 at once while the others take 20 ms is ejected, costs no call and
// leaves the breaker closed.
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <thread>
#include <vector>

#include "peer_test_support.h"

namespace outbound::peers {
namespace {

using http::Request;
using std::chrono::milliseconds;

class NodeBalancingTest : public PeerTestBase, public ::testing::Test {
 protected:
  std::unique_ptr<NodePeer> StartReplica(int n, std::uint16_t port = 0,
                                         std::vector<std::string> args = {}) {
    args.push_back("--host=127.0.0." + std::to_string(n));
    if (port != 0) args.push_back("--port=" + std::to_string(port));
    return std::make_unique<NodePeer>("h2_server.js", files.Args(std::move(args)));
  }

  // payments:8443 leads to each of `replicas`, the nth on 127.0.0.n.
  void Name(const std::vector<std::unique_ptr<NodePeer>>& replicas) {
    std::vector<Endpoint> endpoints;
    for (std::size_t n = 1; n <= replicas.size(); ++n) {
      endpoints.push_back({"127.0.0." + std::to_string(n), replicas[n - 1]->port()});
    }
    network.Set("payments", 8443, endpoints);
  }

  static int Answered(NodePeer& replica) { return replica.Stats()["answered"].get<int>(); }
};

TEST_F(NodeBalancingTest, AReplicaKilledAndRestartedDuringThirtyThousandCallsCostsNoCall) {
  std::vector<std::unique_ptr<NodePeer>> replicas;
  for (int n = 1; n <= 3; ++n) replicas.push_back(StartReplica(n));
  Name(replicas);
  http::Settings settings = PaymentsSettings();
  settings.balancing = http::Balancing{};
  // Short, so the replica started again is probed back within the run.
  settings.balancing->outlier_detection.base_ejection = milliseconds(100);
  settings.balancing->outlier_detection.max_ejection = milliseconds(300);
  auto client = MakeClient(settings);
  const std::uint16_t killed_port = replicas[1]->port();

  constexpr int kCalls = 30000;
  constexpr int kInFlight = 64;
  std::vector<std::future<Result<http::Response>>> ring(kInFlight);
  LoadReport report;
  int answered_before_restart = 0;
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int i = 0;; ++i) {
    auto& slot = ring[i % kInFlight];
    if (slot.valid()) report.Add(slot.get());
    if (i == kCalls / 3) replicas[1].reset();  // killed: its connection drops
    if (i == 2 * kCalls / 3) {
      replicas[1] = StartReplica(2, killed_port);
      answered_before_restart = report.ok;
    }
    // Past the 30 000, until the restarted replica has answered a call.
    bool back = i > 2 * kCalls / 3 && i % 1000 == 0 && Answered(*replicas[1]) > 0;
    if ((i >= kCalls && back) || std::chrono::steady_clock::now() > give_up) break;
    slot = client->SendAsync(Request::Get("/"));
  }
  for (auto& slot : ring) {
    if (slot.valid()) report.Add(slot.get());
  }
  SCOPED_TRACE(report.Summary() + "; " + log->Summary());
  EXPECT_GE(report.calls, kCalls);
  EXPECT_EQ(report.failed(), 0);
  EXPECT_GT(answered_before_restart, 0);
  EXPECT_GT(Answered(*replicas[0]), kCalls / 6);
  EXPECT_GT(Answered(*replicas[2]), kCalls / 6);
  EXPECT_GT(Answered(*replicas[1]), 0);  // back after its ejection
}

// One replica answers 502 at once (a sidecar proxy whose app is gone)
// while the other two take 20 ms: with 32 calls in flight its failures
// are the first answers back. Its ejection takes them, so the breaker (at
// five failures in a row) stays closed, and every call is answered by
// another replica. (Three nginx grpc_pass replicas, one app gone: 2 984 of
// 3 000 calls were rejected by an open breaker before.)
TEST_F(NodeBalancingTest, OneReplicaFailingFastCostsNoCallAndLeavesTheBreakerClosed) {
  std::vector<std::unique_ptr<NodePeer>> replicas;
  replicas.push_back(StartReplica(1, 0, {"--delay-ms=20", "--delay-percent=100"}));
  replicas.push_back(StartReplica(2, 0, {"--status=502"}));
  replicas.push_back(StartReplica(3, 0, {"--delay-ms=20", "--delay-percent=100"}));
  Name(replicas);
  http::Settings settings = PaymentsSettings();
  settings.balancing = http::Balancing{};
  auto client = MakeClient(settings);

  constexpr int kCalls = 3000;
  constexpr int kInFlight = 32;
  std::vector<std::future<Result<http::Response>>> ring(kInFlight);
  LoadReport report;
  for (int i = 0; i < kCalls + kInFlight; ++i) {
    auto& slot = ring[i % kInFlight];
    if (slot.valid()) report.Add(slot.get());
    if (i < kCalls) slot = client->SendAsync(Request::Get("/"));
  }
  SCOPED_TRACE(report.Summary() + "; " + log->Summary());
  EXPECT_EQ(report.calls, kCalls);
  EXPECT_EQ(report.failed(), 0);
  EXPECT_EQ(client->breaker_state(), circuit::State::kClosed);
  EXPECT_GE(Answered(*replicas[1]), 5);  // its run, until ejected
  EXPECT_EQ(Answered(*replicas[0]) + Answered(*replicas[2]), kCalls);
}

}  // namespace
}  // namespace outbound::peers
