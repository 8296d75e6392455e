// SPDX-License-Identifier: Apache-2.0
// Operator control from a runtime file (config::RuntimeFile): a client's
// breaker, failure injection and rate limit switched by a file the process
// watches, in fake time (the kit's ManualClock drives the watch timer) on
// the kit's FakeTransport; the files in a temporary directory of the test's.
#include "outbound/config/runtime_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "../http/client_test_support.h"
#include "outbound/testing/telemetry.h"

namespace outbound::config {
namespace {

namespace fs = std::filesystem;
using http::Request;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;
using testing::Reply;
using testing::ServerRequest;

// A directory of the test's own, removed with it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::path(::testing::TempDir()) / "runtime_file_XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void Write(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

std::string Payments(const std::string& fields) {
  return R"({"dependencies": {"payments": )" + fields + "}}";
}

class RuntimeFileTest : public http::FakeTransportTestBase, public ::testing::Test {
 protected:
  RuntimeFileTest() {
    runtime.telemetry = recorded.telemetry();
    Serve([](const ServerRequest&) { return Reply::Ok("real"); });
  }

  std::unique_ptr<RuntimeFile> Watch(const std::string& text) {
    Write(file, text);
    auto watched = RuntimeFile::Watch(runtime, file.string());
    EXPECT_TRUE(watched) << watched.error().message();
    return watched ? std::move(*watched) : nullptr;
  }

  // Writes the file anew and lets the watch timer's next tick read it.
  void Change(const std::string& text) {
    Write(file, text);
    clock.Advance(seconds(1));
  }

  std::vector<telemetry::LogRecord> Logs(std::string_view scope, std::string_view starting) {
    std::vector<telemetry::LogRecord> found;
    for (auto& log : recorded.Logs()) {
      if (log.scope == scope && log.body.rfind(starting, 0) == 0) found.push_back(log);
    }
    return found;
  }
  std::vector<telemetry::LogRecord> Refusals() {
    return Logs("outbound.config", "runtime file refused");
  }

  double State(std::string_view state) {
    return recorded.Value("outbound.circuit.state", {{"state", state}});
  }

  static Request WithScenario(std::string scenario) {
    return Request::Get("/charges")
        .WithContext(Context{.baggage = {{"outbound-fault", std::move(scenario), ""}}});
  }

  testing::InMemoryTelemetry recorded{DefaultRandom()};
  TempDir dir;
  fs::path file = dir.path() / "runtime.json";
};

TEST_F(RuntimeFileTest, TheFileAtStartAppliesToAClientAsItIsControlled) {
  auto control = Watch(Payments(R"({"breaker": "isolate"})"));
  auto client = MakeClient();
  Subscription held = control->Control("payments", *client);
  auto result = client->Send(Request::Get("/"));
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind(), ErrorKind::kRejected);
  EXPECT_EQ(server->request_count(), 0U);
  EXPECT_EQ(State("isolated"), 1);
  // Counted and logged as any override is.
  EXPECT_EQ(recorded.Value("outbound.circuit.overrides", {{"override", "isolate"}}), 1);
  EXPECT_EQ(Logs("outbound.http", "circuit breaker override: isolate").size(), 1U);
}

TEST_F(RuntimeFileTest, AnotherDependencysEntryLeavesTheClientAlone) {
  auto control = Watch(R"({"dependencies": {"carts": {"breaker": "isolate"}}})");
  auto client = MakeClient();
  Subscription held = control->Control("payments", *client);
  EXPECT_TRUE(client->Send(Request::Get("/")));
  EXPECT_EQ(recorded.Value("outbound.circuit.overrides", {{"override", "isolate"}}), 0);
}

TEST_F(RuntimeFileTest, AChangeAppliesOnTheNextTickAndNotBefore) {
  auto control = Watch(R"({"dependencies": {}})");
  auto client = MakeClient();
  Subscription held = control->Control("payments", *client);
  ASSERT_TRUE(client->Send(Request::Get("/")));
  Write(file, Payments(R"({"breaker": "isolate"})"));
  clock.Advance(milliseconds(999));
  ASSERT_TRUE(client->Send(Request::Get("/")));
  clock.Advance(milliseconds(1));
  auto result = client->Send(Request::Get("/"));
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind(), ErrorKind::kRejected);
  EXPECT_EQ(server->request_count(), 2U);
  // The same bytes read again change nothing and log nothing more.
  clock.Advance(seconds(5));
  EXPECT_EQ(recorded.Value("outbound.circuit.overrides", {{"override", "isolate"}}), 1);
}

