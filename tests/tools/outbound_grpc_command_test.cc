// SPDX-License-Identifier: Apache-2.0
// `outbound call` and `outbound bench` with a grpc or grpcs URL, run as a
// program against a real grpc++ server on loopback (the rpc tests' Echo
// service), with request messages serialised here into files.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../rpc/echo_server.h"
#include "../testing/test_support.h"
#include "outbound/config/rpc_settings.h"
#include "outbound/testing/network_map.h"
#include "outbound/testing/test_ca.h"

namespace outbound::rpc {
namespace {

using testing::CommandResult;
using testing::RunCommand;

const std::string kOutbound = OUTBOUND_BINARY;
constexpr char kSayPath[] = "/outbound.test.Echo/Say";

class OutboundGrpcCallTest : public ::testing::Test {
 protected:
  // A file holding an EchoRequest with `text`, serialised.
  std::string RequestFile(const std::string& text, const std::string& name = "req.bin") {
    EchoRequest request;
    request.set_text(text);
    return dir.Write(name, request.SerializeAsString());
  }
  // grpc://127.0.0.1:PORT<method>.
  static std::string Url(const EchoServer& server, const std::string& method = kSayPath) {
    return "grpc://127.0.0.1:" + std::to_string(server.port()) + method;
  }
  // Runs `env ENV outbound ARGS`, stderr to err_path.
  CommandResult Run(const std::string& args, const std::string& env = "") {
    return RunCommand("env OUTBOUND_BACKOFF_BASE=1ms " + env + " " + kOutbound + " " + args +
                      " 2>" + err_path);
  }
  std::string Stderr() { return RunCommand("cat " + err_path).output; }
  std::string Path(const std::string& name) const {
    return err_path.substr(0, err_path.rfind('/') + 1) + name;
  }
  static std::string ReplyText(const std::string& bytes) {
    EchoReply reply;
    if (!reply.ParseFromString(bytes)) return "(does not parse)";
    return reply.text();
  }

