// SPDX-License-Identifier: Apache-2.0
// The Prometheus exposition of a MetricStore, read as Prometheus's text
// format. A real Prometheus scraping a client is in prometheus_scrape_test.cc.
#include "outbound/telemetry/prometheus.h"

#include <gtest/gtest.h>
#include <prometheus/collectable.h>
#include <prometheus/text_serializer.h>

namespace outbound::telemetry {
namespace {

std::string Exposition(const MetricStore& store) {
  auto collectable = MakePrometheusCollectable(store);
  return prometheus::TextSerializer().Serialize(collectable->Collect());
}

TEST(PrometheusTest, NamesFollowOpenTelemetrysMapping) {
  MetricStore store;
  const KeyValue open[] = {
      {"server.address", "payments"}, {"server.port", std::int64_t{8443}}, {"state", "open"}};
  store.CreateCounter({"outbound.http", "outbound.circuit.transitions", "{transition}", "T."})
      ->Add(2, open);
  const double bounds[] = {0.1, 1};
  store.CreateHistogram({"outbound.http", "http.client.request.duration", "s", "D."}, bounds)
      ->Record(0.5, open);
  auto gauge =
      store.AddObservableGauge({"outbound.http", "outbound.circuit.state", "{breaker}", "S."},
                               [&](Observations& out) { out.Observe(1, open); });

  std::string text = Exposition(store);
  EXPECT_NE(text.find("# TYPE outbound_circuit_transitions_total counter"), std::string::npos)
      << text;
  EXPECT_NE(text.find("outbound_circuit_transitions_total{server_address=\"payments\","
                      "server_port=\"8443\",state=\"open\"} 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE outbound_circuit_state gauge"), std::string::npos) << text;
  EXPECT_NE(text.find("outbound_circuit_state{server_address=\"payments\",server_port=\"8443\","
                      "state=\"open\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE http_client_request_duration_seconds histogram"), std::string::npos)
      << text;
  EXPECT_NE(text.find("http_client_request_duration_seconds_bucket{server_address=\"payments\","
                      "server_port=\"8443\",state=\"open\",le=\"0.1\"} 0"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("le=\"1\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("le=\"+Inf\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("http_client_request_duration_seconds_count{server_address=\"payments\","
                      "server_port=\"8443\",state=\"open\"} 1"),
            std::string::npos)
      << text;
}

TEST(PrometheusTest, AnAddressItCannotListenOnIsAnError) {
  MetricStore store;
  auto exposer = PrometheusExposer::Start(store, "256.0.0.1:1");
  ASSERT_FALSE(exposer);
  EXPECT_EQ(exposer.error().kind(), ErrorKind::kInvalidSettings);
  EXPECT_NE(exposer.error().message().find("256.0.0.1:1"), std::string::npos);
}

}  // namespace
}  // namespace outbound::telemetry
