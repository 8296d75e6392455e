// SPDX-License-Identifier: Apache-2.0
// The models are on every attempt's path: they must cost nanoseconds and
// allocate nothing. Each benchmark reports allocs/op, counted by replacing
// the global operator new in this binary.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "outbound/circuit/breaker.h"
#include "outbound/random.h"
#include "outbound/retry/budget.h"
#include "outbound/retry/retrier.h"
#include "outbound/telemetry/metric_store.h"

namespace {
std::atomic<long> g_allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace outbound {
namespace {

// Reports heap allocations per iteration over the timed loop.
class AllocationCounter {
 public:
  explicit AllocationCounter(benchmark::State& state)
      : state_(state), start_(g_allocations.load()) {}
  ~AllocationCounter() {
    state_.counters["allocs/op"] = benchmark::Counter(
        static_cast<double>(g_allocations.load() - start_), benchmark::Counter::kAvgIterations);
  }

 private:
  benchmark::State& state_;
  long start_;
};

circuit::Breaker& SharedBreaker() {
  static circuit::Breaker breaker(circuit::Config{}, circuit::DefaultPolicy(),
                                  [](const circuit::Transition&) {});
  return breaker;
}

void BM_BreakerAllowSettle(benchmark::State& state) {
  circuit::Breaker& breaker = SharedBreaker();
  TimePoint now{};
  AllocationCounter count(state);
  for (auto _ : state) {
    auto ticket = breaker.Allow(now);
    ticket->Settle(circuit::Outcome::kSuccess, now);
  }
}
BENCHMARK(BM_BreakerAllowSettle)->Threads(1)->Threads(2);

retry::Budget& SharedBudget() {
  static retry::Budget budget(retry::BudgetConfig{});
  return budget;
}

void BM_BudgetTakeRefund(benchmark::State& state) {
  retry::Budget& budget = SharedBudget();
  AllocationCounter count(state);
  for (auto _ : state) {
    budget.OnRetryable();
    benchmark::DoNotOptimize(budget.AllowRetry());
    budget.OnSuccess();
  }
}
BENCHMARK(BM_BudgetTakeRefund)->Threads(1)->Threads(2);

void BM_BackoffDraw(benchmark::State& state) {
  retry::Exponential backoff(std::chrono::milliseconds(100), std::chrono::seconds(5));
  Random& random = DefaultRandom();
  int attempt = 0;
  AllocationCounter count(state);
  for (auto _ : state) {
    benchmark::DoNotOptimize(backoff.Wait(attempt++ % 10 + 1, random.Uniform()));
  }
}
BENCHMARK(BM_BackoffDraw)->Threads(1)->Threads(2);

void BM_RetryLoopOneSuccessfulCall(benchmark::State& state) {
  retry::Retrier retrier(retry::Policy{}, SharedBudget());
  TimePoint now{};
  AllocationCounter count(state);
  for (auto _ : state) {
    retry::Loop loop = retrier.Start(now + std::chrono::seconds(10));
    benchmark::DoNotOptimize(loop.Done(retry::Outcome::kSuccess, Duration::zero(), now, 0.5));
  }
}
BENCHMARK(BM_RetryLoopOneSuccessfulCall)->Threads(1)->Threads(2);

// An attempt's metrics once its attribute set has been seen: what every
// attempt pays with metrics on. Must allocate nothing.
telemetry::MetricStore& SharedMetrics() {
  static telemetry::MetricStore metrics;
  return metrics;
}

void BM_MetricsOneAttempt(benchmark::State& state) {
  static auto duration = SharedMetrics().CreateHistogram(
      {"outbound.http", "http.client.request.duration", "s", ""}, telemetry::kDurationBuckets);
  static auto calls =
      SharedMetrics().CreateCounter({"outbound.http", "outbound.circuit.calls", "{call}", ""});
  const telemetry::KeyValue attempt[] = {{"http.request.method", "GET"},
                                         {"server.address", "payments"},
                                         {"server.port", std::int64_t{8443}},
                                         {"url.scheme", "https"},
                                         {"http.response.status_code", std::int64_t{200}},
                                         {"network.protocol.version", "2"}};
  const telemetry::KeyValue counted[] = {
      {"server.address", "payments"}, {"server.port", std::int64_t{8443}}, {"outcome", "success"}};
  duration->Record(0.001, attempt);  // warm: the series exist
  calls->Add(1, counted);
  AllocationCounter count(state);
  for (auto _ : state) {
    duration->Record(0.001, attempt);
    calls->Add(1, counted);
  }
}
BENCHMARK(BM_MetricsOneAttempt)->Threads(1)->Threads(2);

}  // namespace
}  // namespace outbound

BENCHMARK_MAIN();