  testing::TempDir dir;
  std::string err_path = dir.Write("stderr", "");
};

TEST_F(OutboundGrpcCallTest, WritesTheResponseMessageAndSaysOk) {
  EchoServer server(Echoing());
  ASSERT_TRUE(server.started());
  CommandResult result = Run("call -d @" + RequestFile("hello") + " " + Url(server));
  EXPECT_EQ(result.exit_code, 0) << Stderr();
  EXPECT_EQ(ReplyText(result.output), "echo: hello");
  EXPECT_EQ(Stderr(), "outbound: OK (1 attempt)\n");
  EXPECT_EQ(server.calls(), 1);
}

TEST_F(OutboundGrpcCallTest, ReadsTheRequestFromStdinAndWritesTheResponseToAFile) {
  EchoServer server(Echoing());
  std::string out = Path("reply.bin");
  CommandResult result =
      Run("call -d @- -o " + out + " " + Url(server) + " < " + RequestFile("from stdin"));
  EXPECT_EQ(result.exit_code, 0) << Stderr();
  EXPECT_EQ(result.output, "");
  std::ifstream in(out, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(ReplyText(bytes), "echo: from stdin");
}

TEST_F(OutboundGrpcCallTest, RetriesUnavailableThenSaysOk) {
  EchoServer server(UnavailableThenEcho(1));
  CommandResult result = Run("call -d @" + RequestFile("again") + " " + Url(server));
  EXPECT_EQ(result.exit_code, 0) << Stderr();
  EXPECT_EQ(ReplyText(result.output), "echo: again");
  EXPECT_EQ(Stderr(), "outbound: OK (2 attempts)\n");
  EXPECT_EQ(server.calls(), 2);
}

TEST_F(OutboundGrpcCallTest, UnavailableToTheLastAttemptExits114) {
  EchoServer server(UnavailableThenEcho(100));
  CommandResult result =
      Run("call -d @" + RequestFile("x") + " " + Url(server), "OUTBOUND_MAX_ATTEMPTS=2");
  EXPECT_EQ(result.exit_code, 114);
  EXPECT_EQ(result.output, "");
  EXPECT_EQ(Stderr(), "outbound: UNAVAILABLE: not yet (2 attempts)\n");
  EXPECT_EQ(server.calls(), 2);
}

TEST_F(OutboundGrpcCallTest, AnUnknownMethodIsUnimplementedAndExits112) {
  EchoServer server(Echoing());
  std::string out = Path("reply.bin");
  CommandResult result = Run("call -o " + out + " " + Url(server, "/outbound.test.Echo/Shout"));
  EXPECT_EQ(result.exit_code, 112);
  EXPECT_EQ(Stderr().rfind("outbound: UNIMPLEMENTED", 0), 0u) << Stderr();
  EXPECT_NE(Stderr().find("(1 attempt)\n"), std::string::npos) << Stderr();
  EXPECT_FALSE(std::filesystem::exists(out));  // no response message: no file
}

TEST_F(OutboundGrpcCallTest, TheTimeoutOptionEndsTheCallWithDeadlineExceeded) {
  EchoServer server(Hang);
  CommandResult result = Run("call --timeout 200ms " + Url(server));
  EXPECT_EQ(result.exit_code, 104);
  EXPECT_EQ(Stderr().rfind("outbound: DEADLINE_EXCEEDED", 0), 0u) << Stderr();
}

TEST_F(OutboundGrpcCallTest, FaultInjectsIntoTheCallsPoint) {
  EchoServer server(Echoing());
  std::string point = "grpc:127.0.0.1:" + std::to_string(server.port());
  CommandResult result = Run("call --fault '" + point + "=abort' " + Url(server));
  EXPECT_EQ(result.exit_code, 114);
  EXPECT_NE(Stderr().find("(3 attempts)"), std::string::npos) << Stderr();
  EXPECT_EQ(server.calls(), 0);
}

TEST_F(OutboundGrpcCallTest, ReportsTheCallAsJson) {
  EchoServer server(UnavailableThenEcho(1));
  CommandResult result =
      Run("call --report json -d @" + RequestFile("r") + " " + Url(server) + " >/dev/null");
  EXPECT_EQ(result.exit_code, 0);
  std::string err = Stderr();
  auto json = nlohmann::json::parse(err.substr(err.find('{')));
  EXPECT_EQ(json["method"], kSayPath);
  EXPECT_EQ(json["attempts"], 2);
  EXPECT_EQ(json["outcome"]["status"], "OK");
  EXPECT_EQ(json["breaker_state"], "closed");
  EXPECT_EQ(json["exit_code"], 0);
}

TEST_F(OutboundGrpcCallTest, VerboseShowsEachAttemptsSpan) {
  EchoServer server(UnavailableThenEcho(1));
  ASSERT_EQ(Run("call -v " + Url(server) + " >/dev/null").exit_code, 0);
  std::string err = Stderr();
  std::size_t spans = 0;
  for (std::size_t at = err.find("span "); at != std::string::npos;
       at = err.find("span ", at + 1)) {
    if (at == 0 || err[at - 1] == '\n') ++spans;
  }
  EXPECT_EQ(spans, 2u) << err;
  EXPECT_NE(err.find("UNAVAILABLE"), std::string::npos) << err;
}

// TLS: the server's certificate is for "carts", from a CA made for the
// test; --connect-to sends carts to loopback, and the name is verified.
class OutboundGrpcsCallTest : public OutboundGrpcCallTest {
 protected:
  static std::shared_ptr<grpc::ServerCredentials> ServerTls(const testing::Certificate& cert,
                                                            const std::string& client_ca = "") {
    grpc::SslServerCredentialsOptions options(
        client_ca.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                          : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    options.pem_root_certs = client_ca;
    options.pem_key_cert_pairs.push_back({cert.key_pem, cert.chain_pem});
    return grpc::SslServerCredentials(options);
  }
  static std::string Grpcs(const EchoServer& server) {
    std::string port = std::to_string(server.port());
    return "--connect-to carts:" + port + ":127.0.0.1:" + port + " grpcs://carts:" + port +
           kSayPath;
  }

  testing::TestCA ca;
};

TEST_F(OutboundGrpcsCallTest, TrustsTheServerByTheCaFile) {
  EchoServer server(Echoing(), ServerTls(ca.IssueServer({"carts"})));
  std::string cafile = dir.Write("ca.pem", ca.pem());
  std::string request = RequestFile("tls");
  CommandResult by_option =
      Run("call --cacert " + cafile + " -d @" + request + " " + Grpcs(server));
  EXPECT_EQ(by_option.exit_code, 0) << Stderr();
  EXPECT_EQ(ReplyText(by_option.output), "echo: tls");
  CommandResult by_variable =
      Run("call -d @" + request + " " + Grpcs(server), "OUTBOUND_CA_FILE=" + cafile);
  EXPECT_EQ(by_variable.exit_code, 0) << Stderr();
  EXPECT_EQ(ReplyText(by_variable.output), "echo: tls");
  EXPECT_EQ(server.calls(), 2);
}

TEST_F(OutboundGrpcsCallTest, AnUntrustedServerIsUnavailable) {
  EchoServer server(Echoing(), ServerTls(ca.IssueServer({"carts"})));
  std::string otherca = dir.Write("other.pem", testing::TestCA("another CA").pem());
  CommandResult result = Run("call --cacert " + otherca + " " + Grpcs(server));
  EXPECT_EQ(result.exit_code, 114);
  EXPECT_EQ(server.calls(), 0);
}

TEST_F(OutboundGrpcsCallTest, MutualTlsWithCertAndKey) {
  EchoServer server(Echoing(), ServerTls(ca.IssueServer({"carts"}), ca.pem()));
  testing::Certificate me = ca.IssueClient("client");
  std::string cafile = dir.Write("ca.pem", ca.pem());
  std::string cert = dir.Write("cert.pem", me.chain_pem);
  std::string key = dir.Write("key.pem", me.key_pem);
  CommandResult result = Run("call --cacert " + cafile + " --cert " + cert + " --key " + key +
                             " -d @" + RequestFile("mtls") + " " + Grpcs(server));
  EXPECT_EQ(result.exit_code, 0) << Stderr();
  EXPECT_EQ(ReplyText(result.output), "echo: mtls");
  EXPECT_NE(Run("call --cacert " + cafile + " " + Grpcs(server)).exit_code, 0);
  EXPECT_EQ(server.calls(), 1);
}

TEST_F(OutboundGrpcsCallTest, PlainTextToATlsServerFails) {
  EchoServer server(Echoing(), ServerTls(ca.IssueServer({"carts"})));
  CommandResult result = Run("call " + Url(server));
  EXPECT_EQ(result.exit_code, 114);
  EXPECT_EQ(server.calls(), 0);
}

// A CA file, a certificate or a key beside a grpc URL would be ignored and
// the call made in plain text: refused, naming both.
TEST_F(OutboundGrpcCallTest, TlsFilesBesideAGrpcUrlAreRefused) {
  EchoServer server(Echoing());
  std::string cafile = dir.Write("ca.pem", testing::TestCA().pem());
  std::string url = Url(server);
  CommandResult result = Run("call " + url, "OUTBOUND_CA_FILE=" + cafile);
  EXPECT_EQ(result.exit_code, 78);
  EXPECT_NE(Stderr().find("OUTBOUND_CA_FILE: set, but the URL is \"" + url +
                          "\", which is plain text: TLS needs a grpcs URL"),
            std::string::npos)
      << Stderr();
  result = Run("call --cacert " + cafile + " " + url);
  EXPECT_EQ(result.exit_code, 78);
  EXPECT_NE(Stderr().find("--cacert: set, but the URL is"), std::string::npos) << Stderr();
  EXPECT_EQ(server.calls(), 0);
}

TEST_F(OutboundGrpcCallTest, BadVariablesAreAllNamedAndExit78) {
  EchoServer server(Echoing());
  CommandResult result =
      Run("call " + Url(server), "OUTBOUND_TIMEOUT=soon OUTBOUND_MAX_ATTEMPTS=0");
  EXPECT_EQ(result.exit_code, 78);
  std::string err = Stderr();
  EXPECT_NE(err.find("OUTBOUND_TIMEOUT: \"soon\" is not a duration"), std::string::npos) << err;
  EXPECT_NE(err.find("OUTBOUND_MAX_ATTEMPTS: must be 1 or more"), std::string::npos) << err;
  EXPECT_EQ(server.calls(), 0);
}

TEST_F(OutboundGrpcCallTest, VariablesAGrpcCallDoesNotReadAreWarnedAbout) {
  EchoServer server(Echoing());
  CommandResult result = Run("call " + Url(server) + " >/dev/null",
                             "OUTBOUND_TIMOUT=1s OUTBOUND_GZIP=on OUTBOUND_TLS=on "
                             "OUTBOUND_ADDR=x:1 OUTBOUND_MAX_ATTEMPTS=2");
  EXPECT_EQ(result.exit_code, 0);
  std::string err = Stderr();
  for (const char* warning : {
           "outbound: warning: OUTBOUND_TIMOUT is not a variable outbound reads; did you mean "
           "OUTBOUND_TIMEOUT?",
           "outbound: warning: OUTBOUND_GZIP is not read by a gRPC call (an HTTP call's setting)",
           "outbound: warning: OUTBOUND_TLS is not read: the URL says it",
           "outbound: warning: OUTBOUND_ADDR is not read: the URL is the command's argument",
       }) {
    EXPECT_NE(err.find(warning), std::string::npos) << warning << "\n" << err;
  }
  EXPECT_EQ(err.find("OUTBOUND_MAX_ATTEMPTS"), std::string::npos) << err;  // read: no warning
}

// -H is the call's metadata: grpc++ sees the name in lower case and the
// value as given; a name gRPC reserves ends the call INTERNAL (exit 113)
// with nothing sent.
TEST_F(OutboundGrpcCallTest, AHeaderOptionIsTheCallsMetadata) {
  EchoServer server([](int, grpc::ServerContext* context, const EchoRequest&, EchoReply* reply) {
    std::string seen;
    for (const auto& [name, value] : context->client_metadata()) {
      if (name == "x-tenant" || name == "authorization") {
        seen += std::string(name.data(), name.size()) + "=" +
                std::string(value.data(), value.size()) + ";";
      }
    }
    reply->set_text(seen);
    return grpc::Status::OK;
  });
  ASSERT_TRUE(server.started());
  CommandResult result = Run("call -H 'X-Tenant: acme' -H 'authorization: Bearer t' -d @" +
                             RequestFile("m") + " " + Url(server));
  EXPECT_EQ(result.exit_code, 0) << Stderr();
  EXPECT_EQ(ReplyText(result.output), "authorization=Bearer t;x-tenant=acme;");

  result = Run("call -H 'grpc-timeout: 1S' " + Url(server));
  EXPECT_EQ(result.exit_code, 113) << Stderr();
  EXPECT_NE(Stderr().find("\"grpc-timeout\" is reserved by gRPC"), std::string::npos) << Stderr();
  EXPECT_EQ(server.calls(), 1);
}

TEST_F(OutboundGrpcCallTest, OptionsOfAnHttpCallAndBadUrlsAreUsageErrors) {
  EchoServer server(Echoing());
  EXPECT_EQ(Run("call -X PUT " + Url(server)).exit_code, 2);
  EXPECT_NE(Stderr().find("-X does not apply to a gRPC call"), std::string::npos) << Stderr();
  EXPECT_EQ(Run("call --fail " + Url(server)).exit_code, 2);
  EXPECT_EQ(Run("bench -n 1 -X PUT " + Url(server)).exit_code, 2);
  EXPECT_EQ(Run("call grpc://127.0.0.1/outbound.test.Echo/Say").exit_code, 2);
  EXPECT_NE(Stderr().find("has no HOST:PORT"), std::string::npos) << Stderr();
  EXPECT_EQ(Run("call " + Url(server, "/outbound.test.Echo")).exit_code, 2);
  EXPECT_NE(Stderr().find("its path must be /package.Service/Method"), std::string::npos)
      << Stderr();
  EXPECT_EQ(Run("call -d @" + Path("missing.bin") + " " + Url(server)).exit_code, 2);
  // A port out of range is the URL's mistake, not a variable's (78).
  EXPECT_EQ(Run("call grpc://127.0.0.1:99999/outbound.test.Echo/Say").exit_code, 2);
  EXPECT_NE(Stderr().find("port"), std::string::npos) << Stderr();
  EXPECT_EQ(Stderr().find("Settings."), std::string::npos) << Stderr();
  EXPECT_EQ(Run("bench -n 1 grpc://127.0.0.1:0/outbound.test.Echo/Say").exit_code, 2);
  EXPECT_EQ(server.calls(), 0);
}

// Every variable a gRPC call reads is in the help's gRPC paragraph: by its
// name, or in a family it names ("the OUTBOUND_BREAKER_ ones").
TEST(OutboundGrpcCommandTest, TheHelpNamesEveryVariableAGrpcCallReads) {
  CommandResult help = RunCommand(kOutbound + " call --help 2>&1");
  std::size_t from = help.output.find("rpc::Settings has:");
  ASSERT_NE(from, std::string::npos) << help.output;
  std::string paragraph = help.output.substr(from, help.output.find("exit codes:", from) - from);
  auto named = [&](const std::string& name) {
    if (paragraph.find(name) != std::string::npos) return true;
    for (const char* family : {"OUTBOUND_RETRY_BUDGET_", "OUTBOUND_BREAKER_", "OUTBOUND_OUTLIER_",
                               "OUTBOUND_ADAPTIVE_CONCURRENCY", "OUTBOUND_HEDGING"}) {
      if (name.starts_with(family) && paragraph.find(family) != std::string::npos) return true;
    }
    return false;
  };
  for (const std::string& name : config::RpcSettingsVariables("OUTBOUND_")) {
    if (name == "OUTBOUND_ADDR" || name == "OUTBOUND_TLS") continue;  // the URL says them
    EXPECT_TRUE(named(name)) << name;
  }
  EXPECT_NE(help.output.find("grpc://HOST:PORT/package.Service/Method"), std::string::npos);
  EXPECT_NE(RunCommand(kOutbound + " bench --help").output.find("grpc://HOST:PORT"),
            std::string::npos);
}

TEST_F(OutboundGrpcCallTest, BenchMakesItsCallsAndPrintsItsFigures) {
  EchoServer server(Echoing());
  CommandResult result =
      Run("bench -n 300 -c 8 --json - -d @" + RequestFile("load") + " " + Url(server));
  EXPECT_EQ(result.exit_code, 0) << Stderr();
  for (const char* figure :
       {"calls: 300 (8 in flight) in ", " calls/s\n", "latency ms: p50 ", "  p99 ",
        "ok: 300  errors: none", "attempts per call: 1.00", "breaker transitions: 0", " us/call"}) {
    EXPECT_NE(result.output.find(figure), std::string::npos) << figure << "\n" << result.output;
  }
  // --json -: the figures as JSON, on the last line.
  std::string last = result.output.substr(result.output.rfind("\n{") + 1);
  auto json = nlohmann::json::parse(last);
  EXPECT_EQ(json["calls"], 300);
  EXPECT_EQ(json["ok"], 300);
  EXPECT_TRUE(json["errors"].empty());
  EXPECT_GT(json["calls_per_second"].get<double>(), 0);
  EXPECT_GT(json["cpu_us_per_call"].get<double>(), 0);
  EXPECT_EQ(server.calls(), 300);
}

// With balancing, an endpoint's ejection is a log record too: it is no
// breaker transition. One endpoint of two refuses every dial, is ejected,
// and every call is answered by the other.
TEST_F(OutboundGrpcCallTest, BenchCountsNoEjectionAsABreakerTransition) {
  EchoServer server(Echoing());
  std::string endpoints = "127.0.0.1:" + std::to_string(server.port()) +
                          ",127.0.0.1:" + std::to_string(testing::PortNothingListensOn());
  CommandResult result =
      Run("bench -n 300 -c 8 --json - -d @" + RequestFile("load") + " " + Url(server),
          "OUTBOUND_ENDPOINTS=" + endpoints);
  EXPECT_EQ(result.exit_code, 0) << result.output << Stderr();
  std::string last = result.output.substr(result.output.rfind("\n{") + 1);
  auto json = nlohmann::json::parse(last);
  EXPECT_EQ(json["ok"], 300);
  // The refused endpoint had attempts, until ejected.
  EXPECT_GT(json["attempts_per_call"].get<double>(), 1.0) << result.output;
  EXPECT_EQ(json["breaker_transitions"], 0) << result.output;
  EXPECT_EQ(server.calls(), 300);
}

// -H is every bench call's metadata: a server that refuses a call
// without it answers them all.
TEST_F(OutboundGrpcCallTest, BenchSendsItsHeaderOptionAsEveryCallsMetadata) {
  EchoServer server([](int, grpc::ServerContext* context, const EchoRequest&, EchoReply*) {
    auto tenant = context->client_metadata().find("x-tenant");
    bool acme = tenant != context->client_metadata().end() && tenant->second == "acme";
    return acme ? grpc::Status::OK : grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "who?");
  });
  CommandResult result = Run("bench -n 20 -c 4 -H 'x-tenant: acme' " + Url(server));
  EXPECT_EQ(result.exit_code, 0) << result.output << Stderr();
  EXPECT_NE(result.output.find("ok: 20  errors: none"), std::string::npos) << result.output;
  result = Run("bench -n 4 -c 2 " + Url(server));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.output.find("{\"PERMISSION_DENIED\":4}"), std::string::npos) << result.output;
}

TEST_F(OutboundGrpcCallTest, BenchCountsEachStatusAsItsError) {
  EchoServer server(Echoing());
  CommandResult result = Run("bench -n 40 -c 4 " + Url(server, "/outbound.test.Echo/Shout"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.output.find("ok: 0  errors: {\"UNIMPLEMENTED\":40}"), std::string::npos)
      << result.output;
}

}  // namespace
}  // namespace outbound::rpc
