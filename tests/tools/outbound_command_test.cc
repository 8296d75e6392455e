// The `outbound` command, run as a program against the test kit's
// FakeServer, as an operator would run it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../testing/test_support.h"
#include "outbound/testing/fake_server.h"
#include "outbound/testing/test_ca.h"
#include "outbound/version.h"

namespace outbound::testing {
namespace {

const std::string kOutbound = OUTBOUND_BINARY;

class OutboundCallTest : public ::testing::Test {
 protected:
  void Serve(Handler handler) {
    auto started = FakeServer::Start(
        {.tls = ServerTls(ca.IssueServer({"payments"})), .handler = std::move(handler)});
    ASSERT_TRUE(started);
    server = std::move(*started);
  }
  // Runs `outbound call` for https://payments:8443<path>; stderr to err_path.
  CommandResult Call(const std::string& path, const std::string& options = "",
                     const std::string& env = "") {
    std::string cafile = dir.Write("ca.pem", ca.pem());
    return RunCommand(
        "env OUTBOUND_CA_FILE=" + cafile + " OUTBOUND_BACKOFF_BASE=1ms " + env + " " + kOutbound +
        " call --connect-to payments:8443:127.0.0.1:" + std::to_string(server->port()) + " " +
        options + " https://payments:8443" + path + " 2>" + err_path);
  }
  // Runs `outbound call` with nothing but `env` and `options` (no CA file
  // unless they name one) for https://payments:8443<path>.
  CommandResult Bare(const std::string& path, const std::string& options,
                     const std::string& env = "") {
    return RunCommand(
        "env " + env + " " + kOutbound +
        " call --connect-to payments:8443:127.0.0.1:" + std::to_string(server->port()) + " " +
        options + " https://payments:8443" + path + " 2>" + err_path);
  }
  std::string Stderr() { return RunCommand("cat " + err_path).output; }

