// SPDX-License-Identifier: Apache-2.0
// OTLP/HTTP JSON bodies: spans, log records and metrics as the proto3 JSON
// mapping of OTLP's Export*ServiceRequest messages, with OTLP's own
// exceptions (trace and span ids as lower-case hex, not base64). Enums are
// integers, 64-bit integers decimal strings, field names lowerCamelCase.
// Empty repeated fields are left out.
//
// Pure: the caller passes the clock readings that turn steady times into
// Unix times, so a test of the encoding needs no clock.
#ifndef OUTBOUND_SRC_TELEMETRY_OTLP_JSON_H_
#define OUTBOUND_SRC_TELEMETRY_OTLP_JSON_H_

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "outbound/clock.h"
#include "outbound/telemetry/log.h"
#include "outbound/telemetry/metric_store.h"
#include "outbound/telemetry/trace.h"

namespace outbound::telemetry::internal {

// Turns times on the Runtime's steady clock into Unix nanoseconds: the
// steady and calendar readings of one moment.
class UnixTime {
 public:
  UnixTime(TimePoint now, std::chrono::system_clock::time_point wall_now)
      : now_(now), wall_now_(wall_now) {}
  std::string Nanos(TimePoint t) const;
  std::string Nanos(std::chrono::system_clock::time_point t) const;

 private:
  TimePoint now_;
  std::chrono::system_clock::time_point wall_now_;
};

// The resource every request carries: `service.name` and the SDK's name.
struct OtlpResource {
  std::string service_name;
};

// ExportTraceServiceRequest, spans grouped by scope (first seen first).
std::string EncodeSpans(const OtlpResource& resource, std::span<const SpanData> spans,
                        const UnixTime& time);

// ExportLogsServiceRequest, records grouped by scope.
std::string EncodeLogs(const OtlpResource& resource, std::span<const LogRecord> records,
                       const UnixTime& time);

// ExportMetricsServiceRequest: every point of `metrics`, cumulative since
// `start`, observed at `at`. Metrics with no point are left out.
std::string EncodeMetrics(const OtlpResource& resource, std::span<const MetricData> metrics,
                          std::chrono::system_clock::time_point start,
                          std::chrono::system_clock::time_point at);

// How many items a receiver's 2xx answer says it rejected (OTLP/HTTP's
// partial success): `field` ("rejectedSpans", "rejectedLogRecords",
// "rejectedDataPoints") under "partialSuccess", an int64 written as a
// string or a number; 0 for a body without one, or one that is not JSON.
std::uint64_t RejectedItems(std::string_view body, std::string_view field);

}  // namespace outbound::telemetry::internal

#endif  // OUTBOUND_SRC_TELEMETRY_OTLP_JSON_H_
