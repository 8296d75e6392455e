// SPDX-License-Identifier: Apache-2.0
#include "front_end.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>
#include <span>

#include "exchange.h"
#include "names.h"
#include "wire/status.h"
#include "wire/timeout.h"

namespace outbound::rpc::internal {
namespace {

using http::internal::Attempt;
using http::internal::AttemptOutcome;
using telemetry::KeyValue;

// A span per attempt, named after the method ("pkg.Service/Method"), and an
// rpc.client.call.duration point per attempt, with the attributes
// OpenTelemetry's RPC conventions name.
class GrpcTelemetry final : public http::internal::ClientTelemetry {
 public:
  GrpcTelemetry(const telemetry::Telemetry& telemetry, const http::internal::Origin& origin,
                Clock& clock, std::size_t receive_limit)
      : ClientTelemetry(telemetry, origin, clock, kScope), receive_limit_(receive_limit) {
    if (meters_ == nullptr) return;
    call_duration_ = meters_->CreateHistogram(
        {kScope, "rpc.client.call.duration", "s", "Duration of each attempt of a gRPC call."},
        telemetry::kDurationBuckets);
  }

  void AttemptStarted(Attempt& attempt) const override {
    const telemetry::SpanContext* context = &attempt.call->parent;
    if (telemetry_.tracer != nullptr) {
      std::string_view method = MethodName(attempt);
      telemetry::Span& span = StartSpan(attempt, method);
      span.SetAttribute({"rpc.system.name", std::string_view("grpc")});
      span.SetAttribute({"rpc.method", method});
      span.SetAttribute({"server.address", host_});
      span.SetAttribute({"server.port", port_});
      if (attempt.resend_count > 0) {
        span.SetAttribute({"outbound.attempt.resend_count", std::int64_t{attempt.resend_count}});
      }
      context = &span.context();
    }
    SetTraceHeaders(attempt, *context);
  }

  void AttemptEnded(Attempt& attempt, const AttemptOutcome& outcome,
                    std::optional<Duration> in_queue) const override {
    if (attempt.span == nullptr && meters_ == nullptr) return;
    TimePoint now = outcome.ended;
    // What classify heard, and the caller hears.
    Status status =
        AttemptStatusOf(outcome.result, static_cast<bool>(attempt.call->body_sink), receive_limit_);
    std::string_view code = CodeName(status.code);
    std::string_view error_type = status.ok() ? std::string_view() : code;
    if (attempt.span != nullptr) {
      telemetry::Span& span = *attempt.span;
      span.SetAttribute({"rpc.response.status_code", code});
      if (status.rejected) span.SetAttribute({"outbound.rejected", true});
      if (outcome.unprocessed) span.SetAttribute({"outbound.attempt.unprocessed", true});
      if (in_queue) {
        span.SetAttribute(
            {"outbound.attempt.time_in_queue", std::chrono::duration<double>(*in_queue).count()});
      }
      if (!error_type.empty()) {
        span.SetAttribute({"error.type", error_type});
        span.SetStatus(telemetry::StatusCode::kError, status.message);
      }
      span.End(now);
      attempt.span.reset();
    }
    if (meters_ == nullptr) return;
    // In the order of their keys, which is the order a store files them in.
    std::array<KeyValue, 6> attributes;
    std::size_t n = 0;
    if (!error_type.empty()) attributes[n++] = {"error.type", error_type};
    attributes[n++] = {"rpc.method", MethodName(attempt)};
    attributes[n++] = {"rpc.response.status_code", code};
    attributes[n++] = {"rpc.system.name", std::string_view("grpc")};
    attributes[n++] = {"server.address", host_};
    attributes[n++] = {"server.port", port_};
    call_duration_->Record(std::chrono::duration<double>(now - attempt.started).count(),
                           std::span<const KeyValue>(attributes.data(), n));
  }

 private:
  // "pkg.Service/Method", from the attempt's path.
  static std::string_view MethodName(const Attempt& attempt) {
    return MethodOf(attempt.request->url).substr(1);
  }

