// SPDX-License-Identifier: Apache-2.0
// The FakeServer, seen by a client nobody here wrote: the curl command.
// Each test names the dependency `payments:8443` and reaches the server on
// loopback through --connect-to, trusting only the test's CA.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "outbound/testing/fake_server.h"
#include "outbound/testing/manual_clock.h"
#include "outbound/testing/test_ca.h"
#include "test_support.h"

namespace outbound::testing {
namespace {

using std::chrono::seconds;

class FakeServerCurlTest : public ::testing::Test {
 protected:
  std::unique_ptr<FakeServer> Serve(Handler handler, ServerTls tls) {
    auto server =
        FakeServer::Start({.tls = std::move(tls), .handler = std::move(handler), .clock = &clock});
    EXPECT_TRUE(server) << server.error().message();
    return std::move(*server);
  }
  std::unique_ptr<FakeServer> Serve(Handler handler) {
    return Serve(std::move(handler), ServerTls{ca.IssueServer({"payments"})});
  }

  // curl against https://payments:8443<path>; prints "<http_version> <status>".
  CommandResult Curl(const FakeServer& server, const std::string& path,
                     const std::string& options = "") {
    std::string cafile = dir.Write("ca.pem", ca.pem());
    return RunCommand("curl -sS -o /dev/null -w '%{http_version} %{http_code}' --cacert " + cafile +
                      " --connect-to payments:8443:127.0.0.1:" + std::to_string(server.port()) +
                      " " + options + " https://payments:8443" + path + " 2>/dev/null");
  }

  TempDir dir;
  TestCA ca;
  ManualClock clock;
};

TEST_F(FakeServerCurlTest, NegotiatesHttp2ByAlpn) {
  auto server = Serve([](const ServerRequest& r) {
    return Reply::Ok("version " + r.version).Header("X-Seen", r.method);
  });
  CommandResult result = Curl(*server, "/charges/1", "--http2");
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.output, "2 200");
  auto requests = server->requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].version, "2");
  EXPECT_EQ(requests[0].target, "/charges/1");
  EXPECT_EQ(requests[0].header("Host"), "payments:8443");
}

TEST_F(FakeServerCurlTest, ServesHttp11WhenAsked) {
  auto server = Serve([](const ServerRequest&) { return Reply::Ok("hi"); });
  CommandResult result = Curl(*server, "/", "--http1.1");
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.output, "1.1 200");
  EXPECT_EQ(server->requests().at(0).version, "1.1");
}

TEST_F(FakeServerCurlTest, RecordsMethodHeadersAndBody) {
  auto server = Serve([](const ServerRequest&) { return Reply::Status(201); });
  for (const char* protocol : {"--http1.1", "--http2"}) {
    CommandResult result =
        Curl(*server, "/charges",
             std::string(protocol) + " -X POST -H 'Idempotency-Key: k1' --data-binary amount=5");
    EXPECT_EQ(result.exit_code, 0);
  }
  auto requests = server->requests();
  ASSERT_EQ(requests.size(), 2u);
  for (const ServerRequest& r : requests) {
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(r.header("idempotency-key"), "k1");
    EXPECT_EQ(r.body, "amount=5");
  }
}

TEST_F(FakeServerCurlTest, MutualTlsAcceptsTheClientCertificateAndRefusesWithout) {
  ServerTls tls{ca.IssueServer({"payments"})};
  tls.client_ca_pem = ca.pem();
  auto server = Serve([](const ServerRequest&) { return Reply::Ok(); }, tls);
  Certificate client = ca.IssueClient("checkout");
  std::string cert = dir.Write("client.pem", client.cert_pem);
  std::string key = dir.Write("client.key", client.key_pem);
  EXPECT_EQ(Curl(*server, "/", "--cert " + cert + " --key " + key).output, "2 200");
  CommandResult without = Curl(*server, "/");
  EXPECT_NE(without.exit_code, 0);
  EXPECT_EQ(server->request_count(), 1u);
}

TEST_F(FakeServerCurlTest, ShortBodyFailsWithPartialFile) {
  auto server = Serve([](const ServerRequest&) { return Reply::ShortBody(5, "0123456789"); });
  EXPECT_EQ(Curl(*server, "/", "--http1.1").exit_code, 18);  // CURLE_PARTIAL_FILE
}

TEST_F(FakeServerCurlTest, TruncatedChunkedBodyFails) {
  auto server = Serve([](const ServerRequest&) { return Reply::TruncateChunked(4, "0123456789"); });
  EXPECT_EQ(Curl(*server, "/", "--http1.1").exit_code, 18);
}

TEST_F(FakeServerCurlTest, ResetMidBodyFailsOnBothProtocols) {
  auto server =
      Serve([](const ServerRequest&) { return Reply::ResetAfter(3, std::string(100000, 'x')); });
  EXPECT_EQ(Curl(*server, "/", "--http1.1").exit_code, 56);  // CURLE_RECV_ERROR
  EXPECT_EQ(Curl(*server, "/", "--http2").exit_code, 92);    // CURLE_HTTP2_STREAM
}