TEST_F(RuntimeFileTest, ABadFileIsRefusedWholeWithOneLogRecordAndTheLastGoodStateKept) {
  struct Bad {
    std::string text;
    std::string named;  // what the record must say is wrong
  };
  const Bad kBad[] = {
      {"{\"dependencies\": {", "is not JSON"},
      {Payments(R"({"breaker": "isolate", "rate_limt": "1/s"})"),
       "dependencies.payments.rate_limt: not a key; did you mean rate_limit?"},
      {R"({"dependencis": {"payments": {"breaker": "isolate"}}})",
       "dependencis: not a key; did you mean dependencies?"},
      {Payments(R"({"breaker": "isolated"})"),
       "dependencies.payments.breaker: \"isolated\" is not force_open, force_closed, isolate or "
       "release"},
      {Payments(R"({"breaker": "isolate", "rate_limit": "fast"})"),
       "dependencies.payments.rate_limit: \"fast\" is not a rate"},
      {Payments(R"({"breaker": "isolate", "faults": {"enabled": "yes"}})"),
       "dependencies.payments.faults.enabled: \"yes\" is not true or false"},
  };
  auto control = Watch(Payments(R"({"breaker": "force_closed"})"));
  auto client = MakeClient();
  Subscription held = control->Control("payments", *client);
  std::size_t refusals = 0;
  for (const Bad& bad : kBad) {
    SCOPED_TRACE(bad.text);
    Change(bad.text);
    // Nothing of it applied: still held closed, never isolated.
    EXPECT_EQ(State("forced-closed"), 1);
    EXPECT_TRUE(client->Send(Request::Get("/")));
    // One record, naming the file and what is wrong, however many ticks.
    clock.Advance(seconds(3));
    auto logged = Refusals();
    ASSERT_EQ(logged.size(), ++refusals);
    EXPECT_EQ(logged.back().severity, telemetry::Severity::kWarn);
    EXPECT_THAT(logged.back().body, HasSubstr(file.string()));
    EXPECT_THAT(logged.back().body, HasSubstr(bad.named));
    auto reload = control->Reload();
    ASSERT_FALSE(reload);
    EXPECT_THAT(reload.error().message(), HasSubstr(bad.named));
  }
  EXPECT_EQ(recorded.Value("outbound.circuit.overrides", {{"override", "isolate"}}), 0);
  // A good file again applies.
  Change(Payments(R"({"breaker": "isolate"})"));
  EXPECT_EQ(State("isolated"), 1);
  EXPECT_TRUE(control->Reload());
}

TEST_F(RuntimeFileTest, AFileThatVanishesIsRefusedOnceAndItsStateKept) {
  auto control = Watch(Payments(R"({"breaker": "isolate"})"));
  auto client = MakeClient();
  Subscription held = control->Control("payments", *client);
  fs::remove(file);
  clock.Advance(seconds(5));
  ASSERT_EQ(Refusals().size(), 1U);
  EXPECT_THAT(Refusals()[0].body, HasSubstr("cannot read \"" + file.string() + "\""));
  EXPECT_EQ(State("isolated"), 1);
}

TEST_F(RuntimeFileTest, AnUnreadableOrBadFileAtStartIsAnErrorNamingIt) {
  auto missing = RuntimeFile::Watch(runtime, (dir.path() / "absent.json").string());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind(), ErrorKind::kInvalidSettings);
  EXPECT_THAT(missing.error().message(), HasSubstr("absent.json"));
  Write(file, Payments(R"({"brekaer": "isolate"})"));
  auto bad = RuntimeFile::Watch(runtime, file.string());
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message(), HasSubstr(file.string()));
  EXPECT_THAT(bad.error().message(), HasSubstr("did you mean breaker?"));
}

TEST_F(RuntimeFileTest, IsolateThenReleaseLetsCallsGoAgain) {
  auto control = Watch(Payments(R"({"breaker": "isolate"})"));
  auto client = MakeClient();
  Subscription held = control->Control("payments", *client);
  EXPECT_FALSE(client->Send(Request::Get("/")));
  Change(Payments(R"({"breaker": "release"})"));
  EXPECT_EQ(State("isolated"), 0);
  EXPECT_TRUE(client->Send(Request::Get("/")));
  EXPECT_EQ(server->request_count(), 1U);
  EXPECT_EQ(recorded.Value("outbound.circuit.overrides", {{"override", "release"}}), 1);
}

TEST_F(RuntimeFileTest, FaultsSwitchedOnFailCallsAsInjectedThenOffAgainDoNot) {
  auto control = Watch(R"({"dependencies": {}})");
  auto client = MakeClient();
  Subscription held = control->Control("payments", *client);
  // Off (the settings'): the scenario is not read.
  auto before = client->Send(WithScenario("http:payments:8443=status:404"));
  ASSERT_TRUE(before);
  EXPECT_EQ(before->status, 200);
  Change(Payments(R"({"faults": {"enabled": true}})"));
  auto injected = client->Send(WithScenario("http:payments:8443=status:404"));
  ASSERT_TRUE(injected);
  EXPECT_EQ(injected->status, 404);
  EXPECT_EQ(server->request_count(), 1U);
  EXPECT_EQ(Logs("outbound.http", "setting switched: faults on").size(), 1U);
  Change(Payments(R"({"faults": "off"})"));
  auto after = client->Send(WithScenario("http:payments:8443=status:404"));
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
  EXPECT_EQ(Logs("outbound.http", "setting switched: faults off").size(), 1U);
}

