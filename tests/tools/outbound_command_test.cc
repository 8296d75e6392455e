// SPDX-License-Identifier: Apache-2.0
// The `outbound` command, run as a program against the test kit's
// FakeServer, as an operator would run it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "../testing/test_support.h"
#include "outbound/config/http_settings.h"
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
  // A path in the test's directory, for a file the command may make.
  std::string Path(const std::string& name) const {
    return err_path.substr(0, err_path.rfind('/') + 1) + name;
  }

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

// -v shows each attempt's span, and its ids are the ones on the wire.
TEST_F(OutboundCallTest, VerboseShowsEachAttemptsSpanAsTheServerSawIt) {
  std::mutex mu;
  std::vector<std::string> traceparents;
  std::atomic<int> calls{0};
  Serve([&](const ServerRequest& request) {
    std::lock_guard lock(mu);
    traceparents.push_back(request.header("traceparent"));
    return ++calls == 1 ? Reply::Status(503).Header("Retry-After", "0") : Reply::Ok("charged");
  });
  ASSERT_EQ(Call("/charges/1", "-v").exit_code, 0);
  std::string err = Stderr();
  std::lock_guard lock(mu);  // the server's thread wrote them
  ASSERT_EQ(traceparents.size(), 2u);
  for (const std::string& traceparent : traceparents) {
    ASSERT_EQ(traceparent.size(), 55u) << traceparent;
    std::string ids = "trace " + traceparent.substr(3, 32) + " span " + traceparent.substr(36, 16);
    EXPECT_NE(err.find("span GET " + ids), std::string::npos) << ids << "\n" << err;
  }
  EXPECT_EQ(traceparents[0].substr(3, 32), traceparents[1].substr(3, 32));  // one trace
  EXPECT_NE(err.find(" ms ERROR "), std::string::npos) << err;
  EXPECT_NE(err.find("error.type=503"), std::string::npos) << err;
  EXPECT_NE(err.find("http.request.resend_count=1"), std::string::npos) << err;
}

// Names are the same in any case: --connect-to's HOST matches the URL's
// host however either is written (it fell through to the system's DNS).
TEST_F(OutboundCallTest, ConnectToMatchesTheHostInAnyCase) {
  Serve([](const ServerRequest&) { return Reply::Ok("found"); });
  std::string cafile = dir.Write("ca.pem", ca.pem());
  CommandResult result =
      RunCommand("env OUTBOUND_CA_FILE=" + cafile + " " + kOutbound +
                 " call --connect-to PayMents:8443:127.0.0.1:" + std::to_string(server->port()) +
                 " https://payments:8443/ 2>" + err_path);
  EXPECT_EQ(result.exit_code, 0) << Stderr();
  EXPECT_EQ(result.output, "found");
  EXPECT_EQ(server->request_count(), 1u);
}

TEST_F(OutboundCallTest, FailExits22OnAnErrorStatus) {
  Serve([](const ServerRequest&) { return Reply::Status(404, "no such charge"); });
  EXPECT_EQ(Call("/charges/9", "--fail").exit_code, 22);
  EXPECT_EQ(Call("/charges/9").exit_code, 0);
}

TEST_F(OutboundCallTest, FaultInjectsAScenarioIntoTheCallsAttempts) {
  Serve([](const ServerRequest&) { return Reply::Ok("real"); });
  CommandResult aborted = Call("/", "-v --fault 'http:payments:8443=abort'");
  EXPECT_EQ(aborted.exit_code, 7);
  EXPECT_EQ(server->request_count(), 0u);
  std::string err = Stderr();
  EXPECT_NE(err.find("attempt 3 GET https://payments:8443/: transport"), std::string::npos) << err;
  EXPECT_NE(err.find("injected fault"), std::string::npos) << err;
  // Another point's scenario leaves this one alone, and is not sent on.
  CommandResult spared = Call("/", "--fault 'http:ledger:443=abort'");
  EXPECT_EQ(spared.exit_code, 0);
  EXPECT_EQ(spared.output, "real");
  ASSERT_EQ(server->request_count(), 1u);
  EXPECT_EQ(server->requests()[0].header("baggage"), "");
}

// --runtime-file applies the file's entry for the URL's host, as a
// process watching the file would; a bad file is named, with exit 78.
TEST_F(OutboundCallTest, RuntimeFileAppliesTheEntryForTheUrlsHost) {
  Serve([](const ServerRequest&) { return Reply::Ok("real"); });
  std::string isolated =
      dir.Write("isolated.json", R"({"dependencies": {"payments": {"breaker": "isolate"}}})");
  CommandResult refused = Call("/", "--runtime-file " + isolated);
  EXPECT_EQ(refused.exit_code, 69);
  EXPECT_EQ(server->request_count(), 0u);
  std::string other =
      dir.Write("other.json", R"({"dependencies": {"ledger": {"breaker": "isolate"}}})");
  CommandResult spared = Call("/", "--runtime-file " + other);
  EXPECT_EQ(spared.exit_code, 0);
  EXPECT_EQ(spared.output, "real");
  std::string bad =
      dir.Write("bad.json", R"({"dependencies": {"payments": {"brekaer": "isolate"}}})");
  EXPECT_EQ(Call("/", "--runtime-file " + bad).exit_code, 78);
  EXPECT_NE(Stderr().find("dependencies.payments.brekaer: not a key; did you mean breaker?"),
            std::string::npos)
      << Stderr();
  EXPECT_EQ(server->request_count(), 1u);
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

// Data makes a POST, as with curl, unless -X names the method: -X GET
// with data stays a GET, whichever comes first.
TEST_F(OutboundCallTest, DataMakesAPostUnlessTheMethodIsNamed) {
  Serve([](const ServerRequest&) { return Reply::Ok(); });
  for (const char* options : {"-d q=1", "-X GET -d q=1", "-d q=1 -X GET"}) {
    EXPECT_EQ(Call("/", options).exit_code, 0) << options;
  }
  auto requests = server->requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[1].method, "GET");
  EXPECT_EQ(requests[2].method, "GET");
  EXPECT_EQ(requests[1].body, "q=1");
}

