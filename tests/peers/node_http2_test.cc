// SPDX-License-Identifier: Apache-2.0
// The client against Node 20's own http2 server (tests/peers/h2_server.js):
// the faults a stock HTTP/2 server produces — streams over its limit
// refused, REFUSED_STREAM, a connection lost with streams open — must not
// fail calls to a healthy dependency, open its breaker, or send a POST
// twice (issue 10, cases 1 and 2; issue 11, case 1).
#include <gtest/gtest.h>

#include <cstdio>
#include <future>
#include <string>
#include <vector>

#include "peer_test_support.h"

namespace outbound::peers {
namespace {

using http::Request;

class NodeHttp2Test : public PeerTestBase, public ::testing::Test {
 protected:
  // 64 calls in flight through one client, `calls` in all: every call
  // succeeds, the breaker stays closed, and the client opens no more
  // connections than `streams_per_connection` requires.
  void SixtyFourInFlight(int calls, int streams_per_connection, std::vector<std::string> args) {
    StartPeer("h2_server.js", std::move(args));
    auto client = MakeClient(PaymentsSettings());
    LoadReport report = RunInFlight(
        *client, calls, 64, [](int) { return Request::Get("/"); },
        std::chrono::seconds(calls / 50 + 30));
    nlohmann::json stats = peer->Stats();
    std::string figures = report.Summary() + "; " + log->Summary() + "; server " + stats.dump();
    std::printf("%s\n", figures.c_str());
    SCOPED_TRACE(figures);
    EXPECT_EQ(report.calls, calls);
    EXPECT_EQ(report.failed(), 0);
    EXPECT_EQ(client->breaker_state(), circuit::State::kClosed);
    EXPECT_TRUE(Transitions().empty());
    int needed = (64 + streams_per_connection - 1) / streams_per_connection;
    EXPECT_LE(stats["sessions"].get<int>(), needed);
  }
};

// The trailer section arrives apart: the body is whole, and the trailer
// never joins the headers.
TEST_F(NodeHttp2Test, TrailerFieldsArriveApartFromTheHeaders) {
  StartPeer("h2_server.js", {});
  auto client = MakeClient(PaymentsSettings());
  auto response = client->Send(Request::Get("/trailers"));
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, std::string(100, 'x'));
  EXPECT_EQ(response->header("x-checksum"), "");
  EXPECT_EQ(response->trailers.Find("x-checksum"), "sha256=abc");
  EXPECT_EQ(client->Send(Request::Get("/"))->trailers.size(), 0u);
}

// A client that goes tells Node so: GOAWAY with NO_ERROR (RFC 9113 §6.8)
// on its connection, over TLS and over h2c, and Node closes the session.
TEST_F(NodeHttp2Test, AClientThatGoesSaysGoawayFirst) {
  for (bool plain : {false, true}) {
    SCOPED_TRACE(plain ? "h2c" : "TLS");
    StartPeer("h2_server.js",
              plain ? std::vector<std::string>{"--plain"} : std::vector<std::string>{});
    http::Settings settings = PaymentsSettings();
    if (plain) {
      settings.base_url = "http://payments:8443";
      settings.tls.reset();
      settings.http2_prior_knowledge = true;
    }
    auto client = MakeClient(settings);
    ASSERT_TRUE(client->Send(Request::Get("/")));
    EXPECT_EQ(peer->Stats()["client_goaways"].get<int>(), 0);
    client.reset();
    EXPECT_TRUE(WaitUntil([&] { return peer->Stats()["open"].get<int>() == 0; }));
    nlohmann::json stats = peer->Stats();
    EXPECT_EQ(stats["client_goaways"].get<int>(), 1) << stats.dump();
    EXPECT_EQ(stats["client_goaway_errors"].get<int>(), 0) << stats.dump();
  }
}

// Settings::http2_prior_knowledge: HTTP/2 from the first byte to an http
// URL (h2c), as gRPC servers listen; 64 calls in flight share one
// connection, and trailers arrive as over TLS.
TEST_F(NodeHttp2Test, PriorKnowledgeSpeaksHttp2WithoutTls) {
  StartPeer("h2_server.js", {"--plain"});
  http::Settings settings = PaymentsSettings();
  settings.base_url = "http://payments:8443";
  settings.tls.reset();
  settings.http2_prior_knowledge = true;
  auto client = MakeClient(settings);
  auto response = client->Send(Request::Get("/trailers"));
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->version, "2");
  EXPECT_EQ(response->trailers.Find("x-checksum"), "sha256=abc");
  LoadReport report = RunInFlight(
      *client, 640, 64, [](int) { return Request::Get("/"); }, std::chrono::seconds(30));
  EXPECT_EQ(report.failed(), 0) << report.Summary();
  EXPECT_EQ(peer->Stats()["sessions"].get<int>(), 1);
}

