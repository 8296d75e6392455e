// SPDX-License-Identifier: Apache-2.0
// The classify layer: what each attempt's outcome means, decided once for
// every layer above it (the outlier detection, the breaker, the retry
// loop): whether to retry and what the breaker counts. What the client
// knows itself comes first (a cancel, a rejection, this process's own
// failure, a request that failed a connection twice, a loss already
// counted); the call's route's classify decides the rest.
#include <array>
#include <mutex>

#include "layers.h"

namespace outbound::http::internal {
namespace {

class ClassifyLayer final : public AttemptLayer {
 public:
  std::string_view name() const override { return "classify"; }

  void Start(Attempt& attempt) override { attempt.Proceed(*this); }

  void Finish(Attempt& attempt, AttemptOutcome& outcome) override {
    // The breaker opened while the attempt waited to be sent: the transport
    // sent nothing.
    outcome.rejected = !outcome.result && outcome.result.error().kind() == ErrorKind::kRejected;
    try {
      outcome.classification = Decide(attempt, outcome);
    } catch (...) {
      // The user's classify threw: no classification, so nothing is
      // counted; the response is dropped, and the exception goes up to the
      // caller, unless the user's code threw first (a body sink): the
      // first throw is the one the caller hears.
      if (!outcome.thrown) {
        outcome.thrown = std::current_exception();
        outcome.classify_threw = true;
        outcome.result = Fail(ErrorKind::kTransport, "classify threw");
      }
    }
  }

 private:
  Classification Decide(const Attempt& attempt, AttemptOutcome& outcome) {
    using retry::Outcome;
    constexpr auto kIgnored = circuit::Outcome::kIgnored;
    constexpr auto kFailure = circuit::Outcome::kFailure;
    if (!outcome.result) {
      ErrorKind kind = outcome.result.error().kind();
      if (attempt.call->cancelled() || kind == ErrorKind::kCancelled) {
        return {Outcome::kStop, {}, kIgnored};
      }
      if (outcome.rejected) return {Outcome::kStop, {}, kIgnored};
      // This process's own shortage, the caller's own limit, or its body
      // reader's failure: nothing about the dependency's health.
      if (kind == ErrorKind::kLocalResource || kind == ErrorKind::kResponseTooLarge ||
          kind == ErrorKind::kInvalidRequest) {
        return {Outcome::kStop, {}, kIgnored};
      }
      // Never handed to a connection: it waited in the client's own queue.
      // A middleware's own failure stands for a sent attempt's, but for
      // its own deadline or refusal (a local quota), which say nothing of
      // the dependency.
      bool own_limit = kind == ErrorKind::kDeadline || kind == ErrorKind::kRejected;
      if (!attempt.sent() && (!outcome.answered_by_middleware || own_limit)) {
        return {Outcome::kStop, {}, kIgnored};
      }
      if (attempt.call->deadline_passed()) return {Outcome::kStop, {}, kFailure};
      // The request the server met as it failed a connection, a second
      // time: taken for the cause, not sent again (it would end the next
      // connection and the calls on it), and not the dependency's failure.
      if (outcome.met_connection_failure &&
          attempt.call->met_connection_failure.exchange(true, std::memory_order_relaxed)) {
        outcome.unprocessed = outcome.connection_retired = false;
        outcome.result =
            Fail(ErrorKind::kInvalidRequest,
                 outcome.result.error().message() +
                     ", as on a connection before: taken for its cause, not sent again");
        return {Outcome::kStop, {}, kIgnored};
      }
      if (outcome.unprocessed) return {Outcome::kRetry, {}, kIgnored};
      // Lost with its connection when another attempt already counted
      // that loss, or with a kept-alive connection the server closed.
      if (outcome.connection_lost &&
          (outcome.kept_alive_closed || !FirstLossOf(outcome.connection))) {
        // Counted once; final if no connection would fare better.
        if (outcome.cannot_improve) return {Outcome::kStop, {}, kIgnored};
        outcome.collateral = true;
        return {Outcome::kRetry, {}, kIgnored};
      }
      if (outcome.cannot_improve) return {Outcome::kStop, {}, kFailure};
      // The dependency sent its headers and then failed.
      if (outcome.body_failed) return {Outcome::kStop, {}, kFailure};
    }
    const CallRequest& sent = *attempt.request;
    Classification c = attempt.call->policy->classify(
        {sent.method, sent.url, sent.headers, attempt.call->body_sink != nullptr}, outcome.result);
    // The caller has part of this answer already: no other can follow it
    // (a success stays one, for the retry budget and the record).
    if (outcome.body_streamed && c.retry == Outcome::kRetry) c.retry = Outcome::kStop;
    return c;
  }

  // Whether `connection`'s loss is heard of for the first time: the
  // attempts it took down with it count once.
  bool FirstLossOf(std::uint64_t connection) {
    if (connection == 0) return true;
    std::lock_guard lock(lost_mu_);
    for (std::uint64_t seen : lost_) {
      if (seen == connection) return false;
    }
    lost_[next_lost_++ % lost_.size()] = connection;
    return true;
  }

  // The connections whose loss was counted lately (a few suffice: the
  // attempts a connection takes down end together).
  std::mutex lost_mu_;
  std::array<std::uint64_t, 32> lost_{};
  std::size_t next_lost_ = 0;
};

}  // namespace

std::unique_ptr<AttemptLayer> MakeClassifyLayer() { return std::make_unique<ClassifyLayer>(); }

}  // namespace outbound::http::internal
