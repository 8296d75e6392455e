// SPDX-License-Identifier: Apache-2.0
//
// docs/telemetry.md's blocks, compiled (scripts/check-doc-examples).
#include "outbound/http/client.h"
#include "outbound/http/message.h"
#include "outbound/runtime.h"
#include "outbound/telemetry/log.h"
#include "outbound/telemetry/metric_store.h"
#include "outbound/telemetry/trace.h"

namespace outbound::docs {

http::Request CallersTraceExample(const telemetry::SpanContext& incoming_span_context) {
  // [example callers-trace]
  outbound::http::Request request = outbound::http::Request::Get("/charges/7");
  request.context.trace = incoming_span_context;  // e.g. from the request being served
  request.context.baggage = {{"tenant", "acme", ""}};
  // [end callers-trace]
  return request;
}

}  // namespace outbound::docs
