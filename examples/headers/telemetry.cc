// SPDX-License-Identifier: Apache-2.0
//
// The usage examples of outbound::telemetry's headers, compiled: each
// header quotes the region its `// example:` line names
// (scripts/check-doc-examples).
#include "outbound/telemetry/telemetry.h"

#include <iostream>

#include "outbound/runtime.h"
#include "outbound/telemetry/attributes.h"
#include "outbound/telemetry/metric_store.h"
#include "outbound/telemetry/metrics.h"
#include "outbound/telemetry/propagation.h"
#include "outbound/telemetry/trace.h"
#include "outbound/testing/fake_server.h"

namespace outbound::examples {

void AttributesExample(telemetry::Counter& counter) {
  // [example attributes]
  const telemetry::KeyValue attributes[] = {{"server.address", "payments"},
                                            {"server.port", std::int64_t{8443}}};
  counter.Add(1, attributes);
  // [end attributes]
}

void MetricStoreExample(Runtime& runtime) {
  // [example metric-store]
  telemetry::MetricStore metrics;
  runtime.telemetry.meters = &metrics;
  // ...
  for (const telemetry::MetricData& metric : metrics.Collect()) std::cout << metric.name << "\n";
  // [end metric-store]
}

void PropagationExample(const testing::ServerRequest& request) {
  // [example propagation]
  auto parent = telemetry::ParseTraceparent(request.header("traceparent"));
  // [end propagation]
  std::cout << parent.has_value();
}

void TelemetryExample() {
  // [example telemetry]
  telemetry::MetricStore metrics;
  Runtime runtime;
  runtime.telemetry.meters = &metrics;
  // [end telemetry]
}

void TraceExample(telemetry::SpanProcessor& processor) {
  Runtime runtime;
  // [example trace]
  telemetry::RecordingTracer tracer(*runtime.random, processor);
  runtime.telemetry.tracer = &tracer;
  // [end trace]
}

}  // namespace outbound::examples
