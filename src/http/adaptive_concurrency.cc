// SPDX-License-Identifier: Apache-2.0
// Adaptive concurrency: a limit on the client's calls in flight that
// follows the dependency's latency (Settings::adaptive_concurrency, whose
// comment is the contract; docs/beyond-retries.md says why a gradient).
//
// The gradient's idea: while a dependency has idle capacity, more calls in
// flight do not make its answers slower; past its capacity, each extra
// call only waits in its queue, so the latency rises in proportion. The
// ratio of the unloaded latency (the baseline) to the latency now is then
// about capacity / limit, and limit * ratio is the capacity; the headroom
// sqrt(limit) keeps a small queue, so the dependency never idles and the
// limit can find more capacity when it appears.
#include <algorithm>
#include <cmath>
#include <mutex>

#include "layers.h"

namespace outbound::http::internal {
namespace {

// The gradient's floor: the most one window takes off the limit (as much
// as a drop takes).
constexpr double kMinGradient = 0.5;
// How far each window moves the limit toward where its gradient points:
// Gradient2's smoothing, so one noisy window cannot swing the limit.
constexpr double kSmoothing = 0.2;
// Every this many sample windows of time the baseline is measured afresh
// (Envoy's periodic minRTT: 60s at the default window), so a dependency
// that became slower for good is not held to the latency it once had.
constexpr int kRelearnEvery = 600;
// Answers of calls admitted while relearning that make the new baseline.
constexpr int kRelearnSamples = 5;

class AdaptiveConcurrencyLayer final : public CallLayer {
 public:
  AdaptiveConcurrencyLayer(Clock& clock, AdaptiveConcurrency settings,
                           const ClientTelemetry& telemetry)
      : clock_(clock),
        settings_(settings),
        limit_(settings.initial_limit),
        shown_limit_(settings.initial_limit),
        window_start_(clock.Now()),
        relearn_at_(window_start_ + settings.sample_window * kRelearnEvery) {
    gauge_ = telemetry.resilience().ObserveConcurrencyLimit(
        [this] { return shown_limit_.load(std::memory_order_relaxed); });
  }

  std::string_view name() const override { return "adaptive concurrency"; }

  void Send(CallState& call) override {
    int limit = 0;
    {
      std::lock_guard lock(mu_);
      limit = relearning_ ? settings_.min_limit : static_cast<int>(limit_);
      if (in_flight_ < limit) {
        ++in_flight_;
        window_max_in_flight_ = std::max(window_max_in_flight_, in_flight_);
        call.admitted_at = clock_.Now();
        call.admitted_epoch = epoch_;
        limit = 0;
      }
    }
    // Outside the lock: the next layer may run the user's code.
    if (limit == 0) return call.Proceed(*this);
    CallOutcome outcome;
    outcome.result = Fail(ErrorKind::kRejected, "the adaptive concurrency limit is reached (" +
                                                    std::to_string(limit) +
                                                    " calls in flight): nothing was sent");
    call.End(std::move(outcome));
  }

  bool Finish(CallState& call, CallOutcome& outcome) override {
    TimePoint now = clock_.Now();
    Signal signal = SignalOf(call, outcome);
    std::lock_guard lock(mu_);
    --in_flight_;
    if (relearning_) {
      // Only answers of calls admitted while relearning: the others were
      // sent into the load the relearning waits out.
      if (signal != Signal::kAnswer || call.admitted_epoch != epoch_) return true;
      relearn_sum_ += Seconds(now - call.admitted_at);
      if (++relearn_count_ < kRelearnSamples) return true;
      baseline_ = relearn_sum_ / relearn_count_;
      relearning_ = false;
      shown_limit_.store(std::floor(limit_), std::memory_order_relaxed);
      StartWindow(now);
      return true;
    }
    if (signal == Signal::kNone) return true;
    if (signal == Signal::kDrop) {
      dropped_ = true;
    } else {
      window_sum_ += Seconds(now - call.admitted_at);
      ++window_count_;
    }
    if (now - window_start_ >= settings_.sample_window) CloseWindow(now);
    return true;
  }