// Node advertises no stream limit (2^32-1): one connection carries all 64.
TEST_F(NodeHttp2Test, SixtyFourInFlightOnAStockServer) { SixtyFourInFlight(3000, 1 << 30, {}); }

// The issue's own figure; labelled `long`.
TEST_F(NodeHttp2Test, SixtyFourInFlightOnAStockServerLong) {
  SixtyFourInFlight(30000, 1 << 30, {});
}

// SETTINGS_MAX_CONCURRENT_STREAMS = 16: four connections carry 64 (more
// calls wait in the client's queue); neither a stream over the limit that
// the server refuses nor a full connection is a reason for yet another.
TEST_F(NodeHttp2Test, SixtyFourInFlightWithAStreamLimitOf16) {
  SixtyFourInFlight(3000, 16, {"--max-concurrent-streams=16"});
}

// The server's SETTINGS_MAX_HEADER_LIST_SIZE (RFC 9113 §6.5.2) is the
// largest header section it takes. A request over it is its own failure:
// not sent (a server may end the whole connection for it, as grpc-go
// does), not retried, not the dependency's (ten of them leave the breaker
// closed), and the connection carries the next request.
TEST_F(NodeHttp2Test, ARequestOverTheServersHeaderListSizeIsNotSent) {
  StartPeer("h2_server.js", {"--max-header-list-size=8192"});
  auto client = MakeClient(PaymentsSettings());
  ASSERT_TRUE(client->Send(Request::Get("/")));  // the server's SETTINGS are in
  Request big = Request::Get("/");
  big.headers.emplace_back("x-pad", std::string(9000, 'p'));
  for (int i = 0; i < 10; ++i) {
    auto response = client->Send(Request(big));
    ASSERT_FALSE(response);
    EXPECT_EQ(response.error().kind(), ErrorKind::kInvalidRequest) << response.error().message();
    EXPECT_NE(response.error().message().find("SETTINGS_MAX_HEADER_LIST_SIZE"), std::string::npos)
        << response.error().message();
    EXPECT_EQ(response.error().attempts(), 1);
  }
  Request fits = Request::Get("/");
  fits.headers.emplace_back("x-pad", std::string(7000, 'p'));
  auto response = client->Send(std::move(fits));
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(client->breaker_state(), circuit::State::kClosed);
  EXPECT_TRUE(Transitions().empty());
  nlohmann::json stats = peer->Stats();
  EXPECT_EQ(stats["streams"].get<int>(), 2) << stats.dump();
  EXPECT_EQ(stats["sessions"].get<int>(), 1) << stats.dump();
}

// A server that takes a header section of any size, and a request whose
// section is over the 64 KiB nghttp2 sends: nghttp2 refuses to send it, on
// this connection or any other, so it is the request's own failure, not
// retried, and the connection carries the next request.
TEST_F(NodeHttp2Test, ARequestHeaderSectionTooLargeToSendIsNotRetried) {
  StartPeer("h2_server.js", {"--max-header-list-size=1000000"});
  auto client = MakeClient(PaymentsSettings());
  ASSERT_TRUE(client->Send(Request::Get("/")));  // the server's SETTINGS are in
  Request big = Request::Get("/");
  big.headers.emplace_back("x-pad", std::string(70000, 'p'));
  auto response = client->Send(std::move(big));
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().kind(), ErrorKind::kInvalidRequest) << response.error().message();
  EXPECT_EQ(response.error().attempts(), 1);
  ASSERT_TRUE(client->Send(Request::Get("/")));
  EXPECT_TRUE(Transitions().empty());
  nlohmann::json stats = peer->Stats();
  EXPECT_EQ(stats["streams"].get<int>(), 2) << stats.dump();
  EXPECT_EQ(stats["sessions"].get<int>(), 1) << stats.dump();
}

// Node's nghttp2 (1.57 and later, against CVE-2023-44487) answers a client
// that has reset more than 1 000 streams on a connection, then more than
// 33 a second, with GOAWAY INTERNAL_ERROR naming the last stream it read.
// Half the calls here ask for a body over the client's limit, each ending
// with its stream reset; the request above that last stream, in flight as
// the GOAWAY came, did nothing to cause it: it goes again on a new
// connection and is answered like every other.
TEST_F(NodeHttp2Test, AServerLimitingResetsFailsNoRequestForThem) {
  StartPeer("h2_server.js", {"--flood-bytes=2000"});
  http::Settings settings = PaymentsSettings();
  settings.max_response_bytes = 1000;
  auto client = MakeClient(std::move(settings));
  constexpr int kCalls = 8000;  // a few connections ended so
  LoadReport report = RunInFlight(*client, kCalls, 32,
                                  [](int i) { return Request::Get(i % 2 == 0 ? "/flood" : "/"); });
  nlohmann::json stats = peer->Stats();
  std::string figures = report.Summary() + "; " + log->Summary() + "; server " + stats.dump();
  SCOPED_TRACE(figures);
  EXPECT_EQ(report.calls, kCalls);
  EXPECT_EQ(report.ok, kCalls / 2);
  EXPECT_EQ(report.errors[ErrorKind::kResponseTooLarge], kCalls / 2);
  // The server's limit was met: it ended a connection at least once.
  EXPECT_GE(stats["sessions"].get<int>(), 2);
  EXPECT_TRUE(Transitions().empty());
}

