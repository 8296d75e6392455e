// SPDX-License-Identifier: Apache-2.0
// outbound/http/settings.h
//
// The settings of a client of one HTTP dependency. Plain values; a field's
// zero means zero, never "the default": start from DefaultSettings() and set
// what you source. Each sourced field has a check that says what is wrong
// with a value without naming the field, so a configuration resolver can
// name the variable it came from; Client::Create runs them all again, plus
// the rules that take two fields, and names every bad field in one error.
//
// example: examples/headers/http.cc#settings
//   http::Settings settings = http::DefaultSettings();
//   settings.base_url = "https://payments:8443";
//   settings.tls = http::TlsSettings{.root_pem = ca_pem};
//   settings.timeout = 3s;
#ifndef OUTBOUND_HTTP_SETTINGS_H_
#define OUTBOUND_HTTP_SETTINGS_H_

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "outbound/circuit/breaker.h"
#include "outbound/error.h"
#include "outbound/fault.h"
#include "outbound/http/classify.h"
#include "outbound/http/middleware.h"
#include "outbound/network.h"
#include "outbound/retry/budget.h"
#include "outbound/retry/reason.h"
#include "outbound/telemetry/trace.h"

namespace outbound::http {

// What a client dials an https dependency with. There is no way to turn
// certificate verification off.
struct TlsSettings {
  // PEM of the roots trusted. Empty: the system's roots.
  std::string root_pem;
  // For mTLS: the client's certificate chain and private key, in PEM.
  std::string client_cert_pem;
  std::string client_key_pem;
};

// One attempt as it ended, for an observer (a `-v` line, a test, a demo).
struct AttemptRecord {
  int attempt = 1;       // 1 for a request's first attempt
  int resend_count = 0;  // attempts of the call before this one, redirects included
  // The request's; valid while the observer runs (copy what you keep).
  std::string_view method;
  std::string_view url;
  int status = 0;                  // 0 when there was no response
  std::optional<ErrorKind> error;  // set when there was no response
  std::string error_message;
  Duration duration{0};                         // on the client's clock
  std::optional<retry::DecisionKind> decision;  // what the retry loop did next
  // Why it did: the rule that decided (retry/reason.h); set with `decision`.
  retry::Reason reason;
  // The attempt is a hedge (Settings::hedging): started while another
  // attempt of the request was still in flight.
  bool hedge = false;
  // The trace the attempt ran in: its span's ids when tracing is on, else
  // the caller's context (invalid when the caller passed none). Ties the
  // record to the caller's request in a log.
  telemetry::TraceId trace_id;
  telemetry::SpanId span_id;
};

// Hears how each attempt ended and each change of the breaker's state.
// A client takes several (a `-v` printer, a test, the program's own
// metrics), each told in the order given. Calls come on the thread that
// ended the attempt or caused the transition (the client's event-loop
// thread, a timer's, or the caller's when the breaker refused at once);
// they must be fast and must not throw. Transitions arrive one at a time,
// in order, outside the breaker's lock.
class Observer {
 public:
  virtual ~Observer() = default;
  virtual void OnAttempt(const AttemptRecord& record) { (void)record; }
  virtual void OnBreakerTransition(const circuit::Transition& transition) { (void)transition; }
};

// An Observer of attempts only, or of transitions only, from a function.
std::shared_ptr<Observer> ObserveAttempts(std::function<void(const AttemptRecord&)> on_attempt);
std::shared_ptr<Observer> ObserveTransitions(
    std::function<void(const circuit::Transition&)> on_transition);

// An outbound rate limit: a token bucket refilled at `per_second` tokens a
// second, holding up to `burst` (full at the start). Each call takes one
// token as it starts (its retries and redirects take none) or waits for
// one on the Runtime's clock; a call whose wait would end after its
// deadline fails at once with kDeadline, and a call whose caller cancels
// stops waiting. Valid: per_second positive and finite, burst >= 1.
struct RateLimit {
  double per_second = 0;
  int burst = 1;
};

// `per_second` calls a second, `burst` at once: settings.rate_limit =
// http::WithRateLimit(50, 10).
inline RateLimit WithRateLimit(double per_second, int burst = 1) {
  return RateLimit{per_second, burst};
}

// A bulkhead: a bound on the client's calls in flight, so a dependency
// that slows down cannot hold more of the process than this. A call over
// `max_calls` waits in a FIFO queue of up to `max_queued` calls for at most
// `max_wait` (on the Runtime's clock), else fails at once with kRejected
// and nothing sent; the breaker counts no rejection. A call's retries and
// redirects hold its one place. Valid: max_calls 1 to 100000, max_queued
// 0 to 100000, max_wait positive when max_queued is not 0.
struct Bulkhead {
  int max_calls = 0;
  int max_queued = 0;
  Duration max_wait{0};
};

// Adaptive concurrency: a limit on the client's calls in flight that
// follows the dependency's latency, so a dependency whose latency grows
// with the calls it holds is kept near its capacity instead of being
// driven into timeouts (a gradient limit, as Netflix's concurrency-limits
// Gradient2 and Envoy's adaptive concurrency filter; docs/beyond-retries.md
// says why this and not client-side throttling). A call over the limit
// fails at once with kRejected and nothing sent; the breaker counts no
// rejection.
//
// Each call that got an answer in one attempt is a sample of the
// dependency's latency (from the call passing the limit to its answer). At
// the end of each `sample_window` (on the Runtime's clock, with an answer
// in it) the limit moves a fifth of the way to
//   limit * clamp(baseline / window's mean latency, 0.5, 1) + sqrt(limit),
// where the baseline is the least latency seen (relearned every 600
// sample windows of time, 60 s at the default, by holding the limit at
// `min_limit` for five answers): at a
// dependency with k workers, the limit settles where k + sqrt(limit) calls
// are in flight (25 for k = 20). A window with a drop (a call that timed
// out, lost its connection, or needed a retry; a hedge is none) halves
// the limit instead.
// The limit stays within [min_limit, max_limit]. Valid: 1 <= min_limit <=
// initial_limit <= max_limit <= 100000, sample_window 1ms to 1min.
struct AdaptiveConcurrency {
  int initial_limit = 20;
  int min_limit = 1;
  int max_limit = 1000;
  Duration sample_window = std::chrono::milliseconds(100);
};

// Outlier detection (docs/replicas.md): an endpoint whose attempts fail
// `consecutive_failures` times in a row (a connection refused or lost, a
// reset, an attempt timeout, an answer classify counts as the breaker's
// failure) is ejected: it gets no attempt for `base_ejection` times the
// number of times it has been ejected, at most `max_ejection`, then is
// probed back with calls as any other. Never more than `max_ejected_share`
// of the endpoints are out at once (one may always be, of two or more;
// the only endpoint never is). A failure that ejects its endpoint, or
// comes from one already out, is that endpoint's alone while another
// serves: the breaker does not count it. Envoy's outlier_detection with
// consecutive_5xx, base_ejection_time, max_ejection_time and
// max_ejection_percent. Valid: consecutive_failures >= 0 (0: never ejects),
// base_ejection and max_ejection positive, base <= max, share in [0, 1].
struct OutlierDetection {
  int consecutive_failures = 5;
  Duration base_ejection = std::chrono::seconds(30);
  Duration max_ejection = std::chrono::seconds(300);
  double max_ejected_share = 0.5;
};

// Several endpoints behind one dependency (docs/replicas.md): every
// address the host resolves to, or `endpoints`, each with its own
// connections (HTTP/2: one while its MAX_CONCURRENT_STREAMS allows;
// HTTP/1.1: up to max_connections each). Each attempt goes to the endpoint
// with fewer attempts outstanding of two drawn at random (power of two
// choices) among those not ejected, and a call's next attempt to another
// endpoint than its last when one can take it. The name is resolved again
// every `re_resolve_every` (within ±10 %, from the Runtime's random), and
// when a connection to it fails to open; an endpoint gone from the answer
// takes no new attempt, and its connections close once what they carry
// has finished. gRPC's round_robin and pick_first are the endpoints' other
// policies; Envoy's LEAST_REQUEST with choice_count 2 is this one. Valid:
// each endpoint an IP literal and a port; re_resolve_every 1 s to 1 day.
struct Balancing {
  std::vector<Endpoint> endpoints;  // empty: the addresses the host resolves to
  Duration re_resolve_every = std::chrono::seconds(30);
  OutlierDetection outlier_detection;
};
// Hedging (Finagle's backup requests, Polly's and gRPC's hedging): when an
// attempt has no answer after `delay`, one more attempt of the same request
// starts beside it; the first answer that ends the call (a success, or one
// the classifier says not to retry) wins, and the others are cancelled
// (their decision's reason is hedge_won). A hedge starts only if all hold:
// the request is safe to send twice (an idempotent method and a buffered
// body: never a pipe's or a StreamBodyFrom body, never a call whose answer
// body streams to the caller); the call's remaining time is more than the
// delay; fewer than `max_attempts_in_flight` attempts are in flight and
// fewer than max_attempts were started; the retry budget allows a retry
// (a hedge takes one of its tokens); and the hedge share has a hedge left.
//
// The delay is `delay`, or with `percentile` set (0.95: a hedge for the
// slowest 5 %) that percentile of the latency of the dependency's latest
// 1000 answered attempts, once 100 were seen (until then, `delay`), at
// least 1ms. The share: each call adds `max_extra_share` to a bucket that
// holds at most kHedgeBurst hedges and starts full, and each hedge takes
// one, so hedges stay within that share of the calls (plus the burst).
// Valid: delay 1ms to 1h, percentile 0.5 to 0.999, max_attempts_in_flight
// 2 to 10, max_extra_share above 0 and at most 1.
struct Hedging {
  Duration delay = std::chrono::milliseconds(100);
  std::optional<double> percentile;
  int max_attempts_in_flight = 2;
  double max_extra_share = 0.05;
};

// The hedges a client may send at once above its share (Hedging).
inline constexpr int kHedgeBurst = 10;

// Failure injection (outbound/fault.h, docs/failure-injection.md): the
// client is the injection point "http:<host>:<port>".
using FaultSettings = outbound::FaultSettings;

// A policy of its own for some of a client's calls (Settings::routes):
// those sent to a path under `path_prefix`. What it sets replaces the
// client's setting for them; what it leaves empty keeps the client's. The
// calls stay the client's in everything else: one breaker, one retry
// budget, one pool, one set of middleware and limits for them all, so a
// report endpoint may have 30 s and one attempt while the rest of the
// dependency has 2 s and three.
//
// example: examples/headers/http.cc#routes
//   settings.routes = {
//       {.path_prefix = "/v1/reports", .timeout = 30s, .max_attempts = 1},
//       {.path_prefix = "/v1/search", .attempt_timeout = 200ms},
//   };
struct RoutePolicy {
  // Starts with "/". Matches whole segments: "/v1/reports" holds
  // "/v1/reports", "/v1/reports/2026" and "/v1/reports?year=2026", not
  // "/v1/reportsX"; one ending in "/" holds whatever follows it; no query
  // or fragment. Of the routes that hold a call's path, as the caller sent
  // it (byte for byte, before call middleware; a redirect keeps the call's
  // route), the longest prefix is the call's.
  std::string path_prefix;
  // In place of Settings::timeout, attempt_timeout and max_attempts, with
  // their checks.
  std::optional<Duration> timeout;
  std::optional<Duration> attempt_timeout;
  std::optional<int> max_attempts;
  // In place of Settings::classify; empty: the client's.
  Classify classify;
};

struct Settings {
  // The dependency: its scheme, host and port are the only origin the
  // client sends to. Valid: an absolute http or https URL with a host and
  // no user info, query or fragment. Check: CheckBaseUrl. No default.
  std::string base_url;

