// SPDX-License-Identifier: Apache-2.0
#include "client_telemetry.h"

#include <array>

#include "layers.h"
#include "origin.h"
#include "outbound/internal/ascii.h"
#include "outbound/telemetry/propagation.h"
#include "request_check.h"

namespace outbound::http::internal {
namespace {

using telemetry::KeyValue;

// A method as an attribute: the known ones as they are, anything else
// "_OTHER", so a custom method cannot grow a metric's series without bound.
std::string_view MethodAttribute(std::string_view method) {
  static constexpr std::array<std::string_view, 9> kKnown = {
      "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"};
  for (std::string_view known : kKnown) {
    if (method == known) return known;
  }
  return "_OTHER";
}

bool CarriesCredential(std::string_view key) {
  static constexpr std::array<std::string_view, 16> kKeys = {"AWSAccessKeyId",
                                                             "Signature",
                                                             "sig",
                                                             "X-Goog-Signature",
                                                             "X-Amz-Signature",
                                                             "X-Amz-Credential",
                                                             "X-Amz-Security-Token",
                                                             "token",
                                                             "access_token",
                                                             "id_token",
                                                             "api_key",
                                                             "apikey",
                                                             "key",
                                                             "password",
                                                             "secret",
                                                             "client_secret"};
  for (std::string_view k : kKeys) {
    if (outbound::internal::EqualsIgnoringAsciiCase(key, k)) return true;
  }
  return false;
}

// What an attempt failed with, as error.type: the client's error kind, or
// the status code of an error response (written into `digits`); empty for
// a success. Allocates nothing.
std::string_view ErrorType(const AttemptOutcome& outcome, std::array<char, 8>& digits) {
  if (!outcome.result) return ToString(outcome.result.error().kind());
  int status = outcome.result->status;
  if (status < 400 || status > 999) return {};
  digits = {static_cast<char>('0' + status / 100), static_cast<char>('0' + status / 10 % 10),
            static_cast<char>('0' + status % 10)};
  return std::string_view(digits.data(), 3);
}

}  // namespace

std::string RedactedUrl(std::string_view url) {
  std::size_t query = url.find('?');
  if (query == std::string_view::npos) return std::string(url);
  std::string out(url.substr(0, query + 1));
  std::string_view rest = url.substr(query + 1);
  std::string_view fragment;
  if (std::size_t hash = rest.find('#'); hash != std::string_view::npos) {
    fragment = rest.substr(hash);
    rest = rest.substr(0, hash);
  }
  bool first = true;
  while (true) {
    std::size_t amp = rest.find('&');
    std::string_view pair = rest.substr(0, amp);
    if (!first) out += '&';
    first = false;
    std::size_t eq = pair.find('=');
    if (eq != std::string_view::npos && CarriesCredential(pair.substr(0, eq))) {
      out += pair.substr(0, eq + 1);
      out += "REDACTED";
    } else {
      out += pair;
    }
    if (amp == std::string_view::npos) break;
    rest = rest.substr(amp + 1);
  }
  out += fragment;
  return out;
}

ClientTelemetry::ClientTelemetry(const telemetry::Telemetry& telemetry, const Origin& origin,
                                 Clock& clock, std::string_view scope)
    : telemetry_(telemetry),
      clock_(clock),
      meters_(telemetry.meters),
      host_(origin.host),
      port_(origin.port),
      scheme_(origin.scheme),
      scope_(scope),
      resilience_(telemetry, scope, origin.host, origin.port) {
  if (meters_ == nullptr) return;
  malformed_faults_ =
      meters_->CreateCounter({scope, "outbound.fault.malformed", "{scenario}",
                              "Fault scenarios in calls' baggage that were malformed, ignored."});
  misuses_ = meters_->CreateCounter(
      {scope, "outbound.internal.misuse", "{misuse}",
       "Times a layer of the client broke the call path's protocol: a bug in outbound."});
  ejections_ = meters_->CreateCounter(
      {scope, "outbound.endpoint.ejections", "{ejection}",
       "Times outlier detection ejected one of the dependency's endpoints."});
}

ClientTelemetry::ClientTelemetry(const telemetry::Telemetry& telemetry, const Origin& origin,
                                 Clock& clock)
    : ClientTelemetry(telemetry, origin, clock, kScope) {
  if (meters_ == nullptr) return;
  duration_ = meters_->CreateHistogram(
      {kScope, "http.client.request.duration", "s", "Duration of HTTP client requests."},
      telemetry::kDurationBuckets);
  body_size_ = meters_->CreateHistogram(
      {kScope, "http.client.request.body.size", "By", "Size of HTTP client request bodies."},
      telemetry::kDefaultBuckets);
  time_in_queue_ = meters_->CreateHistogram(
      {kScope, "http.client.request.time_in_queue", "s",
       "Time an HTTP client request waited for a connection before it was sent."},
      telemetry::kDurationBuckets);
}

ClientTelemetry::~ClientTelemetry() = default;

void ClientTelemetry::AttemptStarted(Attempt& attempt) const {
  const CallRequest& request = *attempt.request;
  const telemetry::SpanContext* context = &attempt.call->parent;
  if (telemetry_.tracer != nullptr) {
    telemetry::Span& span = StartSpan(attempt, MethodAttribute(request.method));
    span.SetAttribute({"http.request.method", MethodAttribute(request.method)});
    // A URL without a query has nothing to redact, and needs no copy.
    if (request.url.find('?') == std::string::npos) {
      span.SetAttribute({"url.full", request.url});
    } else {
      span.SetAttribute({"url.full", RedactedUrl(request.url)});
    }
    span.SetAttribute({"server.address", host_});
    span.SetAttribute({"server.port", port_});
    if (attempt.resend_count > 0) {
      span.SetAttribute({"http.request.resend_count", std::int64_t{attempt.resend_count}});
    }
    context = &span.context();
  }
  SetTraceHeaders(attempt, *context);
}

telemetry::Span& ClientTelemetry::StartSpan(Attempt& attempt, std::string_view name) const {
  CallState& call = *attempt.call;
  telemetry::SpanStart start{.scope = scope_,
                             .name = name,
                             .kind = telemetry::SpanKind::kClient,
                             .parent = call.parent.valid() ? &call.parent : &call.own_trace,
                             .start = attempt.started};
  attempt.span = telemetry_.tracer->StartSpan(start);
  // Every attempt of a call without a trace of its caller's is in one trace.
  if (!call.parent.valid() && !call.own_trace.trace_id.valid()) {
    call.own_trace.trace_id = attempt.span->context().trace_id;
  }
  return *attempt.span;
}

void ClientTelemetry::SetTraceHeaders(Attempt& attempt, const telemetry::SpanContext& context) {
  AttemptFields& headers = attempt.attempt_headers;
  headers.clear();
  // tracestate and baggage carry the caller's own text, sent as it is: one
  // with a control character (CR, LF) would split the field on HTTP/1.1,
  // so it is left out, as a tracestate that does not parse is (W3C).
  if (context.valid()) {
    std::array<char, telemetry::kTraceparentSize> traceparent;
    telemetry::FormatTraceparent(context, traceparent);
    headers.Add("traceparent", std::string_view(traceparent.data(), traceparent.size()));
    if (!context.trace_state.empty() && IsFieldValue(context.trace_state)) {
      headers.Add("tracestate", context.trace_state);
    }
  }
  const std::string& baggage = attempt.call->baggage;
  if (!baggage.empty() && IsFieldValue(baggage)) headers.Add("baggage", baggage);
}

void ClientTelemetry::AttemptEnded(Attempt& attempt, const AttemptOutcome& outcome,
                                   std::optional<Duration> in_queue) const {
  bool log = log_requests_ && telemetry_.logger != nullptr;
  if (attempt.span == nullptr && meters_ == nullptr && !log) return;
  TimePoint now = outcome.ended;
  std::array<char, 8> digits{};
  std::string_view error_type = ErrorType(outcome, digits);
  if (log) LogRequest(attempt, outcome, now, error_type);
  int status = outcome.result ? outcome.result->status : 0;
  std::string_view version = outcome.result ? std::string_view(outcome.result->version) : "";
  if (attempt.span != nullptr) {
    telemetry::Span& span = *attempt.span;
    if (status != 0) span.SetAttribute({"http.response.status_code", std::int64_t{status}});
    if (!version.empty()) span.SetAttribute({"network.protocol.version", version});
    if (outcome.unprocessed) span.SetAttribute({"outbound.attempt.unprocessed", true});
    if (in_queue) {
      span.SetAttribute(
          {"http.client.request.time_in_queue", std::chrono::duration<double>(*in_queue).count()});
    }
    if (!error_type.empty()) {
      span.SetAttribute({"error.type", error_type});
      span.SetStatus(telemetry::StatusCode::kError,
                     outcome.result ? std::string_view() : outcome.result.error().message());
    }
    span.End(now);
    attempt.span.reset();
  }
  if (meters_ == nullptr) return;
  // In the order of their keys, which is the order a store files them in.
  std::array<KeyValue, 7> attributes;
  std::size_t n = 0;
  if (!error_type.empty()) attributes[n++] = {"error.type", error_type};
  attributes[n++] = {"http.request.method", MethodAttribute(attempt.request->method)};
  if (status != 0) attributes[n++] = {"http.response.status_code", std::int64_t{status}};
  if (!version.empty()) attributes[n++] = {"network.protocol.version", version};
  attributes[n++] = {"server.address", host_};
  attributes[n++] = {"server.port", port_};
  attributes[n++] = {"url.scheme", scheme_};
  std::span<const KeyValue> used(attributes.data(), n);
  std::optional<double> body_size;
  const BodySource& source = attempt.request->body_source;
  if (!source) {
    body_size = static_cast<double>(attempt.request->body.size());
  } else if (source.length) {
    body_size = static_cast<double>(*source.length);
  }
  double took = std::chrono::duration<double>(now - attempt.started).count();
  if (const AttemptSeries* series =
          SeriesFor(error_type, MethodAttribute(attempt.request->method), status, version, used)) {
    series->duration->Record(took);
    if (in_queue) series->time_in_queue->Record(std::chrono::duration<double>(*in_queue).count());
    if (body_size) series->body_size->Record(*body_size);
    return;
  }
  duration_->Record(took, used);
  if (in_queue) time_in_queue_->Record(std::chrono::duration<double>(*in_queue).count(), used);
  if (body_size) body_size_->Record(*body_size, used);
}

const ClientTelemetry::AttemptSeries* ClientTelemetry::SeriesFor(
    std::string_view error_type, std::string_view method, int status, std::string_view version,
    std::span<const KeyValue> attributes) const {
  auto find = [&](std::size_t from, std::size_t to) -> const AttemptSeries* {
    for (std::size_t i = from; i < to; ++i) {
      const AttemptSeries* s = bound_[i].load(std::memory_order_relaxed);
      if (s->status == status && s->method == method && s->version == version &&
          s->error_type == error_type) {
        return s;
      }
    }
    return nullptr;
  };
  std::size_t seen = bound_count_.load(std::memory_order_acquire);
  if (const AttemptSeries* s = find(0, seen)) return s;
  std::lock_guard lock(bind_mu_);
  std::size_t now = bound_count_.load(std::memory_order_relaxed);
  if (const AttemptSeries* s = find(seen, now)) return s;  // bound meanwhile
  if (now == kBoundSets) return nullptr;
  auto made = std::make_unique<AttemptSeries>(AttemptSeries{
      .error_type = std::string(error_type),
      .method = method,
      .status = status,
      .version = std::string(version),
      .duration = duration_->BindHistogram(attributes),
      .time_in_queue = time_in_queue_->BindHistogram(attributes),
      .body_size = body_size_->BindHistogram(attributes),
  });
  bound_[now].store(made.get(), std::memory_order_relaxed);
  bound_count_.store(now + 1, std::memory_order_release);
  bound_owned_.push_back(std::move(made));
  return bound_owned_.back().get();
}

// One debug record per attempt: what was asked of whom, how it ended and
// how long it took. Never a header or a body, so never a credential.
void ClientTelemetry::LogRequest(const Attempt& attempt, const AttemptOutcome& outcome,
                                 TimePoint now, std::string_view error_type) const {
  telemetry::LogRecord record;
  record.scope = kScope;
  record.at = now;
  record.severity = telemetry::Severity::kDebug;
  record.body = outcome.result ? "HTTP request completed" : "HTTP request failed";
  std::string url = RedactedUrl(attempt.request->url);
  double duration = std::chrono::duration<double>(now - attempt.started).count();
  std::array<KeyValue, 6> attributes;
  std::size_t n = 0;
  attributes[n++] = {"http.request.method", MethodAttribute(attempt.request->method)};
  attributes[n++] = {"url.full", url};
  attributes[n++] = {"server.address", host_};
  attributes[n++] = {"outbound.duration", duration};
  if (outcome.result) {
    attributes[n++] = {"http.response.status_code", std::int64_t{outcome.result->status}};
  } else {
    attributes[n++] = {"error.type", error_type};
  }
  record.attributes = telemetry::Own(std::span<const KeyValue>(attributes.data(), n));
  record.trace = attempt.trace_context();
  telemetry_.logger->Emit(std::move(record));
}

void ClientTelemetry::LayerMisused(std::string_view what) const {
  const KeyValue attributes[] = {{"server.address", host_}, {"server.port", port_}};
  if (meters_ != nullptr) misuses_->Add(1, attributes);
  if (telemetry_.logger == nullptr) return;
  telemetry::LogRecord record;
  record.scope = scope_;
  record.at = clock_.Now();
  record.severity = telemetry::Severity::kError;
  record.body = "outbound: the call path was misused: " + std::string(what);
  record.attributes = telemetry::Own(attributes);
  telemetry_.logger->Emit(std::move(record));
}

void ClientTelemetry::EndpointEjected(std::string_view endpoint, Duration out) const {
  const KeyValue attributes[] = {
      {"server.address", host_}, {"server.port", port_}, {"network.peer.address", endpoint}};
  if (meters_ != nullptr) ejections_->Add(1, attributes);
  if (telemetry_.logger == nullptr) return;
  telemetry::LogRecord record;
  record.scope = scope_;
  record.at = clock_.Now();
  record.severity = telemetry::Severity::kWarn;
  record.body = "outbound: endpoint " + std::string(endpoint) + " ejected for " +
                std::to_string(std::chrono::duration_cast<std::chrono::seconds>(out).count()) +
                " s after failing in a row";
  record.attributes = telemetry::Own(attributes);
  telemetry_.logger->Emit(std::move(record));
}

void ClientTelemetry::FaultScenarioIgnored() const {
  if (meters_ == nullptr) return;
  const KeyValue attributes[] = {{"server.address", host_}, {"server.port", port_}};
  malformed_faults_->Add(1, attributes);
}

}  // namespace outbound::http::internal
