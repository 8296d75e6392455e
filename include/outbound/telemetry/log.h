// SPDX-License-Identifier: Apache-2.0
// outbound/telemetry/log.h
//
// Log records, shaped like OpenTelemetry's Logs API: a severity, a body,
// attributes, and the trace context of the call that caused the record. The
// library logs through the Runtime's Logger only (never stderr); no Logger
// is the default, and then nothing is logged.
#ifndef OUTBOUND_TELEMETRY_LOG_H_
#define OUTBOUND_TELEMETRY_LOG_H_

#include <string>
#include <string_view>

#include "outbound/clock.h"
#include "outbound/telemetry/attributes.h"
#include "outbound/telemetry/trace.h"

namespace outbound::telemetry {

// OpenTelemetry's severity numbers.
enum class Severity : int { kTrace = 1, kDebug = 5, kInfo = 9, kWarn = 13, kError = 17 };

// "TRACE", "DEBUG", "INFO", "WARN", "ERROR".
std::string_view ToString(Severity severity);

struct LogRecord {
  std::string scope;  // e.g. "outbound.http"
  TimePoint at;       // on the Runtime's clock
  Severity severity = Severity::kInfo;
  std::string body;
  Attributes attributes;
  SpanContext trace;  // invalid when no call's trace caused it
};

// Receives log records, on the thread that emits them. Implementations are
// thread-safe, fast, and do not throw.
class Logger {
 public:
  virtual ~Logger() = default;
  virtual void Emit(LogRecord&& record) = 0;
};

}  // namespace outbound::telemetry

#endif  // OUTBOUND_TELEMETRY_LOG_H_
