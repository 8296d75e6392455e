// SPDX-License-Identifier: Apache-2.0
// A real Prometheus (Debian's `prometheus`) scrapes a client's metrics while
// the test drives an outage, and the test asks Prometheus's HTTP API the
// questions an operator's alerts ask. This proves the names, the labels and
// the exposition format, not only our reading of them.
//
// The payments client runs on a ManualClock; Prometheus runs in real time,
// so the test polls Prometheus (for a minute at most) until a scrape has
// seen each state. Nothing is asserted about how long that takes.
#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>

#include "../http/client_test_support.h"
#include "outbound/telemetry/metric_store.h"
#include "outbound/telemetry/prometheus.h"
#include "prometheus_server.h"

namespace outbound::telemetry {
namespace {

using http::Request;
using outbound::testing::Prometheus;
using outbound::testing::PrometheusApi;
using outbound::testing::Reply;
using std::chrono::seconds;

class PrometheusScrapeTest : public http::ClientTestBase, public ::testing::Test {
 protected:
  PrometheusScrapeTest() { runtime.telemetry.meters = &metrics; }

  MetricStore metrics;
};

TEST_F(PrometheusScrapeTest, PrometheusSeesTheBreakerOpenAndTheOpeningAfterItClosed) {
  std::atomic<bool> healthy{false};
  Serve([&](const outbound::testing::ServerRequest&) {
    return healthy ? Reply::Ok() : Reply::Status(500);
  });
  auto exposer = PrometheusExposer::Start(metrics, "127.0.0.1:0");
  ASSERT_TRUE(exposer) << exposer.error().message();
  Prometheus prometheus((*exposer)->port());
  ASSERT_TRUE(prometheus.started()) << "cannot start /usr/bin/prometheus";
  auto payments = MakeClient();

  PrometheusApi api(prometheus.port());
  ASSERT_TRUE(api.ready());

  // A scrape before the outage: the transitions counter is there, at 0.
  ASSERT_TRUE(api.Eventually(R"(outbound_circuit_transitions_total{state="open"} == 0)"))
      << prometheus.Log();

  for (int i = 0; i < 5; ++i) ASSERT_TRUE(payments->Send(Request::Get("/")));
  ASSERT_EQ(payments->breaker_state(), circuit::State::kOpen);
  nlohmann::json open;
  ASSERT_TRUE(api.Eventually(R"(outbound_circuit_state{state="open"} > 0)", &open))
      << prometheus.Log();
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0]["metric"]["server_address"], "payments");
  EXPECT_EQ(open[0]["metric"]["server_port"], "8443");
  EXPECT_EQ(open[0]["metric"]["job"], "outbound");

  healthy = true;
  clock.Advance(seconds(10));  // OpenFor
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(payments->Send(Request::Get("/")));
  ASSERT_EQ(payments->breaker_state(), circuit::State::kClosed);
  ASSERT_TRUE(api.Eventually(R"(outbound_circuit_state{state="closed"} > 0)"));
  EXPECT_TRUE(api.Query(R"(outbound_circuit_state{state="open"} > 0)").empty());
  // The alert on breakers that opened, however briefly, still fires.
  EXPECT_TRUE(
      api.Eventually(R"(increase(outbound_circuit_transitions_total{state="open"}[5m]) > 0)"));
  EXPECT_FALSE(api.Query(R"(outbound_circuit_calls_total{outcome="failure"} == 5)").empty());
  EXPECT_FALSE(
      api.Query(
             R"(http_client_request_duration_seconds_count{http_response_status_code="500"} == 5)")
          .empty());
  // Prometheus's own strict reader of a page finds nothing wrong in it.
  EXPECT_EQ(outbound::testing::PromtoolProblems((*exposer)->port()), "");
}

}  // namespace
}  // namespace outbound::telemetry
