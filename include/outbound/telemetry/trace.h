// SPDX-License-Identifier: Apache-2.0
// outbound/telemetry/trace.h
//
// Tracing, shaped like OpenTelemetry's API so an adapter to
// opentelemetry-cpp is one small file: a `Tracer` starts `Span`s, each a
// child of a `SpanContext`, with attributes, events and a status, ended at a
// time on the Runtime's clock.
//
// The library's own implementation is `RecordingTracer`: ids drawn from the
// Runtime's `Random`, each ended span handed as `SpanData` to a
// `SpanProcessor` (testing::InMemoryTelemetry keeps them; an OTLP exporter
// batches them). No tracer is the default, and then nothing is recorded:
// the caller's trace context is still passed on to the dependency.
//
// example: examples/headers/telemetry.cc#trace
//   telemetry::RecordingTracer tracer(*runtime.random, processor);
//   runtime.telemetry.tracer = &tracer;
#ifndef OUTBOUND_TELEMETRY_TRACE_H_
#define OUTBOUND_TELEMETRY_TRACE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "outbound/clock.h"
#include "outbound/random.h"
#include "outbound/telemetry/attributes.h"

namespace outbound::telemetry {

// A W3C trace id: 16 bytes, not all zero when valid.
struct TraceId {
  std::array<std::uint8_t, 16> bytes{};
  bool valid() const;
  std::string Hex() const;  // 32 lower-case hex digits
  friend bool operator==(const TraceId&, const TraceId&) = default;
};

// A W3C span (parent) id: 8 bytes, not all zero when valid.
struct SpanId {
  std::array<std::uint8_t, 8> bytes{};
  bool valid() const;
  std::string Hex() const;  // 16 lower-case hex digits
  friend bool operator==(const SpanId&, const SpanId&) = default;
};

// What identifies a span across processes: what `traceparent` and
// `tracestate` carry.
struct SpanContext {
  TraceId trace_id;
  SpanId span_id;
  bool sampled = true;
  std::string trace_state;  // the `tracestate` header's value, passed on as is
  bool valid() const { return trace_id.valid() && span_id.valid(); }
  friend bool operator==(const SpanContext&, const SpanContext&) = default;
};

enum class SpanKind { kInternal, kServer, kClient, kProducer, kConsumer };
enum class StatusCode { kUnset, kOk, kError };

std::string_view ToString(SpanKind kind);
std::string_view ToString(StatusCode code);

// A span being recorded. Not thread-safe: one owner at a time. A span that
// is destroyed without End is ended at its start time.
class Span {
 public:
  virtual ~Span() = default;
  virtual const SpanContext& context() const = 0;
  virtual void SetAttribute(const KeyValue& attribute) = 0;
  virtual void AddEvent(std::string_view name, TimePoint at,
                        std::span<const KeyValue> attributes) = 0;
  virtual void SetStatus(StatusCode code, std::string_view description = {}) = 0;
  // Ends the span; later calls do nothing.
  virtual void End(TimePoint at) = 0;
};

struct SpanStart {
  std::string_view scope;  // the instrumentation scope, e.g. "outbound.http"
  std::string_view name;
  SpanKind kind = SpanKind::kInternal;
  // The parent; an invalid context starts a new trace. A context with a
  // trace id and no span id puts the span in that trace without a parent.
  const SpanContext* parent = nullptr;
  TimePoint start;
};

// Starts spans. Implementations are thread-safe.
class Tracer {
 public:
  virtual ~Tracer() = default;
  virtual std::unique_ptr<Span> StartSpan(const SpanStart& start) = 0;
};

// A span as it ended.
struct SpanEvent {
  std::string name;
  TimePoint at;
  Attributes attributes;
};

struct SpanData {
  std::string scope;
  std::string name;
  SpanKind kind = SpanKind::kInternal;
  SpanContext context;
  SpanId parent_span_id;  // invalid for a root span
  TimePoint start;
  TimePoint end;
  Attributes attributes;
  std::vector<SpanEvent> events;
  StatusCode status = StatusCode::kUnset;
  std::string status_description;
};

// Receives each span a RecordingTracer ends, on the thread that ended it.
// Implementations are thread-safe, fast, and do not throw.
class SpanProcessor {
 public:
  virtual ~SpanProcessor() = default;
  virtual void OnEnd(SpanData&& span) = 0;
};

// The library's tracer: every span is recorded and handed to `processor`
// when it ends. A span is sampled unless its parent is not: then neither
// it (context().sampled) nor the traceparent it sends on is, and the
// processor may drop it. Both references must outlive the tracer.
class RecordingTracer final : public Tracer {
 public:
  RecordingTracer(Random& random, SpanProcessor& processor)
      : random_(random), processor_(processor) {}
  std::unique_ptr<Span> StartSpan(const SpanStart& start) override;

 private:
  Random& random_;
  SpanProcessor& processor_;
};

// New random ids, never all zero: an id drawn as zeroes (from a fixed
// source that gives 0, say) ends in 1, so such a source gives the same
// valid id every time.
TraceId NewTraceId(Random& random);
SpanId NewSpanId(Random& random);

}  // namespace outbound::telemetry

#endif  // OUTBOUND_TELEMETRY_TRACE_H_
