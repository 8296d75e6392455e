// SPDX-License-Identifier: Apache-2.0
#include "otlp_json.h"

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>

namespace outbound::telemetry::internal {
namespace {

using nlohmann::json;

std::string UnixNanos(std::chrono::system_clock::time_point t) {
  return std::to_string(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

// proto3 JSON writes a double that is not finite as a string.
json Double(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return d;
}

json AnyValue(const Value& value) {
  return std::visit(
      [](const auto& v) -> json {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          return {{"boolValue", v}};
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          return {{"intValue", std::to_string(v)}};
        } else if constexpr (std::is_same_v<T, double>) {
          return {{"doubleValue", Double(v)}};
        } else {
          return {{"stringValue", v}};
        }
      },
      value);
}

json KeyValues(const Attributes& attributes) {
  json out = json::array();
  for (const Attribute& a : attributes) {
    out.push_back({{"key", a.key.text()}, {"value", AnyValue(a.value)}});
  }
  return out;
}

// Sets `key` to `attributes` unless there are none.
void PutAttributes(json& object, const Attributes& attributes) {
  if (!attributes.empty()) object["attributes"] = KeyValues(attributes);
}

json Resource(const OtlpResource& resource) {
  return {{"attributes", KeyValues({{"service.name", resource.service_name},
                                    {"telemetry.sdk.name", std::string("outbound")},
                                    {"telemetry.sdk.language", std::string("cpp")}})}};
}

int SpanKindNumber(SpanKind kind) {
  switch (kind) {
    case SpanKind::kInternal:
      return 1;  // SPAN_KIND_INTERNAL
    case SpanKind::kServer:
      return 2;
    case SpanKind::kClient:
      return 3;
    case SpanKind::kProducer:
      return 4;
    case SpanKind::kConsumer:
      return 5;
  }
  return 0;  // SPAN_KIND_UNSPECIFIED
}

int StatusNumber(StatusCode code) {
  switch (code) {
    case StatusCode::kUnset:
      return 0;  // STATUS_CODE_UNSET
    case StatusCode::kOk:
      return 1;
    case StatusCode::kError:
      return 2;
  }
  return 0;
}

// The W3C trace flags: bit 0 is "sampled".
int TraceFlags(const SpanContext& context) { return context.sampled ? 1 : 0; }

json SpanJson(const SpanData& span, const UnixTime& time) {
  json out = {{"traceId", span.context.trace_id.Hex()}, {"spanId", span.context.span_id.Hex()}};
  if (!span.context.trace_state.empty()) out["traceState"] = span.context.trace_state;
  if (span.parent_span_id.valid()) out["parentSpanId"] = span.parent_span_id.Hex();
  out["flags"] = TraceFlags(span.context);
  out["name"] = span.name;
  out["kind"] = SpanKindNumber(span.kind);
  out["startTimeUnixNano"] = time.Nanos(span.start);
  out["endTimeUnixNano"] = time.Nanos(span.end);
  PutAttributes(out, span.attributes);
  if (!span.events.empty()) {
    json events = json::array();
    for (const SpanEvent& event : span.events) {
      json e = {{"timeUnixNano", time.Nanos(event.at)}, {"name", event.name}};
      PutAttributes(e, event.attributes);
      events.push_back(std::move(e));
    }
    out["events"] = std::move(events);
  }
  if (span.status != StatusCode::kUnset) {
    json status = {{"code", StatusNumber(span.status)}};
    if (!span.status_description.empty()) status["message"] = span.status_description;
    out["status"] = std::move(status);
  }
  return out;
}

json LogJson(const LogRecord& record, const UnixTime& time) {
  std::string at = time.Nanos(record.at);
  json out = {{"timeUnixNano", at},
              {"observedTimeUnixNano", at},
              {"severityNumber", static_cast<int>(record.severity)},
              {"severityText", std::string(ToString(record.severity))},
              {"body", {{"stringValue", record.body}}}};
  PutAttributes(out, record.attributes);
  if (record.trace.valid()) {
    out["traceId"] = record.trace.trace_id.Hex();
    out["spanId"] = record.trace.span_id.Hex();
    out["flags"] = TraceFlags(record.trace);
  }
  return out;
}

// Items grouped by their scope, in the order each scope first appears:
// [{"scope": {"name": ...}, <items_key>: [...]}, ...].
template <typename Item, typename ToJson>
json ByScope(std::span<const Item> items, std::string_view items_key, ToJson to_json) {
  json scopes = json::array();
  std::vector<std::string_view> names;
  for (const Item& item : items) {
    std::size_t i = 0;
    while (i < names.size() && names[i] != item.scope) ++i;
    if (i == names.size()) {
      names.push_back(item.scope);
      scopes.push_back({{"scope", {{"name", item.scope}}}, {items_key, json::array()}});
    }
    scopes[i][items_key].push_back(to_json(item));
  }
  return scopes;
}

std::string Dump(const json& body) {
  // An attribute may hold bytes that are not UTF-8; JSON cannot carry
  // them, so they become U+FFFD rather than failing the whole batch.
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

json MetricJson(const MetricData& metric, const std::string& start, const std::string& at) {
  json points = json::array();
  for (const DataPoint& point : metric.points) {
    json p = json::object();
    PutAttributes(p, point.attributes);
    p["startTimeUnixNano"] = start;
    p["timeUnixNano"] = at;
    if (metric.kind == InstrumentKind::kHistogram) {
      p["count"] = std::to_string(point.count);
      p["sum"] = Double(point.sum);
      json buckets = json::array();
      for (std::uint64_t c : point.bucket_counts) buckets.push_back(std::to_string(c));
      p["bucketCounts"] = std::move(buckets);
      json bounds = json::array();
      for (double b : metric.boundaries) bounds.push_back(Double(b));
      if (!bounds.empty()) p["explicitBounds"] = std::move(bounds);
    } else {
      p["asDouble"] = Double(point.value);
    }
    points.push_back(std::move(p));
  }
  json out = {{"name", metric.name}};
  if (!metric.description.empty()) out["description"] = metric.description;
  if (!metric.unit.empty()) out["unit"] = metric.unit;
  constexpr int kCumulative = 2;  // AGGREGATION_TEMPORALITY_CUMULATIVE
  switch (metric.kind) {
    case InstrumentKind::kCounter:
      out["sum"] = {{"dataPoints", std::move(points)},
                    {"aggregationTemporality", kCumulative},
                    {"isMonotonic", true}};
      break;
    case InstrumentKind::kHistogram:
      out["histogram"] = {{"dataPoints", std::move(points)},
                          {"aggregationTemporality", kCumulative}};
      break;
    case InstrumentKind::kGauge:
      out["gauge"] = {{"dataPoints", std::move(points)}};
      break;
  }
  return out;
}

}  // namespace

std::string UnixTime::Nanos(TimePoint t) const {
  return UnixNanos(wall_now_ -
                   std::chrono::duration_cast<std::chrono::system_clock::duration>(now_ - t));
}

std::string UnixTime::Nanos(std::chrono::system_clock::time_point t) const { return UnixNanos(t); }

std::string EncodeSpans(const OtlpResource& resource, std::span<const SpanData> spans,
                        const UnixTime& time) {
  json scopes = ByScope(spans, "spans", [&](const SpanData& s) { return SpanJson(s, time); });
  json body = {{"resourceSpans", json::array({{{"resource", Resource(resource)},
                                               {"scopeSpans", std::move(scopes)}}})}};
  return Dump(body);
}

std::string EncodeLogs(const OtlpResource& resource, std::span<const LogRecord> records,
                       const UnixTime& time) {
  json scopes =
      ByScope(records, "logRecords", [&](const LogRecord& r) { return LogJson(r, time); });
  json body = {{"resourceLogs", json::array({{{"resource", Resource(resource)},
                                              {"scopeLogs", std::move(scopes)}}})}};
  return Dump(body);
}

std::string EncodeMetrics(const OtlpResource& resource, std::span<const MetricData> metrics,
                          std::chrono::system_clock::time_point start,
                          std::chrono::system_clock::time_point at) {
  std::string start_text = UnixNanos(start);
  std::string at_text = UnixNanos(at);
  json scopes = json::array();
  std::vector<std::string_view> names;
  for (const MetricData& metric : metrics) {
    if (metric.points.empty()) continue;
    std::size_t i = 0;
    while (i < names.size() && names[i] != metric.scope) ++i;
    if (i == names.size()) {
      names.push_back(metric.scope);
      scopes.push_back({{"scope", {{"name", metric.scope}}}, {"metrics", json::array()}});
    }
    scopes[i]["metrics"].push_back(MetricJson(metric, start_text, at_text));
  }
  json body = {{"resourceMetrics", json::array({{{"resource", Resource(resource)},
                                                 {"scopeMetrics", std::move(scopes)}}})}};
  return Dump(body);
}

std::uint64_t RejectedItems(std::string_view body, std::string_view field) {
  json answer = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!answer.is_object()) return 0;
  auto partial = answer.find("partialSuccess");
  if (partial == answer.end() || !partial->is_object()) return 0;
  auto count = partial->find(std::string(field));
  if (count == partial->end()) return 0;
  if (count->is_number_unsigned()) return count->get<std::uint64_t>();
  if (!count->is_string()) return 0;
  const std::string& text = count->get_ref<const std::string&>();
  std::uint64_t rejected = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), rejected);
  return error == std::errc() && end == text.data() + text.size() ? rejected : 0;
}

}  // namespace outbound::telemetry::internal
