// SPDX-License-Identifier: Apache-2.0
// What a client reports through the Runtime's telemetry: a CLIENT span per
// attempt with its trace context put on the wire, the HTTP client metrics,
// and the library's own instruments of its breaker, retry loop and budget
// (telemetry::ResilienceInstruments, shared with the gRPC client). Each
// signal costs nothing when its provider is not set. A front end with a
// vocabulary of its own (gRPC's span names, attributes and metrics)
// overrides AttemptStarted and AttemptEnded. Internal.
#ifndef OUTBOUND_SRC_HTTP_CLIENT_TELEMETRY_H_
#define OUTBOUND_SRC_HTTP_CLIENT_TELEMETRY_H_

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "outbound/circuit/breaker.h"
#include "outbound/retry/budget.h"
#include "outbound/retry/retrier.h"
#include "outbound/telemetry/resilience_instruments.h"
#include "outbound/telemetry/telemetry.h"

namespace outbound::http::internal {

class Attempt;
struct AttemptOutcome;
struct Origin;

// The instrumentation scope of everything the HTTP client records.
inline constexpr std::string_view kScope = "outbound.http";

class ClientTelemetry {
 public:
  ClientTelemetry(const telemetry::Telemetry& telemetry, const Origin& origin, Clock& clock);
  virtual ~ClientTelemetry();
  ClientTelemetry(const ClientTelemetry&) = delete;
  ClientTelemetry& operator=(const ClientTelemetry&) = delete;

  // Registers the gauges that read `breaker` and `budget` at collection.
  // Both outlive this object.
  void Observe(circuit::Breaker& breaker, const retry::Budget& budget) {
    resilience_.Observe(breaker, budget, clock_);
  }

  // An attempt begins: its span starts (a child of the caller's context),
  // and the trace context headers it carries are set.
  virtual void AttemptStarted(Attempt& attempt) const;
  // It ended, with `outcome` filled by the layers below: its span ends and
  // its metrics are recorded. `in_queue`: how long it waited for a
  // connection, if it was handed to one (http.client.request.time_in_queue,
  // and the span's attribute of that name).
  virtual void AttemptEnded(Attempt& attempt, const AttemptOutcome& outcome,
                            std::optional<Duration> in_queue) const;

  // The breaker, the retry loop and the budget, as the gRPC client reports
  // them too (outbound/telemetry/resilience_instruments.h).
  const telemetry::ResilienceInstruments& resilience() const { return resilience_; }

  // Emit one debug record per attempt (Settings::request_logging).
  void LogRequests() { log_requests_ = true; }

  // A call's fault scenario was malformed, and ignored.
  void FaultScenarioIgnored() const;

  // Outlier detection ejected `endpoint` ("10.0.0.7:8443") for `out`: one
  // warning record, and a count (outbound.endpoint.ejections).
  void EndpointEjected(std::string_view endpoint, Duration out) const;

  // A layer broke the call path's protocol (a bug in the library): one
  // error record saying `what`, and a count (outbound.internal.misuse).
  void LayerMisused(std::string_view what) const;

 protected:
  // The instruments every front end shares, recorded in `scope`; none of
  // HTTP's own.
  ClientTelemetry(const telemetry::Telemetry& telemetry, const Origin& origin, Clock& clock,
                  std::string_view scope);
  // Starts the attempt's CLIENT span, named `name`, as a child of its
  // caller's span (or in its call's own trace). Needs a tracer.
  telemetry::Span& StartSpan(Attempt& attempt, std::string_view name) const;
  // The trace context headers the attempt carries (`traceparent`,
  // `tracestate`, `baggage`), from `context` and the call's baggage.
  static void SetTraceHeaders(Attempt& attempt, const telemetry::SpanContext& context);

  const telemetry::Telemetry telemetry_;
  Clock& clock_;
  telemetry::MeterProvider* meters_;
  std::string host_;
  std::int64_t port_;
  std::string scheme_;
  std::string_view scope_;  // a literal's
  std::shared_ptr<telemetry::Histogram> duration_;
  std::shared_ptr<telemetry::Histogram> body_size_;
  std::shared_ptr<telemetry::Histogram> time_in_queue_;
  std::shared_ptr<telemetry::Counter> malformed_faults_;
  std::shared_ptr<telemetry::Counter> misuses_;
  std::shared_ptr<telemetry::Counter> ejections_;
  bool log_requests_ = false;

 private:
  // The HTTP instruments' series of one attempt attribute set, bound the
  // first time it is seen: an attempt then records with no lookup. The set
  // is told apart by what varies in it.
  struct AttemptSeries {
    std::string error_type;
    std::string_view method;  // MethodAttribute's, a literal
    int status = 0;
    std::string version;
    std::unique_ptr<telemetry::BoundHistogram> duration;
    std::unique_ptr<telemetry::BoundHistogram> time_in_queue;
    std::unique_ptr<telemetry::BoundHistogram> body_size;
  };
  // Sets bound at most; an attempt with another records unbound.
  static constexpr std::size_t kBoundSets = 32;

  // The set's series, bound now if new and there is room; null if not.
  // `attributes` is the set whose varying parts are the others.
  const AttemptSeries* SeriesFor(std::string_view error_type, std::string_view method, int status,
                                 std::string_view version,
                                 std::span<const telemetry::KeyValue> attributes) const;
  void LogRequest(const Attempt& attempt, const AttemptOutcome& outcome, TimePoint now,
                  std::string_view error_type) const;
  // Published slot by slot, read without a lock (only ever added to, under
  // bind_mu_, until the client goes).
  mutable std::array<std::atomic<const AttemptSeries*>, kBoundSets> bound_{};
  mutable std::atomic<std::size_t> bound_count_{0};
  mutable std::mutex bind_mu_;
  mutable std::vector<std::unique_ptr<AttemptSeries>> bound_owned_;
  telemetry::ResilienceInstruments resilience_;
};

// `url` as a span may show it: values of query parameters that commonly
// carry credentials (signatures, tokens, keys) replaced by "REDACTED".
std::string RedactedUrl(std::string_view url);

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_CLIENT_TELEMETRY_H_