// A server that refuses every stream, with a breaker that never opens: what
// the transport and the retry layer alone cost the server. A refused stream
// may be retried (nothing was processed), but within the retry budget, and
// every stream the server sees is an attempt the client recorded.
TEST_F(NodeHttp2Test, EveryStreamRefusedCostsTheServerAtMost1Point2StreamsPerCall) {
  StartPeer("h2_server.js", {"--refuse-every=1"});
  http::Settings settings = PaymentsSettings();
  settings.breaker_policy = NeverTrips();
  auto client = MakeClient(settings);
  constexpr int kCalls = 100;
  LoadReport report = RunInFlight(*client, kCalls, 8, [](int) { return Request::Get("/"); });
  nlohmann::json stats = peer->Stats();
  std::string figures = report.Summary() + "; " + log->Summary() + "; server " + stats.dump();
  std::printf("%s\n", figures.c_str());
  SCOPED_TRACE(figures);
  EXPECT_EQ(report.calls, kCalls);
  EXPECT_EQ(report.ok, 0);
  EXPECT_LE(stats["streams"].get<double>() / kCalls, 1.2);
  EXPECT_EQ(log->attempts(), stats["streams"].get<int>());  // no resend unseen
}

// One stream in five refused: a call succeeds on another stream unless
// every attempt it was allowed happened to be refused, which under a
// loaded machine's scheduling one in a thousand may; the breaker stays
// closed, and every stream is an attempt the client recorded.
TEST_F(NodeHttp2Test, SomeStreamsRefusedCallsSucceedAndTheBreakerStaysClosed) {
  StartPeer("h2_server.js", {"--refuse-every=5"});
  auto client = MakeClient(PaymentsSettings());
  constexpr int kCalls = 1000;
  LoadReport report = RunInFlight(*client, kCalls, 16, [](int) { return Request::Get("/"); });
  nlohmann::json stats = peer->Stats();
  std::string figures = report.Summary() + "; " + log->Summary() + "; server " + stats.dump();
  std::printf("%s\n", figures.c_str());
  SCOPED_TRACE(figures);
  EXPECT_EQ(report.calls, kCalls);
  EXPECT_LE(report.failed(), kCalls / 100);
  if (report.failed() > 0) {
    EXPECT_EQ(report.errors[ErrorKind::kTransport], report.failed());
    EXPECT_NE(report.first_message[ErrorKind::kTransport].find("refused the stream"),
              std::string::npos);
  }
  EXPECT_EQ(client->breaker_state(), circuit::State::kClosed);
  EXPECT_TRUE(Transitions().empty());
  EXPECT_EQ(log->attempts(), stats["streams"].get<int>());
}

// A refused stream was not processed, so even a POST without an
// Idempotency-Key is retried on another stream — as an attempt the client
// records — and each body is processed exactly once.
TEST_F(NodeHttp2Test, RefusedPostsAreRetriedAndEachBodyIsProcessedOnce) {
  StartPeer("h2_server.js", {"--refuse-every=5"});
  auto client = MakeClient(PaymentsSettings());
  constexpr int kCalls = 100;
  LoadReport report = RunInFlight(*client, kCalls, 4, [](int i) {
    return Request::Post("/charges", "charge-" + std::to_string(i));
  });
  nlohmann::json stats = peer->Stats();
  std::string figures = report.Summary() + "; " + log->Summary() + "; server " + stats.dump();
  std::printf("%s\n", figures.c_str());
  SCOPED_TRACE(figures);
  EXPECT_EQ(report.failed(), 0);
  EXPECT_EQ(log->attempts(), stats["streams"].get<int>());
  int processed_once = 0;
  for (int i = 0; i < kCalls; ++i) {
    std::string body = "charge-" + std::to_string(i);
    if (stats["bodies"].contains(body) && stats["bodies"][body]["received"].get<int>() == 1) {
      ++processed_once;
    }
  }
  EXPECT_EQ(processed_once, kCalls);
}

