// SPDX-License-Identifier: Apache-2.0
// outbound/telemetry/prometheus.h — in the library `outbound::prometheus`.
//
// A MetricStore's metrics in Prometheus's exposition, through prometheus-cpp:
// register the collectable with your own Exposer or Registry, or let
// `PrometheusExposer` serve /metrics on an address of its own.
//
// example: examples/headers/prometheus.cc#prometheus
//   telemetry::MetricStore metrics;
//   runtime.telemetry.meters = &metrics;
//   auto exposer = telemetry::PrometheusExposer::Start(metrics, "127.0.0.1:9464");
//   if (!exposer) return Exit(exposer.error());  // cannot listen there
//
// Names follow OpenTelemetry's Prometheus mapping: dots become underscores,
// a unit in seconds or bytes is a suffix (`_seconds`, `_bytes`), a counter
// ends in `_total`; each attribute is a label of its key with dots made
// underscores. So `outbound.circuit.transitions{state}` is scraped as
// `outbound_circuit_transitions_total{state="open",server_address=...}` and
// `http.client.request.duration` as `http_client_request_duration_seconds`.
#ifndef OUTBOUND_TELEMETRY_PROMETHEUS_H_
#define OUTBOUND_TELEMETRY_PROMETHEUS_H_

#include <memory>
#include <string>

#include "outbound/error.h"
#include "outbound/telemetry/metric_store.h"

namespace prometheus {
class Collectable;
class Exposer;
}  // namespace prometheus

namespace outbound::telemetry {

// A prometheus-cpp Collectable reading `store` at each scrape. `store` must
// outlive it.
std::shared_ptr<prometheus::Collectable> MakePrometheusCollectable(const MetricStore& store);

// The metric name Prometheus sees for an instrument.
std::string PrometheusName(const MetricData& metric);

// Serves `store` at http://<address>/metrics while it lives.
class PrometheusExposer {
 public:
  // `address` is "host:port"; port 0 picks a free one (see port()).
  // kInvalidSettings if it cannot listen there.
  static Result<std::unique_ptr<PrometheusExposer>> Start(const MetricStore& store,
                                                          const std::string& address);
  ~PrometheusExposer();
  int port() const;

 private:
  PrometheusExposer() = default;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::shared_ptr<prometheus::Collectable> collectable_;
};

}  // namespace outbound::telemetry

#endif  // OUTBOUND_TELEMETRY_PROMETHEUS_H_