  // Set for https, empty for plain http. Check: CheckTls.
  std::optional<TlsSettings> tls;

  // Bounds a whole call: every attempt, the waits, and the body.
  // Default 10s. Valid: positive. Check: CheckTimeout.
  Duration timeout = std::chrono::seconds(10);

  // Bounds one attempt from when it is handed to a connection (dialling
  // included; time queued in the client's own FIFO, waiting for a
  // connection, is not the dependency's and does not count: Timeout bounds
  // it) to the response's headers; for a streamed request body
  // (StreamBodyFrom), from when the whole body has been sent, however long
  // that took (the call's Timeout bounds the sending); a buffered body
  // over 64 KiB pauses it while it goes. Default 5s. Valid: positive.
  Duration attempt_timeout = std::chrono::seconds(5);

  // Attempts of one request, the first included. Default 3. Valid: >= 1.
  int max_attempts = 3;

  // Full-jitter backoff: after attempt n, a wait in
  // [0, min(backoff_max, backoff_base * 2^(n-1))). Defaults 100ms and 5s.
  // Valid: positive, and backoff_max >= backoff_base.
  Duration backoff_base = std::chrono::milliseconds(100);
  Duration backoff_max = std::chrono::seconds(5);

  // Limits the retries of every call together (gRFC A6).
  retry::BudgetConfig retry_budget;