// A directory opens as a file that reads nothing: -d @DIR is refused, not
// sent as an empty body.
TEST_F(OutboundCallTest, DataFromADirectoryIsAUsageError) {
  Serve([](const ServerRequest&) { return Reply::Ok(); });
  CommandResult result = Call("/", "-d @" + Path(""));
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(Stderr().find("is a directory"), std::string::npos) << Stderr();
  EXPECT_EQ(server->request_count(), 0u);
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

// The whole of a file, or nothing if it does not exist.
std::optional<std::string> ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A body whose every 8 bytes differ from the ones before, so a piece
// written twice, dropped or moved shows.
std::string NumberedBody(std::size_t bytes) {
  std::string body;
  body.reserve(bytes + 8);
  for (std::size_t i = 0; body.size() < bytes; ++i) {
    std::string n = std::to_string(i);
    body.append(7 - std::min<std::size_t>(n.size(), 7), '0').append(n).push_back('\n');
  }
  body.resize(bytes);
  return body;
}

// -o FILE streams a 2xx body to the file as it arrives: a body past
// OUTBOUND_MAX_RESPONSE_BYTES, which a body held in memory may not pass,
// is written whole; with -i the headers still come first.
// The handlers below hold their own copy of the body: the server's threads
// read it, and a test's locals go before the server does.
TEST_F(OutboundCallTest, OutputStreamsA2xxBodyPastTheLimitToTheFile) {
  const std::string body = NumberedBody(300 * 1024 + 5);
  Serve([body](const ServerRequest&) { return Reply::Ok(body).Header("X-Export", "2026"); });
  const std::string limit = "OUTBOUND_MAX_RESPONSE_BYTES=65536";
  std::string out = Path("export.csv");
  CommandResult result = Call("/export.csv", "-o " + out, limit);
  EXPECT_EQ(result.exit_code, 0) << Stderr();
  EXPECT_EQ(result.output, "");
  std::optional<std::string> written = ReadWhole(out);
  ASSERT_TRUE(written);
  EXPECT_EQ(written->size(), body.size());
  EXPECT_TRUE(*written == body);

  std::string with_headers = Path("export-i.csv");
  result = Call("/export.csv", "-i -o " + with_headers, limit);
  EXPECT_EQ(result.exit_code, 0) << Stderr();
  written = ReadWhole(with_headers);
  ASSERT_TRUE(written);
  EXPECT_EQ(written->rfind("HTTP/2 200\r\n", 0), 0u) << written->substr(0, 200);
  std::size_t head_end = written->find("\r\n\r\n");
  ASSERT_NE(head_end, std::string::npos);
  EXPECT_NE(written->substr(0, head_end).find("x-export: 2026"), std::string::npos);
  EXPECT_EQ(written->size() - head_end - 4, body.size());
  EXPECT_TRUE(written->compare(head_end + 4, std::string::npos, body) == 0);

  // A file that cannot take the headers before the body (not a regular
  // one) holds the body, as without -o.
  EXPECT_EQ(Call("/export.csv", "-i -o /dev/null").exit_code, 0) << Stderr();

  // To stdout the body is held, so the limit holds, and says what raises it.
  result = Call("/export.csv", "", limit);
  EXPECT_EQ(result.exit_code, 63);
  std::string err = Stderr();
  EXPECT_NE(err.find("OUTBOUND_MAX_RESPONSE_BYTES"), std::string::npos) << err;
  EXPECT_NE(err.find("-o FILE"), std::string::npos) << err;
}

// -o FILE writes a body as it arrives, in constant memory: a 64 MiB body
// leaves the command's peak RSS far below the body's size (about 11 MiB
// here, what a 100 MB body takes too), while the same body held for stdout
// (within a raised limit) takes at least its size, as -o did before it
// streamed: the measure tells the two apart. Measured by /usr/bin/time
// (scripts/install-deps installs it).
TEST_F(OutboundCallTest, OutputWritesABodyInConstantMemory) {
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "a sanitizer's shadow memory is not the command's";
#endif
  if (!std::filesystem::exists("/usr/bin/time")) GTEST_SKIP() << "no /usr/bin/time";
  const std::size_t size = 64u << 20;
  const std::string body = NumberedBody(size);
  Serve([body](const ServerRequest&) { return Reply::Ok(body); });
  std::string cafile = dir.Write("ca.pem", ca.pem());
  // The command's peak RSS in KiB, or -1; its output to `output`.
  auto peak_kib = [&](const std::string& options, const std::string& output) {
    std::string rss = Path("rss");
    CommandResult run =
        RunCommand("env OUTBOUND_CA_FILE=" + cafile + " OUTBOUND_MAX_RESPONSE_BYTES=" +
                   std::to_string(2 * size) + " /usr/bin/time -f %M -o " + rss + " " + kOutbound +
                   " call --connect-to payments:8443:127.0.0.1:" + std::to_string(server->port()) +
                   " " + options + " https://payments:8443/big.bin >" + output + " 2>" + err_path);
    EXPECT_EQ(run.exit_code, 0) << Stderr();
    std::optional<std::string> text = ReadWhole(rss);
    return text ? std::stol(*text) : -1L;
  };
  std::string streamed = Path("streamed.bin");
  long streaming = peak_kib("-o " + streamed, "/dev/null");
  std::optional<std::string> written = ReadWhole(streamed);
  ASSERT_TRUE(written);
  EXPECT_EQ(written->size(), size);
  EXPECT_TRUE(*written == body);
  long holding = peak_kib("", Path("held.bin"));
  RecordProperty("peak_rss_kib_streamed", static_cast<int>(streaming));
  RecordProperty("peak_rss_kib_held", static_cast<int>(holding));
  EXPECT_GT(streaming, 0);
  EXPECT_LT(streaming, static_cast<long>(size / 1024 / 3)) << "KiB at peak with -o";
  EXPECT_GT(holding, static_cast<long>(size / 1024)) << "KiB at peak holding the body";
}

// An answer that is not 2xx is held whole as before, -o or not: within the
// limit it is written to the file; past it the command says what raises it.
TEST_F(OutboundCallTest, OutputHoldsAnAnswerThatIsNot2xx) {
  const std::string page = NumberedBody(100 * 1024);
  Serve([page](const ServerRequest& r) {
    if (r.target == "/missing") return Reply::Status(404, "no such export");
    return Reply::Status(500, page);
  });
  std::string out = Path("missing.txt");
  CommandResult result = Call("/missing", "-i -o " + out);
  EXPECT_EQ(result.exit_code, 0) << Stderr();
  std::optional<std::string> written = ReadWhole(out);
  ASSERT_TRUE(written);
  EXPECT_EQ(written->rfind("HTTP/2 404\r\n", 0), 0u) << *written;
  EXPECT_EQ(written->substr(written->size() - 18), "\r\n\r\nno such export");
  EXPECT_EQ(Call("/missing", "--fail -o " + out).exit_code, 22);
  EXPECT_EQ(ReadWhole(out), "no such export");

  result = Call("/broken", "-o " + Path("broken.txt"),
                "OUTBOUND_MAX_RESPONSE_BYTES=65536 OUTBOUND_MAX_ATTEMPTS=1");
  EXPECT_EQ(result.exit_code, 63);
  std::string err = Stderr();
  EXPECT_NE(err.find("OUTBOUND_MAX_RESPONSE_BYTES"), std::string::npos) << err;
  EXPECT_FALSE(ReadWhole(Path("broken.txt")));  // no answer: no file
}

// An error answer's body has the smaller limit of its own: past it the
// command names OUTBOUND_MAX_ERROR_RESPONSE_BYTES, the one variable that
// raises it (raising OUTBOUND_MAX_RESPONSE_BYTES would change nothing).
TEST_F(OutboundCallTest, AnErrorAnswerPastItsOwnLimitNamesTheVariableThatRaisesIt) {
  const std::string page = NumberedBody(100 * 1024);
  Serve([page](const ServerRequest&) { return Reply::Status(500, page); });
  CommandResult result = Call("/broken", "", "OUTBOUND_MAX_ERROR_RESPONSE_BYTES=65536");
  EXPECT_EQ(result.exit_code, 63);
  std::string err = Stderr();
  EXPECT_NE(err.find("error answer's body is larger than 65536 bytes"), std::string::npos) << err;
  EXPECT_NE(err.find("limited to OUTBOUND_MAX_ERROR_RESPONSE_BYTES (65536 bytes); raise it"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("OUTBOUND_MAX_RESPONSE_BYTES"), std::string::npos) << err;

  // Within it, the answer is the command's output, as any other.
  result = Call("/broken", "", "OUTBOUND_MAX_ERROR_RESPONSE_BYTES=200000");
  EXPECT_EQ(result.exit_code, 0) << Stderr();
  EXPECT_TRUE(result.output == page);
}

// A file that cannot be written ends the call with exit 23, whether it
// fails at the first byte or part way through a streamed body.
TEST_F(OutboundCallTest, OutputThatCannotBeWrittenExits23) {
  const std::string body = NumberedBody(1024 * 1024);
  Serve([body](const ServerRequest&) { return Reply::Ok(body); });
  const std::string limit = "OUTBOUND_MAX_RESPONSE_BYTES=65536";
  CommandResult result = Call("/", "-o " + Path("no-such-dir/out.bin"), limit);
  EXPECT_EQ(result.exit_code, 23);
  EXPECT_NE(Stderr().find("cannot write " + Path("no-such-dir/out.bin")), std::string::npos)
      << Stderr();
  if (std::filesystem::exists("/dev/full")) {  // every write fails: ENOSPC
    result = Call("/", "-o /dev/full", limit);
    EXPECT_EQ(result.exit_code, 23);
    std::string err = Stderr();
    EXPECT_NE(err.find("cannot write /dev/full"), std::string::npos) << err;
    EXPECT_EQ(err.find("cancelled"), std::string::npos) << err;
    // The same for the standard output, and for a reader gone away (no
    // SIGPIPE death: the write fails, and the command says so).
    result = Call("/", ">/dev/full");
    EXPECT_EQ(result.exit_code, 23);
    EXPECT_NE(Stderr().find("cannot write the output"), std::string::npos) << Stderr();
  }
}

// `bench`'s figures are its result: a standard output that cannot take
// them exits 23 too, not 0.
TEST_F(OutboundCallTest, BenchFiguresThatCannotBeWrittenExit23) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  Serve([](const ServerRequest&) { return Reply::Ok("ok"); });
  std::string cafile = dir.Write("ca.pem", ca.pem());
  std::string bench =
      "env OUTBOUND_CA_FILE=" + cafile + " " + kOutbound +
      " bench -n 5 -c 1 --connect-to payments:8443:127.0.0.1:" + std::to_string(server->port()) +
      " https://payments:8443/";
  EXPECT_EQ(RunCommand(bench + " >/dev/null 2>" + err_path).exit_code, 0) << Stderr();
  EXPECT_EQ(RunCommand(bench + " >/dev/full 2>" + err_path).exit_code, 23);
  EXPECT_NE(Stderr().find("cannot write the output"), std::string::npos) << Stderr();
}

// `bench`'s attempts per call are those the dependency received, as the
// gRPC bench counts them: a call the breaker turned away sent none. It
// counted each refusal as an attempt, so a run mostly turned away showed
// about one attempt a call, and the same run over gRPC about none.
TEST_F(OutboundCallTest, BenchCountsTheAttemptsSentNotTheBreakersRefusals) {
  Serve([](const ServerRequest&) { return Reply::Status(503); });
  std::string cafile = dir.Write("ca.pem", ca.pem());
  CommandResult result = RunCommand(
      "env OUTBOUND_CA_FILE=" + cafile + " OUTBOUND_BACKOFF_BASE=1ms OUTBOUND_BACKOFF_MAX=1ms " +
      kOutbound + " bench -n 40 -c 1 --json - --connect-to payments:8443:127.0.0.1:" +
      std::to_string(server->port()) + " https://payments:8443/ 2>" + err_path);
  EXPECT_EQ(result.exit_code, 1) << result.output << Stderr();  // the calls failed
  auto json = nlohmann::json::parse(result.output.substr(result.output.rfind("\n{") + 1));
  EXPECT_GT(json["errors"].value("rejected", 0), 0) << result.output;
  EXPECT_DOUBLE_EQ(json["attempts_per_call"].get<double>() * 40,
                   static_cast<double>(server->request_count()))
      << result.output;
}

// A streamed body cut short leaves in the file what had arrived, and the
// command exits 7 (the attempt is final once a byte went to the file).
TEST_F(OutboundCallTest, OutputKeepsWhatArrivedOfABodyCutShort) {
  const std::string body = NumberedBody(256 * 1024);
  Serve([body](const ServerRequest&) { return Reply::ResetAfter(100 * 1024, body); });
  std::string out = Path("cut.bin");
  CommandResult result = Call("/", "-o " + out);
  EXPECT_EQ(result.exit_code, 7) << Stderr();
  EXPECT_EQ(server->request_count(), 1u);
  std::optional<std::string> written = ReadWhole(out);
  ASSERT_TRUE(written);
  EXPECT_TRUE(*written == body.substr(0, 100 * 1024)) << written->size();
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

// A CA file, a certificate or a key beside an http URL would be ignored
// and the call made in plain text: the command refuses, naming both.
TEST_F(OutboundCallTest, TlsFilesBesideAnHttpUrlAreRefused) {
  std::string cafile = dir.Write("ca.pem", ca.pem());
  CommandResult result = RunCommand("env OUTBOUND_CA_FILE=" + cafile + " " + kOutbound +
                                    " call http://payments:8080/ 2>" + err_path);
  EXPECT_EQ(result.exit_code, 78);
  EXPECT_NE(Stderr().find("OUTBOUND_CA_FILE: set, but the URL is \"http://payments:8080\", "
                          "which is plain text: TLS needs an https URL"),
            std::string::npos)
      << Stderr();
  result = RunCommand("env " + kOutbound + " call --cacert " + cafile +
                      " http://payments:8080/ 2>" + err_path);
  EXPECT_EQ(result.exit_code, 78);
  EXPECT_NE(Stderr().find("--cacert: set, but the URL is \"http://payments:8080\", which is "
                          "plain text: TLS needs an https URL"),
            std::string::npos)
      << Stderr();
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

// Every variable the command reads is in its help: the list is the
// library's (config::HttpSettingsVariables), the help text the command's.
TEST(OutboundCommandTest, TheHelpNamesEveryVariableTheCommandReads) {
  CommandResult help = RunCommand(kOutbound + " call --help 2>&1");
  for (const std::string& name : config::HttpSettingsVariables("OUTBOUND_")) {
    if (name == "OUTBOUND_URL" || name == "OUTBOUND_TRANSPORT") continue;  // the argument; refused
    EXPECT_NE(help.output.find(name), std::string::npos) << name;
  }
}

// The help says each rule a user meets that is not a variable's name: TLS
// files beside an http URL, a misspelt variable, -o streaming, the limit of
// a held body and of an error answer's, a fault point in any case.
TEST(OutboundCommandTest, TheHelpSaysTheRulesAUserMeets) {
  CommandResult help = RunCommand(kOutbound + " call --help 2>&1");
  std::string text;  // the help's words, one space between each
  std::istringstream words(help.output);
  for (std::string word; words >> word;) text += (text.empty() ? "" : " ") + word;
  for (const char* rule : {
           "a CA file, certificate or key beside an http URL is bad",
           "another OUTBOUND_ variable is warned about, with the one it most likely misspells",
           "the body of a 2xx answer is written to FILE as it arrives, in constant memory and "
           "with no size limit",
           "a body over OUTBOUND_MAX_RESPONSE_BYTES (default 67108864) fails the call with exit 63",
           "the body of an answer of 400 and above over OUTBOUND_MAX_ERROR_RESPONSE_BYTES "
           "(default 1048576)",
           "the message names the variable that raises the limit the body met",
           "the point of a URL's client is http:HOST:PORT, in any case",
       }) {
    EXPECT_NE(text.find(rule), std::string::npos) << rule;
  }
}

TEST(OutboundCommandTest, AnFtpUrlWithoutAPortIsAUsageErrorSayingSo) {
  CommandResult result = RunCommand(kOutbound + " call ftp://files/a 2>&1");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.output.find("\"ftp://files/a\" is not an http or https URL"), std::string::npos)
      << result.output;
}

// Numbers are read whole: "1e6" calls, "5s" or "nan" seconds are usage
// errors (a NaN once ran the overload demo for ever), and so is a count of
// calls past what the machine can keep the latencies of.
TEST(OutboundCommandTest, NumbersThatDoNotReadWholeAreUsageErrors) {
  for (const char* line :
       {" bench -n 1e6 https://x:1/", " bench -c 8x https://x:1/",
        " bench -n 100000000000 https://x:1/", " bench --rss-every 1e3 https://x:1/",
        " demo --seconds nan", " demo --scenario overload --seconds nan", " demo --seconds 5s",
        " demo --rps 10x"}) {
    CommandResult result = RunCommand("timeout 20 " + kOutbound + line + " 2>&1");
    EXPECT_EQ(result.exit_code, 2) << line << "\n" << result.output;
  }
  // A flag at the end without its value says so.
  CommandResult bare = RunCommand(kOutbound + " demo --seconds 2>&1");
  EXPECT_EQ(bare.exit_code, 2);
  EXPECT_NE(bare.output.find("--seconds needs a value"), std::string::npos) << bare.output;
}

// A bad port in the command line's URL is a usage error in the URL's own
// words, not a bad variable (78) naming a field the user never wrote.
TEST(OutboundCommandTest, APortOutOfRangeInTheUrlIsAUsageError) {
  for (const char* line : {" call https://payments:99999/", " bench -n 1 https://payments:0/"}) {
    CommandResult result = RunCommand(kOutbound + line + " 2>&1");
    EXPECT_EQ(result.exit_code, 2) << line << ": " << result.output;
    EXPECT_NE(result.output.find("port"), std::string::npos) << result.output;
    EXPECT_EQ(result.output.find("Settings."), std::string::npos) << result.output;
  }
}

// One URL a command: a second is a usage error, not silently the target.
TEST(OutboundCommandTest, ASecondUrlIsAUsageError) {
  for (const char* line : {" call https://127.0.0.1:1/a https://127.0.0.1:1/b",
                           " bench -n 1 https://127.0.0.1:1/a https://127.0.0.1:1/b"}) {
    CommandResult result = RunCommand("timeout 20 " + kOutbound + line + " 2>&1");
    EXPECT_EQ(result.exit_code, 2) << line << ": " << result.output;
    EXPECT_NE(result.output.find("one URL only"), std::string::npos) << result.output;
  }
}

TEST(OutboundCommandTest, AnFtpUrlIsAUsageError) {
  CommandResult result = RunCommand(kOutbound + " call ftp://files:21/a 2>&1");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.output.find("\"ftp://files:21/a\" is not an http or https URL"),
            std::string::npos)
      << result.output;
}

// The short run CI makes tells the same story as the default 30 s one: the
// checks are relations between the two services (ratios and orderings),
// not absolute times. One run, so every check is in one test.
TEST(OutboundDemoTest, ShortRunShowsWhatTheBreakerIsFor) {
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  // The demo runs on real time; its relations hold on a machine running at
  // speed, not under a sanitizer's slowdown beside other tests (under ASan
  // in CI the other dependency's served share came out 0.9966 against the
  // naive client's 1). The normal build runs it.
  GTEST_SKIP() << "real-time relations: not meaningful under a sanitizer";
#endif
  TempDir dir;
  std::string json = dir.Write("demo.json", "");
  std::string svg = dir.Write("demo.svg", "");
  CommandResult result =
      RunCommand(kOutbound + " demo --seconds 6 --json " + json + " --svg " + svg);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const std::string& out = result.output;
  auto report = nlohmann::json::parse(RunCommand("cat " + json).output);
  const auto& naive = report["clients"]["naive"];
  const auto& outbound = report["clients"]["outbound"];
  auto phase = [](const nlohmann::json& side, const char* name) -> const nlohmann::json& {
    return side["phases"][name];
  };
  auto number = [](const nlohmann::json& v) { return v.get<double>(); };

  {
    SCOPED_TRACE("the table leads with what a service owner cares about");
    std::size_t other = out.find("your service's other requests still served");
    std::size_t waited = out.find("callers waited");
    std::size_t load = out.find("load on the sick dependency");
    std::size_t success = out.find("calls that reached the dependency and succeeded");
    ASSERT_NE(other, std::string::npos) << out;
    EXPECT_LT(other, waited);
    EXPECT_LT(waited, load);
    EXPECT_LT(load, success);
  }
  // The last two cells of each phase's row under the table's row `label`:
  // naive's and outbound's, each one word ("85.9%", "–").
  auto phase_cells = [&](const std::string& label) {
    std::map<std::string, std::pair<std::string, std::string>> cells;
    std::size_t at = out.find("\n  " + label);
    if (at == std::string::npos) return cells;
    std::istringstream lines(out.substr(out.find('\n', at + 1) + 1));
    std::string line;
    for (const char* name : {"healthy", "503 storm", "hanging", "healthy again"}) {
      std::getline(lines, line);
      std::istringstream words(line);
      std::vector<std::string> w{std::istream_iterator<std::string>(words), {}};
      if (w.size() < 3 || line.find(std::string("    ") + name + " ") != 0) break;
      cells[name] = {w[w.size() - 2], w[w.size() - 1]};
    }
    return cells;
  };
  const std::string nothing = "\u2013";  // "–"
  // A count of the JSON, -1 if it is missing.
  auto count = [](const nlohmann::json& j, const char* key) { return j.value(key, -1); };
  {
    SCOPED_TRACE("where there is nothing to measure, the table and the progress say \"–\"");
    // The first progress line comes at 0 s, before any request has ended.
    std::string first = out.substr(0, out.find('\n'));
    EXPECT_NE(first.find("naive served " + nothing + " of other requests"), std::string::npos)
        << first;
    EXPECT_EQ(first.find("0.0%"), std::string::npos) << first;
    // A phase in which a service made no call (the naive one's slots are
    // still held by hung calls after the heal) has no success rate and no
    // attempts per call: null in the JSON, "–" in the table.
    auto success = phase_cells("calls that reached the dependency and succeeded");
    auto attempts = phase_cells("attempts at the dependency per call made");
    EXPECT_EQ(success.size(), 4u) << out;  // a phase's missing cell reads ""
    EXPECT_EQ(attempts.size(), 4u) << out;
    int empty_phases = 0;
    for (const char* side : {"naive", "outbound"}) {
      for (const char* name : {"healthy", "503 storm", "hanging", "healthy again"}) {
        SCOPED_TRACE(std::string(side) + ", " + name);
        const auto& p = phase(report["clients"][side], name);
        const std::string& cell =
            side == std::string("naive") ? success[name].first : success[name].second;
        const std::string& per_call =
            side == std::string("naive") ? attempts[name].first : attempts[name].second;
        if (p["calls"].get<int>() == 0) {
          ++empty_phases;
          EXPECT_TRUE(p["call_success_rate"].is_null());
          EXPECT_TRUE(p.contains("reached_success_rate") && p["reached_success_rate"].is_null());
          EXPECT_TRUE(p["attempts_per_call"].is_null());
          EXPECT_EQ(cell, nothing);
          EXPECT_EQ(per_call, nothing);
        } else {
          EXPECT_NE(per_call, nothing);
        }
      }
    }
    // How many there are is the run's timing (the naive service's last
    // phase has had none in every run so far): recorded, not asserted.
    ::testing::Test::RecordProperty("phases_with_no_call", empty_phases);
  }
  {
    SCOPED_TRACE(
        "the calls made are split: failed at once by the breaker, or reached the dependency");
    EXPECT_EQ(out.find("dependency calls made that succeeded"), std::string::npos) << out;
    std::size_t made = out.find("\n  dependency calls made (a slot was free) ");
    std::size_t unsent = out.find("\n    failed at once by the breaker, nothing sent ");
    std::size_t reached = out.find("\n    reached the dependency ");
    std::size_t success = out.find("\n  calls that reached the dependency and succeeded ");
    EXPECT_NE(made, std::string::npos) << out;
    EXPECT_LT(made, unsent);
    EXPECT_LT(unsent, reached);
    EXPECT_LT(reached, success);
    std::string unsent_row = out.substr(unsent + 1, out.find('\n', unsent + 1) - unsent - 1);
    EXPECT_NE(unsent_row.find(nothing + " (no breaker)"), std::string::npos) << unsent_row;
    for (const char* side : {"naive", "outbound"}) {
      const auto& all = report["clients"][side]["all"];
      EXPECT_GE(count(all, "failed_by_breaker_unsent"), 0) << side;
      EXPECT_GE(count(all, "calls_reached_dependency"), 0) << side;
      EXPECT_LE(count(all, "failed_by_breaker_unsent") + count(all, "calls_reached_dependency"),
                count(all, "calls"))
          << side;
    }
    EXPECT_EQ(count(naive["all"], "failed_by_breaker_unsent"), 0);
    const auto& all = outbound["all"];
    EXPECT_GT(count(all, "failed_by_breaker_unsent"), 0);
    // A call failed at once never succeeds: left out, the rest succeed more
    // often.
    EXPECT_GT(all.value("reached_success_rate", -1.0), number(all["call_success_rate"]));
  }
  {
    SCOPED_TRACE("the footer says the settings were scaled, and to what");
    EXPECT_EQ(out.find("default settings"), std::string::npos) << out;
    EXPECT_NE(out.find("the library's defaults, every duration scaled by 6/30 (--seconds 6)"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("Timeout 2.0 s, AttemptTimeout 1.0 s, 3 attempts"), std::string::npos)
        << out;
    EXPECT_NE(out.find("breaker.slow_call 50 ms"), std::string::npos) << out;
    EXPECT_NE(out.find("naive client: one attempt, no breaker, Timeout 2.0 s"), std::string::npos)
        << out;
  }
  {
    SCOPED_TRACE("outbound's service keeps serving its other requests through the hang");
    EXPECT_GE(number(outbound["all"]["other_served"]), 0.95) << out;
    EXPECT_GE(number(phase(outbound, "hanging")["other_served"]), 0.95) << out;
    for (const char* name : {"healthy", "503 storm", "hanging", "healthy again"}) {
      EXPECT_GE(number(phase(outbound, name)["other_served"]),
                number(phase(naive, name)["other_served"]))
          << name;
    }
    // The naive service's hung calls take every slot: it turns away its
    // other requests too.
    EXPECT_LT(number(phase(naive, "hanging")["other_served"]),
              number(phase(outbound, "hanging")["other_served"]));
    EXPECT_EQ(phase(naive, "hanging")["slots_max"], report["slots"]);
    // (outbound's own peak is not asserted: on a loaded machine the first
    // hung calls can briefly hold every slot before the breaker opens.)
  }
  {
    SCOPED_TRACE("outbound's callers wait less on failures");
    EXPECT_LT(number(outbound["all"]["time_to_fail_p50_ms"]),
              number(naive["all"]["time_to_fail_p50_ms"]));
    EXPECT_LT(number(outbound["all"]["caller_seconds_waited_on_failures"]),
              number(naive["all"]["caller_seconds_waited_on_failures"]));
  }
  {
    SCOPED_TRACE("the hung dependency gets at most one attempt in twenty calls");
    const auto& hanging = phase(outbound, "hanging");
    EXPECT_GT(hanging["calls"].get<int>(), 100);
    EXPECT_LE(number(hanging["attempts_per_call"]), 0.05) << out;
    EXPECT_GT(hanging["rejected_by_breaker"].get<int>(), 0);
  }
  {
    SCOPED_TRACE("the breaker closes within 1 s (of the 30 s run) of the dependency healing");
    const double scale = number(report["seconds"]) / 30;
    ASSERT_FALSE(outbound["closed_after_heal_seconds"].is_null()) << out;
    EXPECT_GE(number(outbound["closed_after_heal_seconds"]), 0);
    EXPECT_LE(number(outbound["closed_after_heal_seconds"]), 1.0 * scale) << out;
    // Most of the phase's calls succeed: the breaker closed early in it (a
    // loaded CI machine runs the demo late, so no tighter than this).
    EXPECT_GT(number(phase(outbound, "healthy again")["call_success_rate"]), 0.8);
  }
  {
    SCOPED_TRACE("retries win calls back in the storm without multiplying the load");
    EXPECT_GT(phase(naive, "503 storm")["calls"].get<int>(), 50);
    EXPECT_GT(number(phase(outbound, "503 storm")["call_success_rate"]),
              number(phase(naive, "503 storm")["call_success_rate"]));
    EXPECT_LE(number(phase(outbound, "503 storm")["attempts_per_call"]), 1.5);
  }
  {
    SCOPED_TRACE("the timeline renders to an image");
    std::string png = dir.Write("demo.png", "");
    CommandResult render = RunCommand("rsvg-convert -o " + png + " " + svg + " 2>&1");
    ASSERT_EQ(render.exit_code, 0) << render.output;
    // A PNG of the SVG's size: the signature, then IHDR's width and height.
    std::string header =
        RunCommand("head -c 24 " + png + " | od -An -tx1 -v | tr -d ' \\n'").output;
    EXPECT_EQ(header.substr(0, 16), "89504e470d0a1a0a") << header;
    EXPECT_EQ(header.substr(32, 16), "000003e800000262") << header;  // 1000 x 610
    // Drawn on: a rendered timeline compresses far worse than a blank page.
    EXPECT_GT(std::stol(RunCommand("stat -c %s " + png).output), 20000);
    std::string text = RunCommand("cat " + svg).output;
    for (const char* label : {"requests served/s, both kinds, by when they ended",
                              "attempts/s arriving at the dependency", "dependency healed",
                              "breaker closed", "slots in use"}) {
      EXPECT_NE(text.find(label), std::string::npos) << label;
    }
  }
}

// --fault injects into both services' calls: with every attempt answered
// 500, neither service serves a request that needs the dependency, even
// while the dependency is healthy.
TEST(OutboundDemoTest, AFaultScenarioReachesBothServicesCalls) {
  TempDir dir;
  std::string json = dir.Write("demo.json", "");
  CommandResult result =
      RunCommand(kOutbound + " demo --seconds 3 --fault 'http:payments:8443=status:500' --json " +
                 json + " --svg " + dir.Write("demo.svg", ""));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  auto report = nlohmann::json::parse(RunCommand("cat " + json).output);
  for (const char* side : {"naive", "outbound"}) {
    SCOPED_TRACE(side);
    const auto& healthy = report["clients"][side]["phases"]["healthy"];
    EXPECT_GT(healthy["dependency_requests"].get<int>(), 0);
    EXPECT_EQ(healthy["dependency_served"].get<double>(), 0.0) << result.output;
  }
  CommandResult bad = RunCommand(kOutbound + " demo --fault");
  EXPECT_NE(bad.exit_code, 0);
}

// The overload scenario (issue 32's Done-when): against a dependency whose
// latency grows with the calls it holds, called at twice its capacity,
// outbound's adaptive concurrency keeps its goodput at 90% of the
// dependency's capacity or more and its p99 within twice the unloaded
// latency, while the naive client's goodput collapses.
TEST(OutboundDemoTest, TheOverloadScenarioShowsWhatAdaptiveConcurrencyIsFor) {
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "real-time relations: not meaningful under a sanitizer";
#endif
  TempDir dir;
  std::string json = dir.Write("overload.json", "");
  std::string svg = dir.Write("overload.svg", "");
  CommandResult result = RunCommand(kOutbound + " demo --scenario overload --seconds 9 --json " +
                                    json + " --svg " + svg);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  auto report = nlohmann::json::parse(RunCommand("cat " + json).output);
  SCOPED_TRACE(report.dump());
  const auto& naive = report["clients"]["naive"];
  const auto& outbound = report["clients"]["outbound"];
  double unloaded = report["dependency"]["unloaded_ms"].get<double>();
  EXPECT_GE(outbound["goodput_of_capacity"].get<double>(), 0.9);
  EXPECT_LE(outbound["p99_ms"].get<double>(), 2 * unloaded);
  EXPECT_GT(outbound["rejected_at_once"].get<int>(), 0);
  EXPECT_LT(naive["goodput_of_capacity"].get<double>(), 0.5);
  EXPECT_NE(result.output.find("answers in time a second"), std::string::npos);
  EXPECT_NE(RunCommand("cat " + svg).output.find("<polyline"), std::string::npos);
  EXPECT_NE(RunCommand(kOutbound + " demo --scenario overload --rps 10").exit_code, 0);
  EXPECT_NE(RunCommand(kOutbound + " demo --scenario flood").exit_code, 0);
}

// The slow-tail scenario (issue 32's Done-when): against a dependency of
// which 1 % of answers take 1 s, outbound's hedging brings its p99 below
// three times the dependency's median at no more than 5 % extra attempts,
// and every call the naive client made slow is fast on outbound's side.
TEST(OutboundDemoTest, TheSlowTailScenarioShowsWhatHedgingIsFor) {
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "real-time relations: not meaningful under a sanitizer";
#endif
  TempDir dir;
  std::string json = dir.Write("slow-tail.json", "");
  std::string svg = dir.Write("slow-tail.svg", "");
  CommandResult result = RunCommand(kOutbound + " demo --scenario slow-tail --seconds 9 --json " +
                                    json + " --svg " + svg);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  auto report = nlohmann::json::parse(RunCommand("cat " + json).output);
  SCOPED_TRACE(report.dump());
  const auto& naive = report["clients"]["naive"];
  const auto& outbound = report["clients"]["outbound"];
  double p50 = report["dependency"]["p50_ms"].get<double>();
  EXPECT_LT(outbound["p99_ms"].get<double>(), 3 * p50);
  EXPECT_LE(outbound["extra_attempts_share"].get<double>(), 0.05);
  EXPECT_GT(outbound["hedges"].get<int>(), 0);
  EXPECT_EQ(outbound["answered"].get<int>(), outbound["calls"].get<int>());
  // The naive client waited out each slow answer (1 % of 900); outbound's
  // hedges answered instead.
  EXPECT_GE(naive["slower_than_3x_p50"].get<int>(), 5);
  EXPECT_LT(outbound["slower_than_3x_p50"].get<int>(), naive["slower_than_3x_p50"].get<int>());
  EXPECT_GT(naive["max_ms"].get<double>(), 900);
  EXPECT_NE(result.output.find("calls over 3x the dependency's median"), std::string::npos);
  EXPECT_NE(RunCommand("cat " + svg).output.find("<circle"), std::string::npos);
  EXPECT_NE(RunCommand(kOutbound + " demo --scenario slow-tail --rps 10").exit_code, 0);
}

TEST(OutboundDemoTest, TheReplicaDiesScenarioShowsWhatBalancingIsFor) {
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "real-time relations: not meaningful under a sanitizer";
#endif
  TempDir dir;
  std::string json = dir.Write("replica.json", "");
  std::string svg = dir.Write("replica.svg", "");
  CommandResult result = RunCommand(
      kOutbound + " demo --scenario replica-dies --seconds 6 --json " + json + " --svg " + svg);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  auto report = nlohmann::json::parse(RunCommand("cat " + json).output);
  SCOPED_TRACE(report.dump());
  const auto& naive = report["clients"]["naive"];
  const auto& outbound = report["clients"]["outbound"];
  // A third of the naive client's calls after the death went to the dead
  // replica; outbound's went again elsewhere, and then not there at all.
  EXPECT_GE(naive["failed_after_the_death"].get<int>(), 100);
  EXPECT_GE(outbound["success_share"].get<double>(), 0.999);
  // A few calls went again (the ones on the replica as it died, those
  // refused before it was set aside): far fewer than the naive client lost.
  int again = outbound["attempts"].get<int>() - outbound["calls"].get<int>();
  EXPECT_LT(again, naive["failed_after_the_death"].get<int>() / 4);
  EXPECT_NE(result.output.find("failed after the replica died"), std::string::npos);
  EXPECT_NE(RunCommand("cat " + svg).output.find("<polyline"), std::string::npos);
}

}  // namespace
}  // namespace outbound::testing
