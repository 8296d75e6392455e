// SPDX-License-Identifier: Apache-2.0
// Failure injection: a call's scenario is read once per call (only when
// the client's faults are on), and its attempts aborted, delayed or
// answered below the attempt timeout, where a real dependency's failure
// would come from: every layer above sees it as real.
#include "fault.h"

#include <charconv>
#include <mutex>

#include "layers.h"

namespace outbound::http::internal {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool SameText(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

template <typename T>
bool Number(std::string_view text, T& out) {
  if (text.empty()) return false;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc() && end == text.data() + text.size();
}

std::optional<InjectedFault> ParseAction(std::string_view action) {
  InjectedFault fault;
  if (action == "abort") return fault;
  if (action.starts_with("status:")) {
    fault.kind = InjectedFault::Kind::kStatus;
    if (!Number(action.substr(7), fault.status) || fault.status < 100 || fault.status > 599) {
      return std::nullopt;
    }
    return fault;
  }
  if (action.starts_with("delay:")) {
    fault.kind = InjectedFault::Kind::kDelay;
    std::string_view amount = action.substr(6);
    std::int64_t n = 0;
    if (amount.ends_with("ms") && Number(amount.substr(0, amount.size() - 2), n) && n >= 0 &&
        n <= 3'600'000) {
      fault.delay = std::chrono::milliseconds(n);
      return fault;
    }
    if (amount.ends_with("s") && Number(amount.substr(0, amount.size() - 1), n) && n >= 0 &&
        n <= 3600) {
      fault.delay = std::chrono::seconds(n);
      return fault;
    }
  }
  return std::nullopt;
}

}  // namespace

Result<std::optional<InjectedFault>> ParseFaultScenario(std::string_view scenario,
                                                        std::string_view point) {
  std::optional<InjectedFault> found;
  auto malformed = [] { return Fail(ErrorKind::kInvalidRequest, "malformed fault scenario"); };
  if (Trim(scenario).empty()) return malformed();
  while (true) {
    std::size_t end = scenario.find(';');
    std::string_view rule = Trim(scenario.substr(0, end));
    std::size_t equals = rule.find('=');
    if (equals == std::string_view::npos) return malformed();
    std::string_view name = Trim(rule.substr(0, equals));
    std::string_view rest = Trim(rule.substr(equals + 1));
    if (!name.starts_with("http:") && !name.starts_with("grpc:")) return malformed();
    std::size_t comma = rest.find(',');
    auto fault = ParseAction(Trim(rest.substr(0, comma)));
    if (!fault) return malformed();
    // The options, each at most once: a percentage, and for a status a
    // Retry-After in whole seconds.
    bool have_percent = false;
    while (comma != std::string_view::npos) {
      rest.remove_prefix(comma + 1);
      comma = rest.find(',');
      std::string_view option = Trim(rest.substr(0, comma));
      double percent = 0;
      if (option.ends_with('%') && !have_percent &&
          Number(Trim(option.substr(0, option.size() - 1)), percent) && percent >= 0 &&
          percent <= 100) {
        have_percent = true;
        fault->probability = percent / 100;
      } else if (option.starts_with("retry-after:") &&
                 fault->kind == InjectedFault::Kind::kStatus && !fault->retry_after) {
        std::uint32_t seconds = 0;
        if (!Number(option.substr(12), seconds) || seconds > kMaxInjectedRetryAfterSeconds) {
          return malformed();
        }
        fault->retry_after = seconds;
      } else {
        return malformed();
      }
    }
    if (!found && SameText(name, point)) found = fault;
    if (end == std::string_view::npos) break;
    scenario.remove_prefix(end + 1);
  }
  return found;
}

namespace {

std::string_view Name(InjectedFault::Kind kind) {
  switch (kind) {
    case InjectedFault::Kind::kAbort:
      return "abort";
    case InjectedFault::Kind::kDelay:
      return "delay";
    case InjectedFault::Kind::kStatus:
      return "status";
  }
  return "abort";
}

class FaultInjection final : public AttemptLayer {
 public:
  FaultInjection(std::unique_ptr<AttemptLayer> next, Clock& clock, Random& random)
      : next_(std::move(next)), clock_(clock), random_(random) {}

  void Start(const std::shared_ptr<Attempt>& attempt) override {
    const std::optional<InjectedFault>& fault = attempt->call->fault;
    if (!fault || !(random_.Uniform() < fault->probability)) return next_->Start(attempt);
    if (attempt->span) {
      attempt->span->SetAttribute({"outbound.fault.injected", Name(fault->kind)});
    }
    TimePoint now = clock_.Now();
    // Sent, as far as every layer above is concerned: the attempt timeout
    // runs from here, and the breaker counts what comes back.
    AttemptOutcome outcome;
    switch (fault->kind) {
      case InjectedFault::Kind::kAbort:
        attempt->HandedOver(now);
        outcome.result = Fail(ErrorKind::kTransport, "injected fault: the attempt was aborted");
        attempt->Complete(std::move(outcome));
        return;
      case InjectedFault::Kind::kStatus: {
        attempt->HandedOver(now);
        attempt->HeadersArrived();
        Response response;
        response.status = fault->status;
        if (fault->retry_after) {
          response.headers.Add("Retry-After", std::to_string(*fault->retry_after));
        }
        response.version = "1.1";
        response.received_at = clock_.WallNow();
        outcome.result = std::move(response);
        attempt->Complete(std::move(outcome));
        return;
      }
      case InjectedFault::Kind::kDelay:
        return Delay(attempt, now + fault->delay);
    }
  }

  void Finish(Attempt&, AttemptOutcome&) override {}

 private:
  struct Delayed {
    std::mutex mu;
    Timer timer;
  };

  void Delay(const std::shared_ptr<Attempt>& attempt, TimePoint until) {
    // From here a cut (the attempt timeout, the deadline, the caller) ends
    // the attempt at once.
    if (!attempt->Launch()) {
      attempt->Complete(attempt->CutOutcome());
      return;
    }
    attempt->HandedOver(clock_.Now());
    auto delayed = std::make_shared<Delayed>();
    std::weak_ptr<Attempt> weak = attempt;
    {
      std::lock_guard lock(delayed->mu);
      delayed->timer = clock_.ScheduleAt(until, [this, weak] {
        auto live = weak.lock();
        if (live && live->cut_reason() == CutReason::kNone) next_->Start(live);
      });
    }
    attempt->SetCanceller([delayed] {
      std::lock_guard lock(delayed->mu);
      delayed->timer.Cancel();
    });
  }

  std::unique_ptr<AttemptLayer> next_;
  Clock& clock_;
  Random& random_;
};

}  // namespace

std::unique_ptr<AttemptLayer> MakeFaultInjection(std::unique_ptr<AttemptLayer> next, Clock& clock,
                                                 Random& random) {
  return std::make_unique<FaultInjection>(std::move(next), clock, random);
}

}  // namespace outbound::http::internal