  // The dependency's circuit breaker, and when it opens and closes (code).
  circuit::Config breaker;
  circuit::Policy breaker_policy = circuit::DefaultPolicy();

  // What each attempt's result means. Default: DefaultClassify.
  Classify classify = DefaultClassify;

  // A response body larger than this fails the call with
  // kResponseTooLarge. Default 64 MiB. Valid: positive.
  std::size_t max_response_bytes = 64 * 1024 * 1024;
  // The same for an error answer's body (status 400 and above): an error
  // page need not be allowed what a download is. The smaller of the two
  // applies. Default 1 MiB. Valid: positive. Check: CheckMaxResponseBytes.
  std::size_t max_error_response_bytes = 1024 * 1024;

  // Asks for compressed answers: each request carries `Accept-Encoding:
  // gzip` (unless it sets its own Accept-Encoding, whose answers are then
  // left as they come), and a gzip-coded body is decoded as it arrives.
  // max_response_bytes bounds the decoded body, so a small body that
  // inflates past it (a bomb) fails with kResponseTooLarge having held no
  // more than the limit. Response::headers stay as the server sent them
  // (Content-Encoding: gzip, the coded Content-Length). Default off.
  bool gzip = false;

  // For an http base_url: speak HTTP/2 from the first byte (prior
  // knowledge, RFC 9113 §3.3, "h2c"), as gRPC servers and sidecar proxies
  // listening without TLS expect, instead of HTTP/1.1. No upgrade is
  // tried: a server that speaks only HTTP/1.1 fails the attempt. With
  // https, ALPN chooses and this must stay off. Default off.
  bool http2_prior_knowledge = false;

