// SPDX-License-Identifier: Apache-2.0
// outbound/telemetry/otlp.h — in the library `outbound::otlp`.
//
// Spans, log records and a MetricStore's metrics sent to an OpenTelemetry
// collector (or any OTLP/HTTP receiver) as OTLP/HTTP JSON: POSTs to
// `<endpoint>/v1/traces`, `/v1/logs` and `/v1/metrics`, with the library's
// own http::Client.
//
// example: examples/headers/otlp.cc#otlp
//   telemetry::OtlpSettings otlp;
//   otlp.endpoint = "http://otel-collector:4318";
//   otlp.service_name = "checkout";
//   auto exporter = telemetry::OtlpExporter::Create(runtime, otlp);
//   if (!exporter) return Exit(exporter.error());  // names every bad field
//   telemetry::RecordingTracer tracer(*runtime.random, **exporter);
//   runtime.telemetry = {.tracer = &tracer, .meters = &metrics, .logger = exporter->get()};
//   // ...
//   (*exporter)->ExportMetrics(metrics);  // when you choose, e.g. every 30 s
//
// Spans and log records are batched: each waits in a bounded queue (one per
// signal) until a batch is full or the flush interval, a timer on the
// Runtime's clock, comes round. OnEnd and Emit never block and never send:
// they add to the queue under a lock, or, when the queue is full, drop the
// item and count it (`dropped()`). Sending happens on the clock's timer
// thread, on the exporter's client's thread, or in ForceFlush, with at most
// one request in flight per signal.
//
// A batch the receiver answers 429, 502, 503 or 504, or whose connection
// fails, is sent again, as OTLP/HTTP asks: up to five attempts within
// export_timeout, after a full-jitter backoff (a ceiling of one second,
// doubling) or the Retry-After the receiver names if longer, each attempt
// with the batch's own `Idempotency-Key` (so a receiver can tell a batch
// sent again from a new one). A 429 or 503 is not a failure to the breaker
// of the exporter's client: the receiver is up. A batch that is not
// accepted in the end (another status, its attempts or export_timeout used
// up, a Retry-After past it, the breaker open) is counted in `failed()` and
// let go, and so are the items a 2xx answer's partial success says it
// rejected. Meanwhile the batches behind it on the same signal wait.
//
// The exporter's client is built on the Runtime given to Create with its
// telemetry off, so exporting never records spans, metrics or logs of its
// own (which would feed themselves back into the queue).
//
// Times: spans and records carry times on the Runtime's steady clock; each
// is sent as Unix time, `clock.WallNow() - (clock.Now() - t)`, computed when
// its batch is encoded.
//
// Thread-safe. The exporter must outlive the tracers and Runtimes that use it.
#ifndef OUTBOUND_TELEMETRY_OTLP_H_
#define OUTBOUND_TELEMETRY_OTLP_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "outbound/error.h"
#include "outbound/http/settings.h"
#include "outbound/runtime.h"
#include "outbound/telemetry/log.h"
#include "outbound/telemetry/metric_store.h"
#include "outbound/telemetry/trace.h"

namespace outbound::telemetry {

// Plain values; the defaults are OpenTelemetry's batch processor's.
struct OtlpSettings {
  // Where the receiver listens: an http or https URL with no user info,
  // query or fragment, e.g. "http://otel-collector:4318". A path is a
  // prefix: "https://gw/otlp" sends traces to "https://gw/otlp/v1/traces".
  // No default. Check: CheckOtlpEndpoint.
  std::string endpoint;

  // Set for an https endpoint (the roots trusted, and a client certificate
  // for mTLS), empty for http. Check: http::CheckTls.
  std::optional<http::TlsSettings> tls;

  // The resource's `service.name`. Valid: not empty.
  std::string service_name = "unknown_service";

  // Spans (or log records) per request. Valid: 1 to max_queue_size.
  int max_batch_size = 512;

  // Spans (and, apart, log records) waiting to be sent; one more is
  // dropped and counted. Valid: 1 to 1000000.
  int max_queue_size = 2048;

  // How long an item waits at most before its batch is sent, however
  // small. Valid: positive.
  Duration flush_interval = std::chrono::seconds(5);

  // Bounds each batch, all its attempts together; also how long the
  // destructor waits for what is still queued. Valid: positive.
  Duration export_timeout = std::chrono::seconds(10);
};

// One check per field. Each says what is wrong without naming the field.
[[nodiscard]] Result<void> CheckOtlpEndpoint(const std::string& endpoint);
[[nodiscard]] Result<void> CheckServiceName(const std::string& service_name);
[[nodiscard]] Result<void> CheckMaxBatchSize(int max_batch_size);
[[nodiscard]] Result<void> CheckMaxQueueSize(int max_queue_size);
[[nodiscard]] Result<void> CheckFlushInterval(Duration flush_interval);
[[nodiscard]] Result<void> CheckExportTimeout(Duration export_timeout);

// Every check, and the rules on two fields (max_batch_size <= max_queue_size;
// tls set exactly for an https endpoint). One kInvalidSettings error naming
// every bad field, e.g. "OtlpSettings.endpoint: must be an http or https URL".
[[nodiscard]] Result<void> Validate(const OtlpSettings& settings);

class OtlpExporter final : public SpanProcessor, public Logger {
 public:
  // Checks `settings` and builds the exporter and its client on `runtime`'s
  // clock, network and randomness (its telemetry is not used). Dials
  // nothing; the flush timer starts now. Everything `runtime` points to must
  // outlive the exporter.
  [[nodiscard]] static Result<std::unique_ptr<OtlpExporter>> Create(const Runtime& runtime,
                                                                    OtlpSettings settings);

  // Sends what is still queued, waiting at most export_timeout on the
  // Runtime's clock, then cancels whatever is still in flight.
  ~OtlpExporter() override;
  OtlpExporter(const OtlpExporter&) = delete;
  OtlpExporter& operator=(const OtlpExporter&) = delete;

  // Queue one span or log record; never blocks.
  void OnEnd(SpanData&& span) override;
  void Emit(LogRecord&& record) override;

  // Collects `store` now (running its gauges' callbacks on this thread) and
  // sends the snapshot: counters as monotonic cumulative sums, histograms
  // with their bucket counts (cumulative), gauges as gauges. A snapshot not
  // yet sent when the next comes is replaced by it (both are cumulative).
  void ExportMetrics(const MetricStore& store);

  // Sends everything queued now, whatever the batch size, and blocks until
  // each of its batches has been accepted or has failed (each is bounded by
  // export_timeout on the Runtime's clock, which must move for a batch to
  // be sent again: a test on a ManualClock advances it meanwhile). True when
  // the receiver accepted every one. Must not run on a callback of the
  // Runtime's clock.
  bool ForceFlush();

  // Spans and log records dropped because their queue was full.
  std::uint64_t dropped() const;
  // Spans, log records and metric snapshots whose request failed.
  std::uint64_t failed() const;

  struct Impl;

 private:
  explicit OtlpExporter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace outbound::telemetry

#endif  // OUTBOUND_TELEMETRY_OTLP_H_
