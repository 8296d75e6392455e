// SPDX-License-Identifier: Apache-2.0
// A real Prometheus scrapes a gRPC client's metrics while the test drives an
// outage of a real grpc++ server, and the test asks Prometheus's HTTP API
// what an operator's alerts ask, as tests/telemetry/prometheus_scrape_test.cc
// does for HTTP: the gRPC client's own series, by the names, labels and
// exposition Prometheus reads.
//
// The client runs on a ManualClock; Prometheus in real time, so the test
// polls it (a minute at most) until a scrape has seen each state.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "../telemetry/prometheus_server.h"
#include "echo_server.h"
#include "outbound/http/client.h"
#include "outbound/telemetry/metric_store.h"
#include "outbound/telemetry/prometheus.h"

namespace outbound::rpc {
namespace {

class RpcPrometheusScrape : public RpcClient {
 protected:
  RpcPrometheusScrape() { runtime_.telemetry.meters = &metrics_; }
  telemetry::MetricStore metrics_;
};

TEST_F(RpcPrometheusScrape, PrometheusSeesTheBreakerOpenAndTheOpeningAfterItClosed) {
  std::atomic<bool> healthy{false};
  EchoServer server([&](int, grpc::ServerContext*, const EchoRequest& request, EchoReply* reply) {
    if (!healthy) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "down");
    return Ok(reply, request);
  });
  auto exposer = telemetry::PrometheusExposer::Start(metrics_, "127.0.0.1:0");
  ASSERT_TRUE(exposer) << exposer.error().message();
  testing::Prometheus prometheus((*exposer)->port());
  ASSERT_TRUE(prometheus.started()) << "cannot start /usr/bin/prometheus";
  testing::PrometheusApi api(prometheus.port());
  ASSERT_TRUE(api.ready());
  Settings settings = DefaultSettings();
  settings.max_attempts = 1;
  auto carts = Make(server, settings);

  // A scrape before the outage: the transitions counter is there, at 0.
  ASSERT_TRUE(api.Eventually(R"(outbound_circuit_transitions_total{state="open"} == 0)"))
      << prometheus.Log();

  for (int i = 0; i < 5; ++i) EXPECT_EQ(Say(*carts, "x").code, Code::kUnavailable);
  ASSERT_EQ(carts->breaker().state(clock_.Now()), circuit::State::kOpen);
  nlohmann::json open;
  ASSERT_TRUE(api.Eventually(R"(outbound_circuit_state{state="open"} > 0)", &open))
      << prometheus.Log();
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0]["metric"]["server_address"], "backend");
  EXPECT_EQ(open[0]["metric"]["server_port"], "9090");

  healthy = true;
  clock_.Advance(std::chrono::seconds(10));  // OpenFor
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(Say(*carts, "x").ok());
  ASSERT_EQ(carts->breaker().state(clock_.Now()), circuit::State::kClosed);
  ASSERT_TRUE(api.Eventually(R"(outbound_circuit_state{state="closed"} > 0)"));
  EXPECT_TRUE(api.Query(R"(outbound_circuit_state{state="open"} > 0)").empty());
  // The alert on breakers that opened, however briefly, still fires.
  EXPECT_TRUE(
      api.Eventually(R"(increase(outbound_circuit_transitions_total{state="open"}[5m]) > 0)"));
  EXPECT_FALSE(api.Query(R"(outbound_circuit_calls_total{outcome="failure"} == 5)").empty());
  EXPECT_FALSE(api.Query(R"(outbound_circuit_calls_total{outcome="success"} == 3)").empty());
  EXPECT_FALSE(api.Query(R"(outbound_retry_budget_tokens > 0)").empty());
  // The attempts themselves, by their gRPC status.
  EXPECT_FALSE(
      api.Query(
             R"(rpc_client_call_duration_seconds_count{rpc_response_status_code="UNAVAILABLE"} == 5)")
          .empty());
  EXPECT_FALSE(
      api.Query(R"(rpc_client_call_duration_seconds_count{rpc_response_status_code="OK"} == 3)")
          .empty());
}

// An HTTP and a gRPC client on one store each record the resilience
// instruments under a scope of their own: one family per name on the page
// (strict parsers refuse a TYPE line twice), its series told apart by
// otel_scope_name, as Prometheus reads them.
TEST_F(RpcPrometheusScrape, AnHttpAndAGrpcClientOnOneStoreAreOnePageOfTwoScopes) {
  EchoServer server(Echoing());
  auto exposer = telemetry::PrometheusExposer::Start(metrics_, "127.0.0.1:0");
  ASSERT_TRUE(exposer) << exposer.error().message();
  testing::Prometheus prometheus((*exposer)->port());
  ASSERT_TRUE(prometheus.started()) << "cannot start /usr/bin/prometheus";
  testing::PrometheusApi api(prometheus.port());
  ASSERT_TRUE(api.ready());
  auto carts = Make(server);
  ASSERT_TRUE(carts);
  http::Settings web_settings;
  web_settings.base_url = "http://web:8080";
  auto web = http::Client::Create(runtime_, web_settings);
  ASSERT_TRUE(web) << web.error().message();

  nlohmann::json both;
  ASSERT_TRUE(
      api.Eventually(R"(count(outbound_circuit_transitions_total{state="open"}) == 2)", &both))
      << prometheus.Log();
  nlohmann::json series = api.Query(R"(outbound_circuit_transitions_total{state="open"})");
  ASSERT_EQ(series.size(), 2u) << series.dump();
  std::map<std::string, std::string> address_by_scope;
  for (const nlohmann::json& one : series) {
    address_by_scope[one["metric"].value("otel_scope_name", std::string())] =
        one["metric"].value("server_address", std::string());
  }
  EXPECT_EQ(address_by_scope["outbound.http"], "web") << series.dump();
  EXPECT_EQ(address_by_scope["outbound.rpc"], "backend") << series.dump();
  EXPECT_FALSE(api.Query(R"(up == 1)").empty()) << prometheus.Log();
  // And Prometheus's own strict reader of a page finds nothing wrong in it.
  EXPECT_EQ(testing::PromtoolProblems((*exposer)->port()), "");
}

}  // namespace
}  // namespace outbound::rpc
