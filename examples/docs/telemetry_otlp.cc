// SPDX-License-Identifier: Apache-2.0
//
// docs/telemetry.md's OTLP block, compiled with outbound::otlp
// (scripts/check-doc-examples).
#include <iostream>

#include "outbound/http/client.h"
#include "outbound/runtime.h"
#include "outbound/telemetry/metric_store.h"
#include "outbound/telemetry/otlp.h"
#include "outbound/telemetry/trace.h"

namespace outbound::docs {

namespace {
// What a program does when it cannot start: says why.
int Exit(const Error& error) {
  std::cerr << error.message() << "\n";
  return 1;
}
}  // namespace

int OtlpExample(outbound::Runtime runtime, outbound::telemetry::MetricStore& metrics,
                const http::Settings& settings) {
  // [example otlp]
  outbound::telemetry::OtlpSettings otlp;
  otlp.endpoint = "http://otel-collector:4318";  // https: set otlp.tls (roots, mTLS)
  otlp.service_name = "checkout";                // the resource's service.name
  auto exporter = outbound::telemetry::OtlpExporter::Create(runtime, otlp);
  if (!exporter) return Exit(exporter.error());  // names every bad field

  outbound::telemetry::RecordingTracer tracer(*runtime.random, **exporter);
  runtime.telemetry.tracer = &tracer;
  runtime.telemetry.logger = exporter->get();
  runtime.telemetry.meters = &metrics;
  auto payments = outbound::http::Client::Create(runtime, settings);
  // ... the program's calls through *payments ...
  (*exporter)->ExportMetrics(metrics);  // on demand: e.g. from your own 30 s timer
  // [end otlp]
  return payments ? 0 : 1;
}

}  // namespace outbound::docs