  TempDir dir;
  TestCA ca;
  std::unique_ptr<FakeServer> server;
  std::string err_path = dir.Write("stderr", "");
};

TEST_F(OutboundCallTest, PrintsTheBodyAfterRetryingA503) {
  std::atomic<int> calls{0};
  Serve([&](const ServerRequest&) {
    return ++calls == 1 ? Reply::Status(503).Header("Retry-After", "0") : Reply::Ok("charged");
  });
  CommandResult result = Call("/charges/1", "-v");
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.output, "charged");
  EXPECT_EQ(server->request_count(), 2u);
  std::string err = Stderr();
  EXPECT_NE(err.find("attempt 1 GET https://payments:8443/charges/1: 503 in"), std::string::npos)
      << err;
  EXPECT_NE(err.find("-> again"), std::string::npos) << err;
  EXPECT_NE(err.find("attempt 2 GET https://payments:8443/charges/1: 200 in"), std::string::npos);
  EXPECT_NE(err.find("-> success"), std::string::npos);
}

TEST_F(OutboundCallTest, FailExits22OnAnErrorStatus) {
  Serve([](const ServerRequest&) { return Reply::Status(404, "no such charge"); });
  EXPECT_EQ(Call("/charges/9", "--fail").exit_code, 22);
  EXPECT_EQ(Call("/charges/9").exit_code, 0);
}

TEST_F(OutboundCallTest, ReportsTheCallAsJson) {
  Serve([](const ServerRequest&) { return Reply::Status(503).Header("Retry-After", "0"); });
  CommandResult result =
      Call("/", "--report json -X PUT -d amount=5 -H 'Content-Type: text/plain'");
  EXPECT_EQ(result.exit_code, 0);
  auto report = nlohmann::json::parse(Stderr());
  ASSERT_EQ(report["attempts"].size(), 3u);
  EXPECT_EQ(report["attempts"][0]["status"], 503);
  EXPECT_EQ(report["attempts"][1]["resend_count"], 1);
  EXPECT_EQ(report["attempts"][2]["decision"], "exhausted");
  EXPECT_EQ(report["outcome"]["status"], 503);
  EXPECT_EQ(report["outcome"]["version"], "2");
  EXPECT_EQ(report["breaker_state"], "closed");
  auto requests = server->requests();
  EXPECT_EQ(requests[0].method, "PUT");
  EXPECT_EQ(requests[0].body, "amount=5");
  EXPECT_EQ(requests[0].header("content-type"), "text/plain");
}

TEST_F(OutboundCallTest, BadVariablesAreAllNamedAndExit78) {
  Serve([](const ServerRequest&) { return Reply::Ok(); });
  CommandResult result = Call("/", "", "OUTBOUND_TIMEOUT=soon OUTBOUND_MAX_ATTEMPTS=0");
  EXPECT_EQ(result.exit_code, 78);
  std::string err = Stderr();
  EXPECT_NE(err.find("OUTBOUND_TIMEOUT: \"soon\" is not a duration"), std::string::npos) << err;
  EXPECT_NE(err.find("OUTBOUND_MAX_ATTEMPTS: must be 1 or more"), std::string::npos) << err;
  EXPECT_EQ(server->request_count(), 0u);
}

TEST_F(OutboundCallTest, ErrorKindsHaveTheirExitCodes) {
  Serve([](const ServerRequest&) { return Reply::Hang(); });
  EXPECT_EQ(Call("/", "", "OUTBOUND_TIMEOUT=300ms OUTBOUND_ATTEMPT_TIMEOUT=100ms").exit_code, 28);
  std::string otherca = dir.Write("other.pem", TestCA().pem());
  CommandResult untrusted =
      RunCommand("env OUTBOUND_CA_FILE=" + otherca + " " + kOutbound +
                 " call --connect-to payments:8443:127.0.0.1:" + std::to_string(server->port()) +
                 " https://payments:8443/ 2>/dev/null");
  EXPECT_EQ(untrusted.exit_code, 60);
  EXPECT_EQ(RunCommand(kOutbound + " call 2>/dev/null").exit_code, 2);
  EXPECT_EQ(RunCommand(kOutbound + " call --help").exit_code, 0);
}

TEST_F(OutboundCallTest, IncludeAndOutputWriteTheHeadersAndBodyToTheFile) {
  Serve([](const ServerRequest&) { return Reply::Ok("charged").Header("X-Charge", "ch_1"); });
  std::string cafile = dir.Write("given-ca.pem", ca.pem());
  std::string out = dir.Write("out.txt", "");
  CommandResult result = Bare("/charges/1", "--cacert " + cafile + " -i -o " + out);
  EXPECT_EQ(result.exit_code, 0) << Stderr();
  EXPECT_EQ(result.output, "");  // all of it went to the file
  std::string written = RunCommand("cat " + out).output;
  EXPECT_EQ(written.rfind("HTTP/2 200\r\n", 0), 0u) << written;
  EXPECT_NE(written.find("x-charge: ch_1\r\n"), std::string::npos) << written;
  EXPECT_EQ(written.substr(written.size() - 11), "\r\n\r\ncharged");
}

TEST_F(OutboundCallTest, TimeoutOptionBoundsTheCall) {
  Serve([](const ServerRequest&) { return Reply::Hang(); });
  CommandResult result = Call("/", "--timeout 200ms");
  EXPECT_EQ(result.exit_code, 28) << Stderr();
  EXPECT_EQ(Call("/", "--timeout soon").exit_code, 78);
  EXPECT_NE(Stderr().find("--timeout: \"soon\" is not a duration"), std::string::npos) << Stderr();
}

TEST_F(OutboundCallTest, AnUntrustedServerWithoutACaFileGetsAHint) {
  Serve([](const ServerRequest&) { return Reply::Ok(); });
  CommandResult result = Bare("/", "");
  EXPECT_EQ(result.exit_code, 60);
  std::string err = Stderr();
  EXPECT_NE(err.find("hint: no CA file was given"), std::string::npos) << err;
  EXPECT_NE(err.find("--cacert FILE or OUTBOUND_CA_FILE"), std::string::npos) << err;
  // With a CA file (the wrong one) there is no such hint.
  std::string other = dir.Write("other.pem", TestCA().pem());
  EXPECT_EQ(Bare("/", "--cacert " + other).exit_code, 60);
  EXPECT_EQ(Stderr().find("hint:"), std::string::npos) << Stderr();
}

TEST_F(OutboundCallTest, AFileThatIsNotPemIsNamed) {
  Serve([](const ServerRequest&) { return Reply::Ok(); });
  std::string der = dir.Write("ca.der", std::string("\x30\x82\x01\x0a", 4));
  std::string cert = dir.Write("client.pem", ca.IssueClient("checkout").cert_pem);
  std::string key_as_cert = dir.Write("key-is-a-cert.pem", ca.pem());
  EXPECT_EQ(Bare("/", "--cacert " + der).exit_code, 78);
  EXPECT_NE(Stderr().find("--cacert: \"" + der + "\" is not PEM"), std::string::npos) << Stderr();
  CommandResult env = Bare("/", "",
                           "OUTBOUND_CA_FILE=" + dir.Write("ca.pem", ca.pem()) +
                               " OUTBOUND_CERT_FILE=" + cert + " OUTBOUND_KEY_FILE=" + key_as_cert);
  EXPECT_EQ(env.exit_code, 78);
  std::string err = Stderr();
  EXPECT_NE(err.find("OUTBOUND_KEY_FILE: \"" + key_as_cert + "\" holds no PEM private key"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("OUTBOUND_CERT_FILE:"), std::string::npos) << err;
  EXPECT_EQ(server->request_count(), 0u);
}

TEST_F(OutboundCallTest, ClientCertificateAndKeyFromOptions) {
  auto started =
      FakeServer::Start({.tls =
                             [&] {
                               ServerTls tls(ca.IssueServer({"payments"}));
                               tls.client_ca_pem = ca.pem();
                               return tls;
                             }(),
                         .handler = [](const ServerRequest&) { return Reply::Ok("mutual"); }});
  ASSERT_TRUE(started);
  server = std::move(*started);
  testing::Certificate client = ca.IssueClient("checkout");
  std::string cert = dir.Write("client.pem", client.cert_pem);
  std::string key = dir.Write("client.key", client.key_pem);
  EXPECT_NE(Call("/", "").exit_code, 0);  // no client certificate: refused
  CommandResult result = Call("/", "--cert " + cert + " --key " + key);
  EXPECT_EQ(result.exit_code, 0) << Stderr();
  EXPECT_EQ(result.output, "mutual");
  EXPECT_EQ(Call("/", "--cert " + cert).exit_code, 78);
  EXPECT_NE(Stderr().find("--cert, --key: a client certificate needs its key"), std::string::npos)
      << Stderr();
}

TEST_F(OutboundCallTest, AnUnknownOutboundVariableIsWarnedAbout) {
  Serve([](const ServerRequest&) { return Reply::Ok("ok"); });
  CommandResult result = Call("/", "", "OUTBOUND_TIMOUT=1s OUTBOUND_URL=https://x OUTBOUNDISH=1");
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.output, "ok");
  std::string err = Stderr();
  EXPECT_NE(err.find("outbound: warning: OUTBOUND_TIMOUT is not a variable outbound reads; did "
                     "you mean OUTBOUND_TIMEOUT?"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("outbound: warning: OUTBOUND_URL is not read: the URL is the command's "
                     "argument"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("OUTBOUNDISH"), std::string::npos) << err;
  EXPECT_EQ(err.find("OUTBOUND_CA_FILE"), std::string::npos) << err;  // known: no warning
}

TEST_F(OutboundCallTest, ARedirectToAnotherOriginIsPrintedWithItsLocation) {
  Serve([](const ServerRequest& r) {
    if (r.target == "/here") return Reply::Status(302).Header("Location", "/there");
    if (r.target == "/there") return Reply::Status(307).Header("Location", "https://ledger:8443/x");
    return Reply::Ok();
  });
  CommandResult result = Call("/here", "");
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(server->request_count(), 2u);  // /here, /there: nothing to ledger
  EXPECT_NE(Stderr().find("outbound: 307: a redirect to another origin, not followed: "
                          "Location: https://ledger:8443/x"),
            std::string::npos)
      << Stderr();
}

TEST(OutboundCommandTest, VersionIsTheProjects) {
  std::string expected = std::string("outbound ") + OUTBOUND_VERSION_STRING + "\n";
  CommandResult top = RunCommand(kOutbound + " --version");
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_EQ(top.output, expected);
  EXPECT_EQ(RunCommand(kOutbound + " call --version").output, expected);
}

TEST(OutboundCommandTest, AnFtpUrlIsAUsageError) {
  CommandResult result = RunCommand(kOutbound + " call ftp://files:21/a 2>&1");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.output.find("\"ftp://files:21/a\" is not an http or https URL"),
            std::string::npos)
      << result.output;
}

TEST(OutboundDemoTest, ShortRunShowsTheResilientClientsBehaviour) {
  TempDir dir;
  std::string json = dir.Write("demo.json", "");
  std::string svg = dir.Write("demo.svg", "");
  CommandResult result =
      RunCommand(kOutbound + " demo --seconds 6 --rps 200 --json " + json + " --svg " + svg);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("success rate"), std::string::npos);
  auto report = nlohmann::json::parse(RunCommand("cat " + json).output);
  const auto& naive = report["clients"]["naive"]["phases"]["503 storm"];
  const auto& outbound = report["clients"]["outbound"]["phases"]["503 storm"];
  EXPECT_GT(naive["calls"].get<int>(), 50);
  // Retries paced by Retry-After inside the budget win calls back in the storm...
  EXPECT_GT(outbound["success_rate"].get<double>(), naive["success_rate"].get<double>());
  // ...without multiplying the dependency's load.
  EXPECT_LE(outbound["attempts_per_call"].get<double>(), 1.5);
  // The hang opens the breaker, and recovery closes it.
  std::vector<std::string> to;
  for (const auto& t : report["clients"]["outbound"]["transitions"]) to.push_back(t["to"]);
  EXPECT_NE(std::find(to.begin(), to.end(), "open"), to.end());
  EXPECT_NE(std::find(to.begin(), to.end(), "closed"), to.end());
  EXPECT_GT(report["clients"]["outbound"]["all"]["rejected"].get<int>(), 0);
  EXPECT_NE(RunCommand("head -c 4 " + svg).output.find("<svg"), std::string::npos);
}

}  // namespace
}  // namespace outbound::testing
