// SPDX-License-Identifier: Apache-2.0
//
// The usage examples of outbound::core's public headers (clock.h,
// context.h, error.h, random.h, runtime.h, circuit/, retry/, internal/),
// compiled: each header quotes the region its `// example:` line names,
// and scripts/check-doc-examples keeps the two equal.
#include <chrono>
#include <future>

#include "outbound/circuit/breaker.h"
#include "outbound/clock.h"
#include "outbound/context.h"
#include "outbound/error.h"
#include "outbound/http/client.h"
#include "outbound/internal/timeout_list.h"
#include "outbound/random.h"
#include "outbound/retry/backoff.h"
#include "outbound/retry/budget.h"
#include "outbound/retry/retrier.h"
#include "outbound/runtime.h"
#include "outbound/testing/manual_clock.h"
#include "outbound/testing/network_map.h"

namespace outbound::examples {

using namespace std::chrono_literals;
using http::Request;
using http::Response;

void ClockTimer(Clock& clock, CancelSource& attempt) {
  // [example clock]
  Timer timeout = clock.ScheduleAfter(5s, [&] { attempt.Cancel(); });
  // ... the headers arrived first:
  timeout.Cancel();  // or let `timeout` go out of scope
  // [end clock]
}

std::future<Result<Response>> ContextCancel(Clock& clock, http::Sender& payments) {
  // [example context]
  CancelSource cancel;
  Context ctx{.deadline = clock.Now() + 2s, .cancel = cancel.token()};
  auto call = payments.SendAsync(http::Request::Get("/charges/1").WithContext(ctx));
  cancel.Cancel();  // the call ends with ErrorKind::kCancelled
  // [end context]
  return call;
}

int Unavailable(std::optional<Duration> retry_after) { return retry_after ? 75 : 69; }

int ErrorKinds(http::Sender& payments, Request request) {
  // [example error]
  Result<Response> resp = payments.Send(std::move(request));
  if (!resp) {
    switch (resp.error().kind()) {
      case ErrorKind::kRejected:  // nothing was sent
        return Unavailable(resp.error().retry_after());
      case ErrorKind::kDeadline:  // no answer in time
        return 75;
      default:
        return 1;
    }
  }
  // [end error]
  return 0;
}

Response OrThrowCharge(http::Client* payments, Request request) {
  // [example or-throw]
  http::Response charge = OrThrow(payments->Send(std::move(request)));
  // [end or-throw]
  return charge;
}

// [example random]
class Fixed : public outbound::Random {
  double Uniform() override { return 0.5; }
};
// [end random]

Result<std::unique_ptr<http::Client>> RuntimeForATest(const http::Settings& settings) {
  // [example runtime]
  testing::ManualClock clock;
  testing::NetworkMap network;
  Runtime runtime{.clock = &clock, .network = &network};
  auto payments = http::Client::Create(runtime, settings);
  // [end runtime]
  return payments;
}

// The clock a TimeoutList's example arms its entries on.
struct TimeoutListExample {
  explicit TimeoutListExample(Clock& clock) : list(clock) {}
  internal::TimeoutList list;

  void Example(TimePoint deadline) {
    // [example timeout-list]
    struct Call : internal::TimeoutList::Entry {
      explicit Call(internal::TimeoutList& timeouts) : list(timeouts) {}
      void Expired() override {}                // on the clock's thread
      ~Call() override { list.Cancel(*this); }  // before anything Expired uses goes
      internal::TimeoutList& list;
    };
    Call call(list);
    list.Arm(call, deadline);
    // [end timeout-list]
  }
};

int Rejected(Duration retry_after) { return retry_after > 1s ? 69 : 75; }

int BreakerTicket(TimePoint now) {
  // [example breaker]
  circuit::Breaker breaker(circuit::Config{}, circuit::DefaultPolicy());
  auto ticket = breaker.Allow(now);
  if (!ticket) return Rejected(ticket.error().retry_after);
  // ... make the attempt ...
  ticket->Settle(circuit::Outcome::kFailure, now);
  // [end breaker]
  return 0;
}

Duration BackoffWait(int attempt, Random& random) {
  // [example backoff]
  retry::Exponential backoff(100ms, 5s);
  Duration wait = backoff.Wait(attempt, random.Uniform());
  // [end backoff]
  return wait;
}

bool BudgetRetry() {
  // [example budget]
  retry::Budget budget(retry::BudgetConfig{});  // {10, 0.1, 10}
  budget.OnRetryable();
  bool again = budget.AllowRetry();
  // [end budget]
  return again;
}

retry::Outcome Classify(const Result<Response>& result) {
  return result ? retry::Outcome::kSuccess : retry::Outcome::kRetry;
}

Result<Response> RetrierLoop(retry::Policy policy, retry::Budget& budget, TimePoint deadline,
                             Clock& clock, Random& random,
                             const std::function<Result<Response>()>& Attempt) {
  Duration retry_after = 0s;
  // [example retrier]
  retry::Retrier retrier(policy, budget);      // once per dependency
  retry::Loop loop = retrier.Start(deadline);  // once per call
  for (;;) {
    auto result = Attempt();
    retry::Decision d = loop.Done(Classify(result), retry_after, clock.Now(), random.Uniform());
    if (d.kind != retry::DecisionKind::kAgain) return result;
    SleepUntil(clock, clock.Now() + d.wait);
  }
  // [end retrier]
}

}  // namespace outbound::examples