  // Connections kept to the origin, busy or idle; also how many attempts
  // are handed to the transport at once on HTTP/1.1 (more wait in the
  // client's own FIFO queue). Default 100. Valid: 1 to 10000.
  int max_connections = 100;

  // A connection's maximum age, counted from when it became usable, on the
  // Runtime's clock, each connection's drawn within ±10 % of it from the
  // Runtime's random (kMaxConnectionAgeJitter) so a fleet's connections do
  // not all recycle together. A connection past its age is drained: it
  // takes no new attempt, those on it finish, it closes once idle, and the
  // next attempts go to a new connection; no attempt fails or is sent
  // again because of it. It moves load to the replicas behind a name even
  // when the server never sends GOAWAY (Envoy's max_connection_duration;
  // gRPC's MAX_CONNECTION_AGE is the server-side twin). Empty (the
  // default): a connection lives until it fails, the server ends it, or
  // the client has been idle 90 s. Valid: positive. Check:
  // CheckMaxConnectionAge.
  std::optional<Duration> max_connection_age;

  // Empty (the default): one dependency, one connection (HTTP/2) to
  // whichever of the host's addresses answered first, as long as it
  // lives. Check: CheckBalancing.
  std::optional<Balancing> balancing;

  // Told of every attempt and every change of the breaker's state, in
  // this order. Tracing, metrics and logs do not need one: they go through
  // the Runtime's telemetry. Optional; none may be null.
  std::vector<std::shared_ptr<Observer>> observers;

  // The user's own layers (outbound/http/middleware.h), each level run in
  // the order given: call middleware once per call, above the redirects
  // and retries; attempt middleware once per attempt the breaker admitted.
  // Code, not sourced; none may be null.
  std::vector<std::shared_ptr<CallMiddleware>> call_middleware;
  std::vector<std::shared_ptr<AttemptMiddleware>> attempt_middleware;

