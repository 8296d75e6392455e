// SPDX-License-Identifier: Apache-2.0
// The layers the client's call path is made of, each in a file of its
// name, and what they share. A call goes down the call layers, then each
// of its attempts down the attempt layers, in the order Client::Create
// (client.cc) writes once:
//
//   call:    call middleware → bulkhead → rate limit → adaptive concurrency
//            → redirects → retry loop
//   attempt: attempt span → breaker → outlier detection → classify
//            → attempt middleware → attempt timeout → fault injection
//            → transport
//
// Everything is asynchronous: a layer starts the next one and is called
// back on whichever thread moves the call on (the caller's, the client's
// event loop, the clock's timer thread, or the thread that cancels it:
// docs/internals.md, "Which thread runs what"). Internal.
#ifndef OUTBOUND_SRC_HTTP_LAYERS_H_
#define OUTBOUND_SRC_HTTP_LAYERS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "attempt.h"
#include "call.h"
#include "client_telemetry.h"
#include "hedge_budget.h"
#include "origin.h"
#include "outbound/circuit/breaker.h"
#include "outbound/http/classify.h"
#include "outbound/http/middleware.h"
#include "outbound/http/settings.h"
#include "outbound/random.h"
#include "outbound/retry/retrier.h"
#include "routes.h"

namespace outbound::http::internal {

// Retries of attempts the server did not process (a refused stream),
// earned by the client's answered attempts: each attempt that got a
// response earns one, up to kMax; each such retry spends one. While the
// dependency answers, a refusal of some streams costs no retry budget and
// no MaxAttempts; a dependency that refuses everything earns nothing, and
// its refusals fall to the retry budget like any retry. Thread-safe.
class TransparentRetries {
 public:
  static constexpr int kMax = 10;
  void Earn() {
    int now = tokens_.load(std::memory_order_relaxed);
    while (now < kMax && !tokens_.compare_exchange_weak(now, now + 1, std::memory_order_relaxed)) {
    }
  }
  bool TrySpend() {
    int now = tokens_.load(std::memory_order_relaxed);
    while (now > 0 && !tokens_.compare_exchange_weak(now, now - 1, std::memory_order_relaxed)) {
    }
    return now > 0;
  }

