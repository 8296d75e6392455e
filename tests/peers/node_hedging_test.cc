// SPDX-License-Identifier: Apache-2.0
// Hedging against a dependency nobody here wrote: Node 20's own http2
// server with a scripted slow tail (tests/peers/tail_h2_server.js: the
// first request for each /slow/ path takes 2 s, every other one 10 ms).
// Every slow call must get a hedge, the hedge must answer first, and the
// slow first attempt must be cancelled on the wire (RST_STREAM, which the
// server sees); the extra attempts stay within the hedge share's bound.
// Counts, not times: the peer's timers are Node's, in real time.
#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <string>

#include "peer_test_support.h"

namespace outbound::peers {
namespace {

using http::Request;

constexpr int kHedgedCalls = 200;
constexpr int kSlowEvery = 50;  // 2 % of the calls

class NodeHedgingTest : public PeerTestBase, public ::testing::Test {};

TEST_F(NodeHedgingTest, EverySlowCallGetsAHedgeThatAnswersFirst) {
  StartPeer("tail_h2_server.js", {"--fast-ms=10", "--slow-ms=2000"});
  http::Settings settings = PaymentsSettings();
  settings.hedging = http::Hedging{.delay = std::chrono::milliseconds(150)};
  std::mutex records_mu;
  std::set<std::string> won_by_hedge;  // the URLs whose hedge answered first
  int hedges = 0;
  settings.observers.push_back(http::ObserveAttempts([&](const http::AttemptRecord& r) {
    std::lock_guard lock(records_mu);
    hedges += r.hedge ? 1 : 0;
    if (r.hedge && r.reason.kind == retry::ReasonKind::kSuccess) {
      won_by_hedge.insert(std::string(r.url));
    }
  }));
  auto client = MakeClient(std::move(settings));
  ASSERT_TRUE(client);
  // Connected first: a first call slowed past the hedge delay by its dial
  // and handshake would hedge, and a hedge cancelled before it is written
  // is an attempt the server never sees.
  auto warmed = client->Warm().get();
  ASSERT_TRUE(warmed) << warmed.error().message();

  std::set<std::string> slow_urls;
  for (int i = 0; i < kHedgedCalls; ++i) {
    bool slow = i % kSlowEvery == kSlowEvery / 2;
    std::string path = (slow ? "/slow/" : "/fast/") + std::to_string(i);
    auto result = client->Send(Request::Get(path));
    ASSERT_TRUE(result) << result.error().message();
    EXPECT_EQ(result->body, path);
    if (slow) slow_urls.insert("https://payments:8443" + path);
  }
  nlohmann::json stats = peer->Stats();
  SCOPED_TRACE(stats.dump());
  std::lock_guard lock(records_mu);
  ASSERT_EQ(slow_urls.size(), static_cast<std::size_t>(kHedgedCalls / kSlowEvery));
  // Every slow call was answered by its hedge.
  for (const std::string& url : slow_urls) EXPECT_EQ(won_by_hedge.count(url), 1u) << url;
  EXPECT_EQ(stats["slow"].get<int>(), kHedgedCalls / kSlowEvery);
  // Each hedge is one more request the server saw; no more than the
  // share allows (kHedgeBurst, plus 5 % of the calls).
  EXPECT_EQ(stats["streams"].get<int>(), kHedgedCalls + hedges);
  EXPECT_GE(hedges, kHedgedCalls / kSlowEvery);
  EXPECT_LE(hedges, http::kHedgeBurst + kHedgedCalls / 20);
  // The slow first attempts were cancelled on the wire, not left to run.
  EXPECT_GE(stats["closed_unanswered"].get<int>(), kHedgedCalls / kSlowEvery);
}

}  // namespace
}  // namespace outbound::peers