 private:
  enum class Signal { kNone, kAnswer, kDrop };

  static double Seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

  // What a call's end says of the dependency's load: an answer without a
  // retry is a latency sample (a hedge is no retry: it was sent beside a
  // slow attempt, not after a failed one, and the answer's time is the
  // call's; nor is a redirect followed, though its answer's time is not
  // one request's, nor an attempt a retired connection left out); a
  // timeout, a lost connection or a retry (an attempt failed) is a drop; a
  // rejection, a cancel, or an error of this process says nothing.
  static Signal SignalOf(const CallState& call, const CallOutcome& outcome) {
    int sent = call.attempts_sent.load();
    int retries = sent - call.hedges_sent.load() - call.redirects - call.retired_resends.load();
    if (retries > 1) return Signal::kDrop;
    if (outcome.result) return call.redirects == 0 ? Signal::kAnswer : Signal::kNone;
    ErrorKind kind = outcome.result.error().kind();
    bool lost = kind == ErrorKind::kDeadline || kind == ErrorKind::kTransport;
    return lost && sent >= 1 ? Signal::kDrop : Signal::kNone;
  }

  void StartWindow(TimePoint now) {
    window_start_ = now;
    window_sum_ = 0;
    window_count_ = 0;
    dropped_ = false;
    window_max_in_flight_ = in_flight_;
  }

  void CloseWindow(TimePoint now) {
    double limit = limit_;
    if (dropped_) {
      limit *= kMinGradient;
    } else if (window_count_ > 0) {
      double latency = window_sum_ / window_count_;
      if (baseline_ <= 0 || latency < baseline_) baseline_ = latency;
      double gradient = std::clamp(baseline_ / latency, kMinGradient, 1.0);
      double target = limit * gradient + std::sqrt(limit);
      // A limit the calls did not come near says nothing of what more the
      // dependency could take: it does not grow (Gradient2's app-limited rule).
      if (window_max_in_flight_ * 2 < limit) target = std::min(target, limit);
      limit = (1 - kSmoothing) * limit + kSmoothing * target;
    }
    limit_ = std::clamp(limit, static_cast<double>(settings_.min_limit),
                        static_cast<double>(settings_.max_limit));
    shown_limit_.store(std::floor(limit_), std::memory_order_relaxed);
    StartWindow(now);
    if (now >= relearn_at_) {
      relearn_at_ = now + settings_.sample_window * kRelearnEvery;
      relearning_ = true;
      shown_limit_.store(settings_.min_limit, std::memory_order_relaxed);
      ++epoch_;
      relearn_sum_ = 0;
      relearn_count_ = 0;
    }
  }

  Clock& clock_;
  const AdaptiveConcurrency settings_;
  std::mutex mu_;
  double limit_;       // guarded by mu_
  int in_flight_ = 0;  // guarded by mu_
  // The limit as the gauge shows it, read without the lock.
  std::atomic<double> shown_limit_;
  // The window now: its start, and its samples' latencies (in seconds).
  TimePoint window_start_;
  double window_sum_ = 0;
  int window_count_ = 0;
  bool dropped_ = false;
  int window_max_in_flight_ = 0;
  double baseline_ = 0;   // seconds; 0 until the first window
  TimePoint relearn_at_;  // when the baseline is next measured afresh
  // Relearning the baseline: calls are held to min_limit, and the answers
  // of those admitted in this epoch make the new baseline.
  bool relearning_ = false;
  std::uint32_t epoch_ = 0;
  double relearn_sum_ = 0;
  int relearn_count_ = 0;
  // Last: it reads shown_limit_ until it is gone.
  std::unique_ptr<telemetry::GaugeRegistration> gauge_;
};

}  // namespace

std::unique_ptr<CallLayer> MakeAdaptiveConcurrency(Clock& clock, AdaptiveConcurrency settings,
                                                   const ClientTelemetry& telemetry) {
  return std::make_unique<AdaptiveConcurrencyLayer>(clock, settings, telemetry);
}

}  // namespace outbound::http::internal
