// SPDX-License-Identifier: Apache-2.0
// The gRPC client against Node 20's own http2 server (tests/peers/
// h2_server.js, TLS, ALPN h2): a server that knows nothing of gRPC, so
// nothing of the grpc-timeout each attempt carries. It takes the attempt's
// stream and holds it; only the client's own deadline (gRPC's deadline
// checks are off on the client's channel: see AttemptContext) can end the
// call.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "methods.h"
#include "node_peer.h"
#include "outbound/rpc/client.h"
#include "outbound/testing/fixed_random.h"
#include "outbound/testing/manual_clock.h"
#include "outbound/testing/network_map.h"
#include "outbound/testing/test_ca.h"

namespace outbound::rpc {
namespace {

TEST(RpcNodeH2Peer, AnAttemptTheServerHoldsEndsAtTheClientsOwnDeadline) {
  testing::TestCA ca;
  peers::PeerFiles files(ca.IssueServer({"backend"}));
  // Every stream answered a minute late: long after the call's Timeout.
  peers::NodePeer peer("h2_server.js", files.Args({"--delay-ms=60000", "--delay-percent=100"}));
  testing::ManualClock clock;
  testing::NetworkMap network;
  testing::FixedRandom random(0.0);
  Runtime runtime;
  runtime.clock = &clock;
  runtime.network = &network;
  runtime.random = &random;
  network.Add("backend", 9090, "127.0.0.1", peer.port());
  Settings settings = DefaultSettings();
  settings.addr = "backend:9090";
  settings.tls = TlsSettings{ca.pem(), "", ""};
  settings.timeout = std::chrono::milliseconds(300);
  auto client = Client::Create(runtime, settings);
  ASSERT_TRUE(client) << client.error().message();

  auto call = std::async(std::launch::async, [&] { return (*client)->Call(kSay, ""); });
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (peer.Stats().at("streams").get<int>() == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  clock.Advance(std::chrono::milliseconds(300));  // the call's Timeout, on its clock
  ASSERT_EQ(call.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "nothing ended the attempt the server holds";
  Reply reply = call.get();
  EXPECT_EQ(reply.status.code, Code::kDeadlineExceeded) << reply.status.message;
  EXPECT_EQ(reply.attempts, 1);
  EXPECT_EQ((*client)->breaker().counts(clock.Now()).failures, 1);
  nlohmann::json stats = peer.Stats();
  EXPECT_EQ(stats.at("streams").get<int>(), 1);
  EXPECT_EQ(stats.at("delayed").get<int>(), 1);
  EXPECT_EQ(stats.at("answered").get<int>(), 0);
}

}  // namespace
}  // namespace outbound::rpc
