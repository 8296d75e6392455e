// SPDX-License-Identifier: Apache-2.0
// outbound/testing/telemetry.h
//
// Telemetry that keeps everything in memory, so a test asserts the spans,
// data points and log records a call produced.
//
// example: examples/headers/testing.cc#in-memory-telemetry
//   testing::InMemoryTelemetry telemetry(random);
//   Runtime runtime{.clock = &clock, .network = &network};
//   runtime.telemetry = telemetry.telemetry();
//   // ... calls ...
//   auto spans = telemetry.Spans(telemetry::SpanKind::kClient);
//   auto open = telemetry.Point("outbound.circuit.state", {{"state", "open"}});
#ifndef OUTBOUND_TESTING_TELEMETRY_H_
#define OUTBOUND_TESTING_TELEMETRY_H_

#include <initializer_list>
#include <mutex>
#include <optional>
#include <vector>

#include "outbound/random.h"
#include "outbound/telemetry/metric_store.h"
#include "outbound/telemetry/telemetry.h"

namespace outbound::testing {

class InMemoryTelemetry final : private telemetry::SpanProcessor, private telemetry::Logger {
 public:
  // Span ids come from `random`, which must outlive this.
  explicit InMemoryTelemetry(Random& random = DefaultRandom());

  // The tracer, meters and logger to put in a Runtime.
  telemetry::Telemetry telemetry();

  // Ended spans, in the order they ended; or only those of `kind`.
  std::vector<telemetry::SpanData> Spans() const;
  std::vector<telemetry::SpanData> Spans(telemetry::SpanKind kind) const;
  // Log records, in the order they were emitted.
  std::vector<telemetry::LogRecord> Logs() const;
  // Every metric now (gauges read now).
  std::vector<telemetry::MetricData> Metrics() const { return metrics_.Collect(); }
  // The point of metric `name` whose attributes include each of `match`.
  std::optional<telemetry::DataPoint> Point(
      std::string_view name, std::initializer_list<telemetry::KeyValue> match = {}) const;
  // The value of that point, 0 when there is none.
  double Value(std::string_view name, std::initializer_list<telemetry::KeyValue> match = {}) const;

  telemetry::MetricStore& metrics() { return metrics_; }
  // Forgets the spans and records (not the metrics).
  void Clear();

 private:
  void OnEnd(telemetry::SpanData&& span) override;
  void Emit(telemetry::LogRecord&& record) override;

  telemetry::RecordingTracer tracer_;
  telemetry::MetricStore metrics_;
  mutable std::mutex mu_;
  std::vector<telemetry::SpanData> spans_;
  std::vector<telemetry::LogRecord> logs_;
};

}  // namespace outbound::testing

#endif  // OUTBOUND_TESTING_TELEMETRY_H_
