// SPDX-License-Identifier: Apache-2.0
//
// docs/telemetry.md's first block, compiled with outbound::prometheus
// (scripts/check-doc-examples).
#include <iostream>

#include "outbound/http/client.h"
#include "outbound/runtime.h"
#include "outbound/telemetry/log.h"
#include "outbound/telemetry/metric_store.h"
#include "outbound/telemetry/prometheus.h"
#include "outbound/telemetry/trace.h"

namespace outbound::docs {

namespace {
// What a program does when it cannot start: says why.
int Exit(const Error& error) {
  std::cerr << error.message() << "\n";
  return 1;
}
}  // namespace

int TelemetryExample(const http::Settings& settings, telemetry::Tracer& my_tracer,
                     telemetry::Logger& my_logger) {
  // [example telemetry]
  outbound::telemetry::MetricStore metrics;  // the library's MeterProvider
  auto exposer = outbound::telemetry::PrometheusExposer::Start(metrics, "0.0.0.0:9464");
  if (!exposer) return Exit(exposer.error());  // cannot listen there

  outbound::Runtime runtime;
  runtime.telemetry.meters = &metrics;    // metrics on
  runtime.telemetry.tracer = &my_tracer;  // spans on (see below)
  runtime.telemetry.logger = &my_logger;  // breaker log records on
  auto payments = outbound::http::Client::Create(runtime, settings);
  // [end telemetry]
  return payments ? 0 : 1;
}

}  // namespace outbound::docs