  std::shared_ptr<telemetry::Histogram> call_duration_;
  std::size_t receive_limit_;
};

// Tells the server how long the attempt has, as grpc-timeout: the time
// left as the attempt is written (on a ready connection), not before.
// Time spent in the client's queue or opening the connection has passed
// for the client too, and a server told of it would work on past the
// moment the client gives up. A stream (its body a pipe) is bounded by
// its context's deadline alone once it is on a connection, so that is the
// one it sends, and none without one. A unary call's attempt with a
// shorter attempt timeout (set by the layer above) sends what is left of
// that, which runs from the moment the dependency began to owe the
// headers (a dial counts): the client waits no longer. A server stream's
// does not: its attempt timeout bounds only the wait for the headers, and
// the call's deadline the whole stream (a server told less would cut it
// short).
//
// An attempt its attempt timeout cut ends UNAVAILABLE, not
// DEADLINE_EXCEEDED: the call's deadline has not passed, and as with a
// replica that cannot be reached, another attempt may answer (gRPC's
// per-attempt timeout is retried whatever the retryable codes).
class GrpcTimeout final : public http::internal::AttemptLayer,
                          public http::internal::AttemptFieldWriter {
 public:
  std::string_view name() const override { return "grpc timeout"; }

  void Start(Attempt& attempt) override { attempt.Proceed(*this); }

  void Writing(Attempt& attempt, TimePoint now) override {
    std::optional<TimePoint> deadline = attempt.call->deadline();
    bool stream = attempt.request->body_source.pipe != nullptr;
    bool answer_streams = static_cast<bool>(attempt.call->body_sink);
    if (stream) deadline = attempt.call->context_deadline;
    // A long upload pauses the attempt timeout (kTimedUploadBytes), not the
    // server's clock: the server is told the call's deadline.
    bool long_upload = attempt.request->body.size() > http::internal::kTimedUploadBytes;
    if (!stream && !answer_streams && !long_upload && attempt.attempt_timeout > Duration::zero()) {
      TimePoint since = attempt.awaiting_since().value_or(now);
      deadline = std::min(deadline.value_or(TimePoint::max()),
                          AddSaturated(since, attempt.attempt_timeout));
    }
    if (deadline) attempt.attempt_headers.Add("grpc-timeout", EncodeTimeout(*deadline - now));
  }

  void Finish(Attempt& attempt, AttemptOutcome& outcome) override {
    if (attempt.cancel_reason() != http::internal::CancelReason::kAttemptTimeout) return;
    if (outcome.result) return;
    outcome.result = Fail(ErrorKind::kTransport, outcome.result.error().message());
  }
};

// Tells the server which attempt this is: a retry or a hedge carries
// grpc-previous-rpc-attempts, the number of attempts of the call sent
// before it (gRFC A6), so a server can tell a call tried again from a new
// one. It counts only the attempts the server may have acted on: not one
// it refused unprocessed, one never sent, or one the breaker turned away
// (grpc-core leaves out its transparent retries; this leaves those out
// whether or not they spent one of the policy's attempts). The first
// attempt carries none.
class PreviousAttempts final : public http::internal::AttemptLayer {
 public:
  std::string_view name() const override { return "grpc previous attempts"; }

  void Start(Attempt& attempt) override {
    if (attempt.previous_attempts > 0) {
      std::array<char, 12> digits;  // an int's
      auto written =
          std::to_chars(digits.data(), digits.data() + digits.size(), attempt.previous_attempts);
      attempt.attempt_headers.Add("grpc-previous-rpc-attempts",
                                  std::string_view(digits.data(), written.ptr));
    }
    attempt.Proceed(*this);
  }

  void Finish(Attempt& /*attempt*/, AttemptOutcome& /*outcome*/) override {}
};

// An injected "status:NNN,retry-after:S" as a gRPC server would say it: a
// Trailers-Only answer with the code gRPC gives that HTTP status, and the
// retry-after as pushback.
http::Response InjectedAnswer(int status, std::optional<std::uint32_t> retry_after_seconds) {
  http::Response response;
  response.status = 200;
  response.version = "2";
  response.headers.Add("content-type", "application/grpc");
  response.headers.Add("grpc-status", std::to_string(static_cast<int>(CodeForHttpStatus(status))));
  response.headers.Add(
      "grpc-message", EncodeStatusMessage("injected fault: HTTP status " + std::to_string(status)));
  if (retry_after_seconds) {
    response.headers.Add("grpc-retry-pushback-ms",
                         std::to_string(std::uint64_t{*retry_after_seconds} * 1000));
  }
  return response;
}

}  // namespace

http::internal::FrontEnd GrpcFrontEnd(const std::optional<Duration>& attempt_timeout,
                                      std::size_t receive_limit) {
  http::internal::FrontEnd front_end;
  front_end.fault_scheme = "grpc";
  front_end.injected_answer = InjectedAnswer;
  front_end.redirects = false;
  front_end.http2_only = true;
  // Another answer's body holds no message: the transport drops it, rather
  // than hold it to the receive limit (RESOURCE_EXHAUSTED past it).
  front_end.body_wanted = IsGrpcAnswer;
  front_end.attempt_timeout = attempt_timeout.has_value();
  front_end.telemetry = [receive_limit](const telemetry::Telemetry& telemetry,
                                        const http::internal::Origin& origin, Clock& clock) {
    return std::make_unique<GrpcTelemetry>(telemetry, origin, clock, receive_limit);
  };
  front_end.attempt_layers =
      [](http::internal::AttemptSlots& /*slots*/, Clock& /*clock*/,
         std::vector<std::unique_ptr<http::internal::AttemptLayer>>& layers) {
        layers.push_back(std::make_unique<PreviousAttempts>());
        layers.push_back(std::make_unique<GrpcTimeout>());
      };
  return front_end;
}

}  // namespace outbound::rpc::internal