// A warm call, then 10 slow calls on the same HTTP/2 connection; the
// connection is lost while they are open. The server is healthy: every call
// succeeds on a fresh connection and the breaker stays closed.
class ConnectionLossTest : public NodeHttp2Test, public ::testing::WithParamInterface<const char*> {
 protected:
  void LoseTheConnectionUnderTenSlowCalls(circuit::Policy policy) {
    // The connection's second stream (the first slow call) arms the loss
    // 150 ms later, while the slow calls (answered after 300 ms) are open.
    StartPeer("h2_server.js", {"--delay-ms=300", "--lose-after-streams=2", "--lose-delay-ms=150",
                               "--lose-connections=1", std::string("--lose-how=") + GetParam()});
    http::Settings settings = PaymentsSettings();
    settings.breaker_policy = std::move(policy);
    auto client = MakeClient(settings);
    auto warm = client->Send(Request::Get("/"));
    ASSERT_TRUE(warm && warm->status == 200);

    std::vector<std::future<Result<http::Response>>> slow;
    for (int i = 0; i < 10; ++i) slow.push_back(client->SendAsync(Request::Get("/slow")));
    LoadReport report;
    report.Add(warm);
    for (auto& call : slow) report.Add(call.get());
    nlohmann::json stats = peer->Stats();
    std::string figures = report.Summary() + "; " + log->Summary() + "; server " + stats.dump();
    std::printf("%s\n", figures.c_str());
    SCOPED_TRACE(figures);
    ASSERT_EQ(stats["lost"].get<int>(), 1);  // the fault happened
    EXPECT_EQ(report.ok, 11);
    EXPECT_EQ(client->breaker_state(), circuit::State::kClosed);
    EXPECT_TRUE(Transitions().empty());
  }
};

TEST_P(ConnectionLossTest, AllCallsSucceedOnRetryAndTheBreakerStaysClosed) {
  LoseTheConnectionUnderTenSlowCalls(circuit::DefaultPolicy());
}

// A breaker that opens on its second failure: the lost connection must
// count as one failure at most.
TEST_P(ConnectionLossTest, OneLostConnectionIsAtMostOneBreakerFailure) {
  LoseTheConnectionUnderTenSlowCalls(TripsOnTwoFailures());
}

INSTANTIATE_TEST_SUITE_P(Peers, ConnectionLossTest, ::testing::Values("close", "reset"),
                         PeerParamName);

// A POST without an Idempotency-Key read whole by the server, which then
// loses the connection: the request may have been processed, so it is not
// sent again, and the call fails with a transport error.
TEST_F(NodeHttp2Test, PostReadWholeThenConnectionLostIsNotSentAgain) {
  StartPeer("h2_server.js", {"--drop-post", "--lose-how=reset"});
  http::Settings settings = PaymentsSettings();
  settings.breaker_policy = NeverTrips();  // every POST fails: the wire is under test here
  auto client = MakeClient(settings);
  for (int i = 0; i < 6; ++i) {
    std::string body = "charge-" + std::to_string(i);
    auto response = client->Send(Request::Post("/charges", body));
    nlohmann::json stats = peer->Stats();
    SCOPED_TRACE(body + "; " + log->Summary() + "; server " + stats.dump());
    EXPECT_EQ(stats["bodies"][body]["received"].get<int>(), 1);
    ASSERT_FALSE(response) << "status " << response->status;
    EXPECT_EQ(response.error().kind(), ErrorKind::kTransport) << response.error().message();
  }
}

// A server that completes its handshake (ALPN h2) and then says nothing, not
// even its SETTINGS: each attempt waits out its attempt timeout, and the
// next one is still sent (on a connection of its own if need be), rather
// than waiting in the client's queue behind a connection that never opens.
TEST_F(NodeHttp2Test, AServerThatNeverSendsItsSettingsDoesNotHoldLaterAttempts) {
  StartPeer("hostile_h2.js", {"--mode=silent"});
  http::Settings settings = PaymentsSettings();
  settings.attempt_timeout = std::chrono::milliseconds(100);
  settings.timeout = std::chrono::milliseconds(1000);
  settings.backoff_base = settings.backoff_max = std::chrono::milliseconds(1);
  settings.breaker_policy = NeverTrips();
  auto client = MakeClient(settings);
  auto response = client->Send(Request::Get("/"));
  nlohmann::json stats = peer->Stats();
  SCOPED_TRACE(log->Summary() + "; server " + stats.dump());
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().kind(), ErrorKind::kDeadline) << response.error().message();
  // MaxAttempts is 3: every one of them reached a connection.
  EXPECT_EQ(response.error().attempts(), 3);
}

}  // namespace
}  // namespace outbound::peers
