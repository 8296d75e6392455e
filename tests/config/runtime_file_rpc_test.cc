// SPDX-License-Identifier: Apache-2.0
// A runtime file controls a gRPC client as it does an HTTP one: its
// breaker isolated and released, its failure injection switched on and
// off; against the kit's fake gRPC dependency, the watch timer on the
// kit's ManualClock.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "outbound/config/runtime_file.h"
#include "outbound/rpc/client.h"
#include "outbound/testing/fake_grpc.h"
#include "outbound/testing/manual_clock.h"
#include "outbound/testing/network_map.h"
#include "outbound/testing/telemetry.h"

namespace outbound::config {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

constexpr char kSay[] = "/outbound.test.Echo/Say";

class RuntimeFileRpcTest : public ::testing::Test {
 protected:
  RuntimeFileRpcTest() {
    std::string pattern = (fs::path(::testing::TempDir()) / "runtime_file_rpc_XXXXXX").string();
    dir_ = mkdtemp(pattern.data());
    file_ = dir_ / "runtime.json";
    runtime_.clock = &clock_;
    runtime_.network = &network_;
    runtime_.telemetry = recorded_.telemetry();
    testing::FakeGrpcOptions options;
    options.handler = [](const testing::GrpcRequest&) { return testing::GrpcReply::Ok("hi"); };
    options.clock = &clock_;
    auto started = testing::StartFakeGrpc(std::move(options));
    EXPECT_TRUE(started) << started.error().message();
    if (started) server_ = std::move(*started);
    network_.Add("backend", 9090, "127.0.0.1", server_->port());
  }
  ~RuntimeFileRpcTest() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  void Write(const std::string& text) {
    std::ofstream out(file_, std::ios::binary | std::ios::trunc);
    out << text;
  }
  static std::string Backend(const std::string& fields) {
    return R"({"dependencies": {"backend": )" + fields + "}}";
  }

  std::unique_ptr<rpc::Client> Make() {
    rpc::Settings settings = rpc::DefaultSettings();
    settings.addr = "backend:9090";
    auto client = rpc::Client::Create(runtime_, std::move(settings));
    EXPECT_TRUE(client) << client.error().message();
    return client ? std::move(*client) : nullptr;
  }

  static Context WithScenario(std::string scenario) {
    Context context;
    context.baggage = {{"outbound-fault", std::move(scenario), ""}};
    return context;
  }

  testing::ManualClock clock_;
  testing::NetworkMap network_;
  testing::InMemoryTelemetry recorded_{DefaultRandom()};
  Runtime runtime_;
  fs::path dir_;
  fs::path file_;
  std::unique_ptr<testing::FakeServer> server_;
};

TEST_F(RuntimeFileRpcTest, IsolateTurnsCallsAwayUntilTheFileReleasesTheBreaker) {
  Write(Backend(R"({"breaker": "isolate"})"));
  auto control = RuntimeFile::Watch(runtime_, file_.string());
  ASSERT_TRUE(control) << control.error().message();
  auto client = Make();
  Subscription held = (*control)->Control("backend", *client);
  rpc::Reply refused = client->Call(kSay, "");
  EXPECT_EQ(refused.status.code, rpc::Code::kUnavailable);
  EXPECT_EQ(refused.attempts, 0);
  EXPECT_EQ(server_->request_count(), 0U);
  EXPECT_EQ(recorded_.Value("outbound.circuit.overrides", {{"override", "isolate"}}), 1);
  Write(Backend(R"({"breaker": "release"})"));
  clock_.Advance(seconds(1));
  EXPECT_TRUE(client->Call(kSay, "").status.ok());
  EXPECT_EQ(server_->request_count(), 1U);
}

TEST_F(RuntimeFileRpcTest, FaultsSwitchedOnFailCallsAsInjectedThenOffAgainDoNot) {
  Write(R"({"dependencies": {}})");
  auto control = RuntimeFile::Watch(runtime_, file_.string());
  ASSERT_TRUE(control) << control.error().message();
  auto client = Make();
  Subscription held = (*control)->Control("backend", *client);
  const Context scenario = WithScenario("grpc:backend:9090=status:404");
  EXPECT_TRUE(client->Call(kSay, "", scenario).status.ok());
  Write(Backend(R"({"faults": "on"})"));
  clock_.Advance(seconds(1));
  rpc::Reply injected = client->Call(kSay, "", scenario);
  EXPECT_EQ(injected.status.code, rpc::Code::kUnimplemented);
  EXPECT_EQ(server_->request_count(), 1U);
  Write(Backend(R"({"faults": "off"})"));
  clock_.Advance(seconds(1));
  EXPECT_TRUE(client->Call(kSay, "", scenario).status.ok());
  EXPECT_EQ(server_->request_count(), 2U);
}

}  // namespace
}  // namespace outbound::config