  // Empty (the default): calls are not limited. Check: CheckRateLimit.
  std::optional<RateLimit> rate_limit;

  // Empty (the default): no bound on calls in flight. Check: CheckBulkhead.
  std::optional<Bulkhead> bulkhead;

  // Empty (the default): no adaptive limit on calls in flight. Check:
  // CheckAdaptiveConcurrency.
  std::optional<AdaptiveConcurrency> adaptive_concurrency;

  // Empty (the default): no hedges, and no timer armed. Check:
  // CheckHedging; Validate also refuses it beside a max_attempts of 1 that
  // no route raises (a hedge is one of the call's attempts).
  std::optional<Hedging> hedging;

  // Policies of their own for the calls under some paths (RoutePolicy);
  // every other call has the settings above. No two with one prefix.
  // Code, not sourced. Check: CheckRoutes.
  std::vector<RoutePolicy> routes;

  // Failure injection: off by default.
  FaultSettings faults;

  // One debug-level log record per attempt through the Runtime's telemetry:
  // "HTTP request completed" (method, URL, status, duration) or "HTTP request
  // failed" (method, URL, duration, error.type). Never a header or a body.
  // Default off.
  bool request_logging = false;
};

// A connection's age is drawn from max_connection_age × [1 - this, 1 + this).
inline constexpr double kMaxConnectionAgeJitter = 0.1;

// The defaults; base_url is empty, which CheckBaseUrl rejects.
Settings DefaultSettings();

// One check per sourced field. Each says what is wrong without naming it.
[[nodiscard]] Result<void> CheckBaseUrl(const std::string& url);
[[nodiscard]] Result<void> CheckBalancing(const std::optional<Balancing>& balancing);
[[nodiscard]] Result<void> CheckTls(const std::optional<TlsSettings>& tls);
[[nodiscard]] Result<void> CheckTimeout(Duration timeout);
[[nodiscard]] Result<void> CheckAttemptTimeout(Duration attempt_timeout);
[[nodiscard]] Result<void> CheckMaxAttempts(int max_attempts);
// Names each wrong field of each route and why ("[1].timeout: must be
// positive; [3].path_prefix: must start with '/' (\"v1\")").
[[nodiscard]] Result<void> CheckRoutes(const std::vector<RoutePolicy>& routes);
[[nodiscard]] Result<void> CheckBackoffBase(Duration backoff_base);
[[nodiscard]] Result<void> CheckBackoffMax(Duration backoff_max);
[[nodiscard]] Result<void> CheckMaxResponseBytes(std::size_t bytes);
[[nodiscard]] Result<void> CheckMaxConnections(int n);
[[nodiscard]] Result<void> CheckMaxConnectionAge(const std::optional<Duration>& age);
[[nodiscard]] Result<void> CheckRateLimit(const std::optional<RateLimit>& limit);
[[nodiscard]] Result<void> CheckBulkhead(const std::optional<Bulkhead>& bulkhead);
[[nodiscard]] Result<void> CheckAdaptiveConcurrency(
    const std::optional<AdaptiveConcurrency>& adaptive);
[[nodiscard]] Result<void> CheckHedging(const std::optional<Hedging>& hedging);
// The retry budget's and breaker's checks are retry::CheckMaxTokens,
// retry::CheckTokenRatio, circuit::CheckWindow, circuit::CheckProbes,
// circuit::CheckOpenFor, circuit::CheckProbeTimeout,
// circuit::CheckInitialOpenFor, circuit::CheckCallsPerProbe and
// circuit::CheckSlowCall.

// Every check, and the rules on two fields: backoff_max >= backoff_base, TLS
// set exactly when base_url is https, classify and both policy functions
// set. One kInvalidSettings error naming every bad field, e.g.
// "Settings.tls must be set for an https Settings.base_url; Settings.max_attempts: must be 1 or
// more".
[[nodiscard]] Result<void> Validate(const Settings& settings);

}  // namespace outbound::http

#endif  // OUTBOUND_HTTP_SETTINGS_H_
