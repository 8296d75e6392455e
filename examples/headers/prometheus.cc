// SPDX-License-Identifier: Apache-2.0
//
// The usage example of outbound/telemetry/prometheus.h, compiled (in the
// library outbound::prometheus): the header quotes the region its `// example:`
// line names (scripts/check-doc-examples).
#include "outbound/telemetry/prometheus.h"

#include <iostream>

#include "outbound/runtime.h"
#include "outbound/telemetry/metric_store.h"

namespace outbound::examples {
namespace {

int Exit(const Error& error) {
  std::cerr << error.message() << "\n";
  return 78;
}

}  // namespace

int PrometheusExample(Runtime& runtime) {
  // [example prometheus]
  telemetry::MetricStore metrics;
  runtime.telemetry.meters = &metrics;
  auto exposer = telemetry::PrometheusExposer::Start(metrics, "127.0.0.1:9464");
  if (!exposer) return Exit(exposer.error());  // cannot listen there
  // [end prometheus]
  return (*exposer)->port();
}

}  // namespace outbound::examples
