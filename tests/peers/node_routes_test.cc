// SPDX-License-Identifier: Apache-2.0
// Policy per route against a dependency nobody here wrote: Node 20's own
// http2 server with a scripted slow tail (tests/peers/tail_h2_server.js:
// the first request for each /slow/ path takes 2 s, every other one
// 10 ms). Counts and outcomes, not times: the peer's timers are Node's, in
// real time.
#include <gtest/gtest.h>

#include <string>

#include "peer_test_support.h"

namespace outbound::peers {
namespace {

using http::Request;
using std::chrono::milliseconds;

class NodeRoutesTest : public PeerTestBase, public ::testing::Test {};

// One client, three routes: /slow/cut has its attempts cut at 300 ms and
// tried again (the second attempt is fast), /slow/short has 500 ms for the
// whole call and one attempt, and /slow/wait has the client's own rules,
// under which the 2 s answer is simply waited for.
TEST_F(NodeRoutesTest, EachRoutesRulesHoldForItsOwnCallsInOneClient) {
  StartPeer("tail_h2_server.js", {"--fast-ms=10", "--slow-ms=2000"});
  http::Settings settings = PaymentsSettings();
  settings.routes = {
      {.path_prefix = "/slow/cut", .attempt_timeout = milliseconds(300)},
      {.path_prefix = "/slow/short", .timeout = milliseconds(500), .max_attempts = 1},
  };
  auto client = MakeClient(std::move(settings));
  ASSERT_TRUE(client);
  // Connected first: an attempt's 300 ms counts its dial and handshake, which
  // a sanitizer build can make slow enough to cut the first attempt early.
  auto warmed = client->Warm().get();
  ASSERT_TRUE(warmed) << warmed.error().message();

  auto cut = client->Send(Request::Get("/slow/cut/1"));
  ASSERT_TRUE(cut) << cut.error().message();
  EXPECT_EQ(cut->body, "/slow/cut/1");
  EXPECT_EQ(cut->attempts, 2);

  auto shortened = client->Send(Request::Get("/slow/short/1"));
  ASSERT_FALSE(shortened);
  EXPECT_EQ(shortened.error().kind(), ErrorKind::kDeadline) << shortened.error().message();
  EXPECT_EQ(shortened.error().attempts(), 1);

  auto waited = client->Send(Request::Get("/slow/wait/1"));
  ASSERT_TRUE(waited) << waited.error().message();
  EXPECT_EQ(waited->attempts, 1);

  nlohmann::json stats = peer->Stats();
  SCOPED_TRACE(stats.dump());
  EXPECT_EQ(stats["streams"].get<int>(), 4);  // cut twice, short once, wait once
  EXPECT_EQ(stats["slow"].get<int>(), 3);
  // The cut attempt and the short call were cancelled on the wire.
  EXPECT_EQ(stats["closed_unanswered"].get<int>(), 2);
}

}  // namespace
}  // namespace outbound::peers
