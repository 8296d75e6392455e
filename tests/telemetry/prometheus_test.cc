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
                      "server_port=\"8443\",state=\"open\",otel_scope_name=\"outbound.http\"} 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE outbound_circuit_state gauge"), std::string::npos) << text;
  EXPECT_NE(text.find("outbound_circuit_state{server_address=\"payments\",server_port=\"8443\","
                      "state=\"open\",otel_scope_name=\"outbound.http\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE http_client_request_duration_seconds histogram"), std::string::npos)
      << text;
  EXPECT_NE(text.find("http_client_request_duration_seconds_bucket{server_address=\"payments\","
                      "server_port=\"8443\",state=\"open\",otel_scope_name=\"outbound.http\","
                      "le=\"0.1\"} 0"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("le=\"1\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("le=\"+Inf\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("http_client_request_duration_seconds_count{server_address=\"payments\","
                      "server_port=\"8443\",state=\"open\",otel_scope_name=\"outbound.http\"} 1"),
            std::string::npos)
      << text;
}

// One name, one family: the same instrument of an HTTP and a gRPC client
// is one HELP, one TYPE and a series per scope, as the format requires.
TEST(PrometheusTest, OneInstrumentOfTwoScopesIsOneFamily) {
  MetricStore store;
  const KeyValue open[] = {{"state", "open"}};
  for (const char* scope : {"outbound.http", "outbound.rpc"}) {
    store.CreateCounter({scope, "outbound.circuit.transitions", "{transition}", "T."})
        ->Add(1, open);
  }
  std::string text = Exposition(store);
  auto count = [&](std::string_view what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("# TYPE outbound_circuit_transitions_total"), 1u) << text;
  EXPECT_EQ(count("# HELP outbound_circuit_transitions_total"), 1u) << text;
  EXPECT_EQ(count("outbound_circuit_transitions_total{state=\"open\",otel_scope_name=\"outbound."),
            2u)
      << text;
}

// A description with a backslash and a line break stays one HELP line.
TEST(PrometheusTest, HelpTextIsEscaped) {
  MetricStore store;
  store.CreateCounter({"outbound.http", "x", "", "a\\b\nc"})->Add(1, {});
  std::string text = Exposition(store);
  EXPECT_NE(text.find("# HELP x_total a\\\\b\\nc\n"), std::string::npos) << text;
}

// A double attribute is a label as the shortest text that reads back as
// it, with a point: "0.1", never "0.10000000000000001" (nor "0,1" under a
// program's comma locale).
TEST(PrometheusTest, ADoubleLabelIsItsShortestText) {
  MetricStore store;
  const KeyValue ratio[] = {{"ratio", 0.1}};
  store.CreateCounter({"outbound.http", "x", "", "X."})->Add(1, ratio);
  std::string text = Exposition(store);
  EXPECT_NE(text.find("x_total{ratio=\"0.1\","), std::string::npos) << text;
}

// Keys that sanitise alike are one label, their values joined in the keys'
// order: a label name twice would break the page.
TEST(PrometheusTest, KeysThatSanitiseAlikeAreOneLabel) {
  MetricStore store;
  const KeyValue both[] = {{"a.b", "1"}, {"a_b", "2"}};
  store.CreateCounter({"outbound.http", "x", "", "X."})->Add(1, both);
  std::string text = Exposition(store);
  EXPECT_NE(text.find("x_total{a_b=\"1;2\",otel_scope_name=\"outbound.http\"} 1"),
            std::string::npos)
      << text;
}

// How often `what` is in `text`.
std::size_t Count(const std::string& text, std::string_view what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Points whose keys sanitise alike come out as one series, and the format
// allows a series once: counters add up, histograms of the same buckets
// too, and of two gauges the first is kept.
TEST(PrometheusTest, SeriesThatComeOutAlikeAreOne) {
  MetricStore store;
  const KeyValue dotted[] = {{"a.b", "1"}};
  const KeyValue underscored[] = {{"a_b", "1"}};
  auto counter = store.CreateCounter({"outbound.http", "c", "", "C."});
  counter->Add(2, dotted);
  counter->Add(3, underscored);
  const double bounds[] = {1};
  auto histogram = store.CreateHistogram({"outbound.http", "h", "s", "H."}, bounds);
  histogram->Record(0.5, dotted);
  histogram->Record(2, underscored);
  std::string text = Exposition(store);
  EXPECT_EQ(Count(text, "c_total{a_b=\"1\",otel_scope_name=\"outbound.http\"} 5\n"), 1u) << text;
  EXPECT_EQ(Count(text, "c_total{"), 1u) << text;
  EXPECT_EQ(
      Count(text, "h_seconds_bucket{a_b=\"1\",otel_scope_name=\"outbound.http\",le=\"1\"} 1\n"), 1u)
      << text;
  EXPECT_EQ(Count(text, "le=\"+Inf\"} 2\n"), 1u) << text;
  EXPECT_EQ(Count(text, "h_seconds_count{a_b=\"1\",otel_scope_name=\"outbound.http\"} 2\n"), 1u)
      << text;
  EXPECT_EQ(Count(text, "h_seconds_sum{a_b=\"1\",otel_scope_name=\"outbound.http\"} 2.5\n"), 1u)
      << text;
}

// Labels that come out alike in another order ("a.z" sorts before "a_b",
// "a_z" after it) are the same series too.
TEST(PrometheusTest, SeriesAlikeButForTheirLabelsOrderAreOne) {
  MetricStore store;
  const KeyValue dotted[] = {{"a.z", "1"}, {"a_b", "2"}};
  const KeyValue underscored[] = {{"a_z", "1"}, {"a_b", "2"}};
  auto counter = store.CreateCounter({"outbound.http", "c", "", "C."});
  counter->Add(2, dotted);
  counter->Add(3, underscored);
  std::string text = Exposition(store);
  EXPECT_EQ(Count(text, "c_total{"), 1u) << text;
  EXPECT_EQ(Count(text, "} 5\n"), 1u) << text;
}

// Two instruments whose names sanitise alike are one family, and their
// series with the same labels one series.
TEST(PrometheusTest, InstrumentsWhoseNamesComeOutAlikeShareTheirSeries) {
  MetricStore store;
  store.CreateCounter({"outbound.http", "app.calls", "", "A."})->Add(1, {});
  store.CreateCounter({"outbound.http", "app_calls", "", "B."})->Add(4, {});
  auto gauge_one = store.AddObservableGauge({"outbound.http", "g.x", "", "G."},
                                            [](Observations& out) { out.Observe(7, {}); });
  auto gauge_two = store.AddObservableGauge({"outbound.http", "g_x", "", "G."},
                                            [](Observations& out) { out.Observe(9, {}); });
  std::string text = Exposition(store);
  EXPECT_EQ(Count(text, "app_calls_total{otel_scope_name=\"outbound.http\"} 5\n"), 1u) << text;
  EXPECT_EQ(Count(text, "app_calls_total{"), 1u) << text;
  EXPECT_EQ(Count(text, "g_x{otel_scope_name=\"outbound.http\"} 7\n"), 1u) << text;
  EXPECT_EQ(Count(text, "g_x{"), 1u) << text;
}

// An attribute with an empty key is no label: the page stays readable.
TEST(PrometheusTest, AnEmptyKeyIsNoLabel) {
  MetricStore store;
  const KeyValue odd[] = {{"", "v"}, {"k", "w"}};
  store.CreateCounter({"outbound.http", "x", "", "X."})->Add(1, odd);
  std::string text = Exposition(store);
  EXPECT_EQ(text.find("{="), std::string::npos) << text;
  EXPECT_NE(text.find("x_total{k=\"w\",otel_scope_name=\"outbound.http\"} 1"), std::string::npos)
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