TEST_F(RuntimeFileTest, ARateLimitSwitchedOnHoldsCallsOverItThenOffLetsThemThrough) {
  auto control = Watch(R"({"dependencies": {}})");
  auto client = MakeClient();
  Subscription held = control->Control("payments", *client);
  auto hurried = [] { return Request::Get("/").WithTimeout(milliseconds(100)); };
  ASSERT_TRUE(client->Send(hurried()));
  ASSERT_TRUE(client->Send(hurried()));
  Change(Payments(R"({"rate_limit": "1/s"})"));
  ASSERT_TRUE(client->Send(hurried()));
  // The next token is a second away, past the call's deadline: refused at
  // once, nothing sent.
  auto over = client->Send(hurried());
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().kind(), ErrorKind::kDeadline);
  EXPECT_THAT(over.error().message(), HasSubstr("rate limit"));
  EXPECT_EQ(server->request_count(), 3U);
  EXPECT_EQ(Logs("outbound.http", "setting switched: rate_limit 1/s,1").size(), 1U);
  Change(Payments(R"({"rate_limit": "off"})"));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(client->Send(hurried()));
  EXPECT_EQ(server->request_count(), 8U);
}

TEST_F(RuntimeFileTest, ADependencyTheFileStopsNamingGoesBackToItsSettings) {
  http::Settings settings = PaymentsSettings();
  settings.rate_limit = http::WithRateLimit(100, 5);
  auto control =
      Watch(Payments(R"({"breaker": "force_closed", "faults": "on", "rate_limit": "2/s,2"})"));
  auto client = MakeClient(settings);
  Subscription held = control->Control("payments", *client);
  EXPECT_EQ(State("forced-closed"), 1);
  EXPECT_TRUE(client->faults().enabled);
  ASSERT_TRUE(client->rate_limit());
  EXPECT_EQ(client->rate_limit()->per_second, 2);
  Change(R"({"dependencies": {}})");
  EXPECT_EQ(State("forced-closed"), 0);
  EXPECT_EQ(State("closed"), 1);
  EXPECT_FALSE(client->faults().enabled);
  ASSERT_TRUE(client->rate_limit());
  EXPECT_EQ(client->rate_limit()->per_second, 100);
  EXPECT_EQ(client->rate_limit()->burst, 5);
  EXPECT_EQ(recorded.Value("outbound.circuit.overrides", {{"override", "release"}}), 1);
}

TEST_F(RuntimeFileTest, ASubscriptionDestroyedGivesTheClientItsOwnSettingsBack) {
  auto control = Watch(Payments(R"({"breaker": "isolate", "faults": "on"})"));
  auto client = MakeClient();
  {
    Subscription held = control->Control("payments", *client);
    EXPECT_EQ(State("isolated"), 1);
  }
  EXPECT_EQ(State("isolated"), 0);
  EXPECT_FALSE(client->faults().enabled);
  // No longer controlled: a change of the file does nothing to it.
  Change(Payments(R"({"breaker": "force_open"})"));
  EXPECT_TRUE(client->Send(Request::Get("/")));
}

TEST_F(RuntimeFileTest, AConfigMapsSymlinkSwapIsSeenOnTheNextTick) {
  // A ConfigMap volume: the key is a link through `..data`, a link to a
  // timestamped directory; an update writes a new directory and renames a
  // new `..data` link over the old one, atomically.
  fs::path first = dir.path() / "..2026_12_03_a";
  fs::create_directory(first);
  Write(first / "runtime.json", R"({"dependencies": {}})");
  fs::create_directory_symlink(first.filename(), dir.path() / "..data");
  fs::create_symlink(fs::path("..data") / "runtime.json", file);
  auto watched = RuntimeFile::Watch(runtime, file.string());
  ASSERT_TRUE(watched) << watched.error().message();
  auto client = MakeClient();
  Subscription held = (*watched)->Control("payments", *client);
  ASSERT_TRUE(client->Send(Request::Get("/")));

  fs::path second = dir.path() / "..2026_12_03_b";
  fs::create_directory(second);
  Write(second / "runtime.json", Payments(R"({"breaker": "isolate"})"));
  fs::create_directory_symlink(second.filename(), dir.path() / "..data_tmp");
  fs::rename(dir.path() / "..data_tmp", dir.path() / "..data");
  fs::remove_all(first);
  clock.Advance(seconds(1));
  EXPECT_EQ(State("isolated"), 1);
  EXPECT_FALSE(client->Send(Request::Get("/")));
  EXPECT_TRUE(Refusals().empty());
}

}  // namespace
}  // namespace outbound::config
