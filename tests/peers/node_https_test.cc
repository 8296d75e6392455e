// SPDX-License-Identifier: Apache-2.0
// The client against Node 20's own HTTP/1.1 server over TLS
// (tests/peers/h1_server.js), keep-alive as Node does it. The server reads a
// request on a reused connection whole, then closes or resets the
// connection without answering: the client cannot know whether it was
// processed. A request not safe to repeat is written at most once, and every
// write of a request is an attempt the retry layer decided and on_attempt
// saw (issue 11, case 1).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "peer_test_support.h"

namespace outbound::peers {
namespace {

using http::Request;

class NodeHttpsTest : public PeerTestBase, public ::testing::TestWithParam<const char*> {
 protected:
  std::unique_ptr<http::Client> DroppingServerAndClient(const std::string& methods) {
    StartPeer("h1_server.js", {std::string("--drop=") + GetParam(), "--drop-methods=" + methods});
    http::Settings settings = PaymentsSettings();
    // Every dropped request is a failure: the wire is under test, not the breaker.
    settings.breaker_policy = NeverTrips();
    return MakeClient(settings);
  }
};

// A warm GET leaves a kept-alive connection in the pool; the POST then goes
// on it and is dropped. Six times: each body reaches the server at most
// once, and a call the server never answered fails with a transport error.
TEST_P(NodeHttpsTest, PostDroppedOnAReusedConnectionIsNotSentAgain) {
  auto client = DroppingServerAndClient("POST");
  for (int i = 0; i < 6; ++i) {
    auto warm = client->Send(Request::Get("/warm"));
    ASSERT_TRUE(warm && warm->status == 200);
    std::string body = "charge-" + std::to_string(i);
    auto response = client->Send(Request::Post("/charges", body));
    nlohmann::json stats = peer->Stats();
    nlohmann::json record = stats["bodies"][body];
    SCOPED_TRACE(body + "; " + log->Summary() + "; server " + stats.dump());
    EXPECT_EQ(record["received"].get<int>(), 1);
    if (record["answered"].get<int>() == 0) {
      ASSERT_FALSE(response) << "status " << response->status << " for a request never answered";
      EXPECT_EQ(response.error().kind(), ErrorKind::kTransport) << response.error().message();
    }
  }
  // The scenario happened: POSTs went on reused connections and were dropped.
  EXPECT_GT(peer->Stats()["dropped"].get<int>(), 0);
}

// A GET is safe to repeat, so it may be sent again — but only as an attempt
// the retry layer decided: the server sees exactly the attempts on_attempt
// saw (a client that resends silently, as libcurl does, doubles them), and every call
// succeeds on a fresh connection.
TEST_P(NodeHttpsTest, GetDroppedOnAReusedConnectionIsResentOnlyAsARecordedAttempt) {
  auto client = DroppingServerAndClient("GET");
  LoadReport report;
  for (int i = 0; i < 6; ++i) report.Add(client->Send(Request::Get("/")));
  nlohmann::json stats = peer->Stats();
  std::string figures = report.Summary() + "; " + log->Summary() + "; server " + stats.dump();
  std::printf("%s\n", figures.c_str());
  SCOPED_TRACE(figures);
  EXPECT_EQ(report.ok, 6);
  EXPECT_GT(stats["dropped"].get<int>(), 0);
  EXPECT_EQ(stats["requests"].get<int>(), log->attempts());
}

// A kept-alive connection Node ends under a request is the connection's
// end, not the dependency's failure: with the default breaker, thirty
// GETs, every other one dropped on its reused connection (half the
// breaker's window), all succeed, each sent again, and the breaker stays
// closed.
TEST_P(NodeHttpsTest, GetsDroppedOnReusedConnectionsLeaveTheBreakerClosed) {
  StartPeer("h1_server.js", {std::string("--drop=") + GetParam(), "--drop-methods=GET"});
  auto client = MakeClient(PaymentsSettings());
  LoadReport report;
  for (int i = 0; i < 30; ++i) report.Add(client->Send(Request::Get("/")));
  nlohmann::json stats = peer->Stats();
  SCOPED_TRACE(report.Summary() + "; " + log->Summary() + "; server " + stats.dump());
  EXPECT_EQ(report.ok, 30);
  EXPECT_EQ(stats["dropped"].get<int>(), 29);
  EXPECT_EQ(stats["requests"].get<int>(), log->attempts());
  EXPECT_TRUE(Transitions().empty());
}

// A chunked body's trailer section is read and dropped: the body is whole,
// the trailer never joins the headers, and the connection is used again.
class NodeHttpsTrailersTest : public PeerTestBase, public ::testing::Test {};

TEST_F(NodeHttpsTrailersTest, TrailerFieldsDoNotJoinTheHeaders) {
  StartPeer("h1_server.js", {});
  auto client = MakeClient(PaymentsSettings());
  for (int i = 0; i < 2; ++i) {
    auto response = client->Send(Request::Get("/trailers"));
    ASSERT_TRUE(response) << response.error().message();
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->version, "1.1");
    EXPECT_EQ(response->body, std::string(100, 'x'));
    EXPECT_EQ(response->header("x-checksum"), "");
  }
  EXPECT_EQ(peer->Stats()["connections"].get<int>(), 1);
}

// A body that runs to the connection's end is whole only if the end is
// orderly (RFC 9112 §9.8): Node's FIN after 50 bytes gives the 50 bytes;
// its TCP RST after the same 50 is a body cut short, never a success.
class NodeHttpsToCloseTest : public PeerTestBase, public ::testing::Test {};

TEST_F(NodeHttpsToCloseTest, ABodyToTheConnectionsEndIsWholeAfterAFinAndCutShortByAReset) {
  StartPeer("h1_server.js", {});
  http::Settings settings = PaymentsSettings();
  settings.max_attempts = 1;
  auto client = MakeClient(settings);
  auto closed = client->Send(Request::Get("/to-close"));
  ASSERT_TRUE(closed) << closed.error().message();
  EXPECT_EQ(closed->body, std::string(50, 'x'));
  EXPECT_EQ(closed->header("content-length"), "");
  EXPECT_EQ(closed->header("transfer-encoding"), "");
  auto reset = client->Send(Request::Get("/to-reset"));
  ASSERT_FALSE(reset) << "a body cut by a reset taken whole: " << reset->body.size() << " bytes";
  // ("cut short" once the half was read; a loop slower than the reset's
  // 50 ms reads the reset first, and says so.)
  EXPECT_EQ(reset.error().kind(), ErrorKind::kTransport) << reset.error().message();
}

INSTANTIATE_TEST_SUITE_P(Peers, NodeHttpsTest, ::testing::Values("close", "reset"), PeerParamName);

}  // namespace
}  // namespace outbound::peers