 private:
  std::atomic<int> tokens_{0};
};

// The call layers, top to bottom.

// The user's call middleware, in order, above the redirects: each sees the
// call once. A request one changed is checked again against `origin`.
std::unique_ptr<CallLayer> MakeCallMiddleware(
    const Origin& origin, std::vector<std::shared_ptr<CallMiddleware>> middleware);

// The bulkhead: a bound on calls in flight, with a short queue timed on
// `clock`.
std::unique_ptr<CallLayer> MakeBulkhead(Clock& clock, Bulkhead bulkhead);

// The outbound rate limit: one token per call, waited for on `clock`;
// none while `limit` is empty. Switchable while calls go (thread-safe).
class RateLimitLayer : public CallLayer {
 public:
  virtual void Set(std::optional<RateLimit> limit) = 0;
  virtual std::optional<RateLimit> limit() const = 0;
};
std::unique_ptr<RateLimitLayer> MakeRateLimit(Clock& clock, std::optional<RateLimit> limit);

// Adaptive concurrency: a limit on calls in flight that follows the
// latency of their answers, on `clock`; its gauge through `telemetry`,
// which outlives the layer. Below the bulkhead's and rate limit's waits,
// so a sample is the dependency's time, not theirs.
std::unique_ptr<CallLayer> MakeAdaptiveConcurrency(Clock& clock, AdaptiveConcurrency settings,
                                                   const ClientTelemetry& telemetry);

// Follows redirects within `origin`, up to 10, each a request of its own.
std::unique_ptr<CallLayer> MakeRedirects(const Origin& origin);

// The attempts of one request: retried while safe, allowed and worth it.
struct RetryLoopOptions {
  Clock* clock;
  Random* random;
  // Told of every attempt's record as the loop decides what follows it.
  std::function<void(const AttemptRecord&)> on_attempt;
  const ClientTelemetry* telemetry;
  TransparentRetries* transparent = nullptr;  // the client's; outlives the loop
  HedgeBudget* hedging = nullptr;             // the client's when hedging is on; outlives the loop
};
// The last call layer: it starts each attempt down `attempts`, which
// outlives it, as many as the call's route's retrier allows.
std::unique_ptr<CallLayer> MakeRetryLoop(const AttemptPath& attempts, RetryLoopOptions options);

// The attempt layers, top to bottom; the transport (transport/pool.h) is
// the last.

// Times each attempt and fills its record; records its span and metrics
// through `telemetry`, which outlives the layer, with the time it waited
// for a connection (a slot, from the kSent event).
std::unique_ptr<AttemptLayer> MakeAttemptSpan(AttemptSlots& slots,
                                              const ClientTelemetry& telemetry);

// Admits the attempt through the breaker or rejects it (nothing sent);
// settles the breaker's ticket with what the classify layer decided, but
// for a failure outlier detection took for its endpoint's. With the
// breaker's slow-call rule on, it counts an attempt whose headers are
// late as a failure then (a timer in its slot).
std::unique_ptr<AttemptLayer> MakeBreakerLayer(AttemptSlots& slots, circuit::Breaker& breaker,
                                               Clock& clock, const ClientTelemetry& telemetry);

// With several endpoints (Settings::balancing): reports each attempt's
// outcome, as the classify layer below decided it, to the endpoint that
// carried it (ejecting one that keeps failing, logged and counted through
// `telemetry`), and marks a failure its endpoint's ejection takes.
std::unique_ptr<AttemptLayer> MakeOutlierDetection(const ClientTelemetry& telemetry);

// Decides what each outcome means (AttemptOutcome::classification): the
// client's own rules first (a cancel, a rejection, this process's own
// failure, a loss already counted), then the call's route's classify.
std::unique_ptr<AttemptLayer> MakeClassifyLayer();

// The user's attempt middleware, in order, below the breaker: each sees
// every admitted attempt. A request one changed is checked again, and one
// on another origin is refused.
std::unique_ptr<AttemptLayer> MakeAttemptMiddleware(
    const Origin& origin, std::vector<std::shared_ptr<AttemptMiddleware>> middleware);

// Cancels the attempt (kDeadline) if its headers have not arrived within
// its call's route's attempt timeout of the dependency owing them (a timer
// in its slot, armed when the attempt is sent); an attempt whose route has
// none passes. `routes` outlive the layer.
std::unique_ptr<AttemptLayer> MakeAttemptTimeout(AttemptSlots& slots, Clock& clock,
                                                 const Routes& routes);

// The answer an injected "status:NNN[,retry-after:S]" gives, as the front
// end's protocol says it: HTTP's is a response of that status with a
// Retry-After header.
using InjectedAnswer =
    std::function<Response(int status, std::optional<std::uint32_t> retry_after_seconds)>;

// The client's failure injection switches, in one byte so that a call
// reads them whole with one relaxed load (Client::SetFaults).
inline constexpr std::uint8_t kFaultsOn = 1;       // FaultSettings::enabled
inline constexpr std::uint8_t kFaultsForward = 2;  // FaultSettings::forward_scenario

// Failure injection: aborts, delays or answers the attempts of calls whose
// scenario names this client (CallState::fault), below the attempt timeout.
// An empty `answer`: HTTP's. Every client has it, since faults can be
// switched on while calls go: a call whose client's faults were off when
// it started carries no fault, and its attempts pass with one test of an
// optional. It is not active() while `switches` (the client's, which
// outlives it) says off.
std::unique_ptr<AttemptLayer> MakeFaultInjection(Clock& clock, Random& random,
                                                 InjectedAnswer answer,
                                                 const std::atomic<std::uint8_t>& switches);

// The last attempt layer: hands each attempt to `transport` as an exchange
// (client_transport.h), which ends it.
std::unique_ptr<AttemptLayer> MakeTransportLayer(std::unique_ptr<ClientTransport> transport);

// Whether a request may reach the server twice, as far as its meaning goes
// (whether its body can be sent again is each attempt's question): as its
// front end says, or by HTTP's rule, an idempotent method (RFC 9110) or an
// idempotency key.
bool Idempotent(const CallRequest& request);

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_LAYERS_H_
