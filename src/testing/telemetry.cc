// SPDX-License-Identifier: Apache-2.0
#include "outbound/testing/telemetry.h"

#include <algorithm>

namespace outbound::testing {

InMemoryTelemetry::InMemoryTelemetry(Random& random) : tracer_(random, *this) {}

telemetry::Telemetry InMemoryTelemetry::telemetry() {
  return telemetry::Telemetry{.tracer = &tracer_, .meters = &metrics_, .logger = this};
}

void InMemoryTelemetry::OnEnd(telemetry::SpanData&& span) {
  std::lock_guard lock(mu_);
  spans_.push_back(std::move(span));
}

void InMemoryTelemetry::Emit(telemetry::LogRecord&& record) {
  std::lock_guard lock(mu_);
  logs_.push_back(std::move(record));
}

std::vector<telemetry::SpanData> InMemoryTelemetry::Spans() const {
  std::lock_guard lock(mu_);
  return spans_;
}

std::vector<telemetry::SpanData> InMemoryTelemetry::Spans(telemetry::SpanKind kind) const {
  std::lock_guard lock(mu_);
  std::vector<telemetry::SpanData> of_kind;
  std::copy_if(spans_.begin(), spans_.end(), std::back_inserter(of_kind),
               [kind](const telemetry::SpanData& span) { return span.kind == kind; });
  return of_kind;
}

std::vector<telemetry::LogRecord> InMemoryTelemetry::Logs() const {
  std::lock_guard lock(mu_);
  return logs_;
}

std::optional<telemetry::DataPoint> InMemoryTelemetry::Point(
    std::string_view name, std::initializer_list<telemetry::KeyValue> match) const {
  for (const telemetry::MetricData& metric : metrics_.Collect()) {
    if (metric.name != name) continue;
    for (const telemetry::DataPoint& point : metric.points) {
      bool all = std::all_of(match.begin(), match.end(), [&](const telemetry::KeyValue& want) {
        const telemetry::Value* have = telemetry::Find(point.attributes, want.key);
        return have != nullptr && *have == telemetry::Own(want.value);
      });
      if (all) return point;
    }
  }
  return std::nullopt;
}

double InMemoryTelemetry::Value(std::string_view name,
                                std::initializer_list<telemetry::KeyValue> match) const {
  auto point = Point(name, match);
  if (!point) return 0;
  return point->bucket_counts.empty() ? point->value : static_cast<double>(point->count);
}

void InMemoryTelemetry::Clear() {
  std::lock_guard lock(mu_);
  spans_.clear();
  logs_.clear();
}

}  // namespace outbound::testing