TEST_F(FakeServerCurlTest, RefusedStreamAndClosedConnectionFail) {
  auto refuse = Serve([](const ServerRequest&) { return Reply::Reset(7); });
  // curl 7.88 reports a REFUSED_STREAM as a receive error.
  EXPECT_EQ(Curl(*refuse, "/", "--http2").exit_code, 56);
  auto close = Serve([](const ServerRequest&) { return Reply::Close(); });
  EXPECT_EQ(Curl(*close, "/", "--http1.1").exit_code, 52);  // CURLE_GOT_NOTHING
}

TEST_F(FakeServerCurlTest, HungRequestTimesOutAndTheServerSeesItCancelled) {
  auto server = Serve([](const ServerRequest&) { return Reply::Hang(); });
  EXPECT_EQ(Curl(*server, "/", "--http2 --max-time 1").exit_code, 28);
  EXPECT_TRUE(server->WaitFor([](const FakeServer& s) { return s.cancelled_requests() == 1; }));
}

TEST_F(FakeServerCurlTest, HeaderDelayAndTrickleRunOnTheServersClock) {
  auto server = Serve([](const ServerRequest&) {
    return Reply::Trickle("abcdef", 2, seconds(1)).DelayHeaders(seconds(5));
  });
  std::string cafile = dir.Write("ca.pem", ca.pem());
  auto call = std::async(std::launch::async, [&] {
    return RunCommand("curl -sS --http1.1 --cacert " + cafile +
                      " --connect-to payments:8443:127.0.0.1:" + std::to_string(server->port()) +
                      " https://payments:8443/");
  });
  ASSERT_TRUE(clock.WaitForTimers(1));  // the header delay
  clock.Advance(seconds(5));
  // The first 2-byte chunk goes at once; each next one a second later, its
  // timer armed as the chunk before it is written.
  for (int chunk = 1; chunk < 3; ++chunk) {
    ASSERT_TRUE(clock.WaitForTimers(1));
    clock.Advance(seconds(1));
  }
  CommandResult result = call.get();
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.output, "abcdef");
}

TEST_F(FakeServerCurlTest, BrokenCertificatesAreRefusedByCurl) {
  auto handler = [](const ServerRequest&) { return Reply::Ok(); };
  auto expired =
      Serve(handler,
            ServerTls{ca.Issue({.names = {"payments"}, .validity = TestCA::Validity::kExpired})});
  EXPECT_EQ(Curl(*expired, "/").exit_code, 60);  // CURLE_PEER_FAILED_VERIFICATION
  auto wrong_host = Serve(handler, ServerTls{ca.IssueServer({"ledger"})});
  EXPECT_EQ(Curl(*wrong_host, "/").exit_code, 60);
  auto self_signed = Serve(handler, ServerTls{TestCA::SelfSigned({"payments"})});
  EXPECT_EQ(Curl(*self_signed, "/").exit_code, 60);
  EXPECT_EQ(expired->request_count() + wrong_host->request_count() + self_signed->request_count(),
            0u);
}

TEST_F(FakeServerCurlTest, Tls11OnlyServerIsRefused) {
  ServerTls tls{ca.IssueServer({"payments"})};
  tls.min_version = 0x0302;  // TLS1_1_VERSION
  tls.max_version = 0x0302;
  auto server = Serve([](const ServerRequest&) { return Reply::Ok(); }, tls);
  EXPECT_EQ(Curl(*server, "/", "--tlsv1.2").exit_code, 35);  // CURLE_SSL_CONNECT_ERROR
}

TEST_F(FakeServerCurlTest, PlainTextServesHttp11) {
  auto server =
      FakeServer::Start({.handler = [](const ServerRequest&) { return Reply::Ok("plain"); }});
  ASSERT_TRUE(server);
  CommandResult result = RunCommand("curl -sS " + (*server)->url() + "/");
  EXPECT_EQ(result.output, "plain");
  EXPECT_EQ((*server)->url().rfind("http://127.0.0.1:", 0), 0u);
}

TEST_F(FakeServerCurlTest, StopLeavesNoDescriptorOrThreadBehind) {
  // A first server starts what the process starts once (a sanitizer's own
  // background thread), so the counts below see only the server's.
  Serve([](const ServerRequest&) { return Reply::Ok(); }).reset();
  int fds = OpenDescriptors();
  int threads = Threads();
  {
    auto server = Serve([](const ServerRequest&) { return Reply::Ok(); });
    Curl(*server, "/", "--http2");
    Curl(*server, "/", "--http1.1");
    EXPECT_EQ(server->connections_opened(), 2);
    EXPECT_TRUE(server->WaitFor([](const FakeServer& s) { return s.connections_open() == 0; }));
  }
  EXPECT_EQ(OpenDescriptors(), fds);
  EXPECT_EQ(Threads(), threads);
}

}  // namespace
}  // namespace outbound::testing
