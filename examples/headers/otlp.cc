// SPDX-License-Identifier: Apache-2.0
//
// The usage example of outbound/telemetry/otlp.h, compiled (in the
// library outbound::otlp): the header quotes the region its `// example:`
// line names (scripts/check-doc-examples).
#include "outbound/telemetry/otlp.h"

#include <iostream>

#include "outbound/runtime.h"
#include "outbound/telemetry/metric_store.h"
#include "outbound/telemetry/trace.h"

namespace outbound::examples {
namespace {

int Exit(const Error& error) {
  std::cerr << error.message() << "\n";
  return 78;
}

}  // namespace

int OtlpExample(Runtime& runtime, telemetry::MetricStore& metrics) {
  // [example otlp]
  telemetry::OtlpSettings otlp;
  otlp.endpoint = "http://otel-collector:4318";
  otlp.service_name = "checkout";
  auto exporter = telemetry::OtlpExporter::Create(runtime, otlp);
  if (!exporter) return Exit(exporter.error());  // names every bad field
  telemetry::RecordingTracer tracer(*runtime.random, **exporter);
  runtime.telemetry = {.tracer = &tracer, .meters = &metrics, .logger = exporter->get()};
  // ...
  (*exporter)->ExportMetrics(metrics);  // when you choose, e.g. every 30 s
  // [end otlp]
  return 0;
}

}  // namespace outbound::examples
