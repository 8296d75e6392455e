// SPDX-License-Identifier: Apache-2.0
// Adaptive concurrency in fake time, on the kit's FakeTransport: against a
// dependency whose latency grows with the calls it holds
// (tests/testing/loaded_dependency.h), the limit settles near the
// dependency's knee, calls over it are rejected without reaching it, the
// limit grows back when the latency falls, and a timeout shrinks it.
//
// The range the limit must settle in is the design's, derived: with k
// workers and a window's latency base * limit / k past the knee, the
// gradient is k / limit and the limit moves toward k + sqrt(limit), whose
// fixed point is 25 for k = 20 (Settings::adaptive_concurrency). So the
// limit stays in [k, 1.5 k]: at or over the knee, the dependency is kept
// busy (goodput at its capacity), and at most 1.5 k in flight, its
// answers take at most 1.5 times the unloaded latency.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "../../src/http/client_peer.h"
#include "../testing/loaded_dependency.h"
#include "client_test_support.h"
#include "outbound/testing/telemetry.h"

namespace outbound::http {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;
using testing::Reply;
using testing::ServerRequest;

constexpr Duration kBase = milliseconds(10);
constexpr int kWorkers = 20;
// The dependency's capacity: kWorkers / kBase.
constexpr double kCapacityPerSecond = kWorkers / 0.010;
constexpr Duration kTick = milliseconds(1);
// Twice the capacity, offered whatever the answers: 4 calls a millisecond.
constexpr int kPerTick = 4;

class AdaptiveConcurrencyTest : public FakeTransportTestBase, public ::testing::Test {
 protected:
  AdaptiveConcurrencyTest() {
    runtime.telemetry = recorded.telemetry();
    Serve([this](const ServerRequest&) {
      auto arrival = dependency.Arrive();
      if (arrival.hang) return Reply::Hang();
      return Reply::Ok().DelayHeaders(arrival.delay);
    });
  }

  std::unique_ptr<Client> Adaptive(AdaptiveConcurrency adaptive, Duration timeout = seconds(10)) {
    Settings settings = PaymentsSettings();
    settings.adaptive_concurrency = adaptive;
    settings.timeout = timeout;
    settings.observers.clear();  // tens of thousands of calls: keep no records
    return MakeClient(std::move(settings));
  }

  testing::OpenLoad Load(Client& client) {
    return testing::OpenLoad(clock, [&client](std::function<void(bool)> ended) {
      client.SendAsync(Request::Get("/"), [ended](Result<Response> result, std::exception_ptr) {
        ended(!result && result.error().kind() == ErrorKind::kRejected);
      });
    });
  }

  double Limit() const { return recorded.Value("outbound.concurrency.limit"); }

  testing::InMemoryTelemetry recorded{DefaultRandom()};
  testing::LoadedDependency dependency{clock, kBase, kWorkers};
};

TEST_F(AdaptiveConcurrencyTest, BadSettingsAreRefusedByTheCheck) {
  EXPECT_TRUE(CheckAdaptiveConcurrency(std::nullopt));
  EXPECT_TRUE(CheckAdaptiveConcurrency(AdaptiveConcurrency{}));
  EXPECT_FALSE(CheckAdaptiveConcurrency(AdaptiveConcurrency{.min_limit = 0}));
  EXPECT_FALSE(CheckAdaptiveConcurrency(AdaptiveConcurrency{.max_limit = 100001}));
  EXPECT_FALSE(CheckAdaptiveConcurrency(AdaptiveConcurrency{.initial_limit = 5, .min_limit = 10}));
  EXPECT_FALSE(CheckAdaptiveConcurrency(AdaptiveConcurrency{.initial_limit = 50, .max_limit = 40}));
  EXPECT_FALSE(CheckAdaptiveConcurrency(AdaptiveConcurrency{.sample_window = Duration::zero()}));
  EXPECT_FALSE(
      CheckAdaptiveConcurrency(AdaptiveConcurrency{.sample_window = std::chrono::hours(1)}));
  Settings settings = PaymentsSettings();
  settings.adaptive_concurrency = AdaptiveConcurrency{.initial_limit = 0};
  auto client = Client::Create(runtime, std::move(settings));
  ASSERT_FALSE(client);
  EXPECT_EQ(client.error().message(),
            "Settings.adaptive_concurrency: initial_limit 0 must be from min_limit 1 to "
            "max_limit 1000");
}

TEST_F(AdaptiveConcurrencyTest, OffItIsNotInTheCallPath) {
  auto off = MakeClient(PaymentsSettings());
  EXPECT_THAT(internal::ClientPeer::CallLayers(*off), ::testing::Not(HasSubstr("adaptive")));
  auto on = Adaptive(AdaptiveConcurrency{});
  EXPECT_THAT(internal::ClientPeer::CallLayers(*on), HasSubstr("adaptive concurrency"));
  EXPECT_EQ(Limit(), 20);  // the initial limit, before any sample
}

TEST_F(AdaptiveConcurrencyTest, ACallOverTheLimitFailsAtOnceUnsentAndUncounted) {
  auto client = Adaptive(AdaptiveConcurrency{.initial_limit = 2, .max_limit = 2});
  auto first = client->SendAsync(Request::Get("/1"));
  auto second = client->SendAsync(Request::Get("/2"));
  auto third = client->Send(Request::Get("/3"));
  ASSERT_FALSE(third);
  EXPECT_EQ(third.error().kind(), ErrorKind::kRejected);
  EXPECT_EQ(third.error().message(),
            "payments:8443: the adaptive concurrency limit is reached (2 calls in flight): "
            "nothing was sent");
  EXPECT_EQ(server->request_count(), 2u);
  clock.Advance(kBase);
  ASSERT_TRUE(first.get());
  ASSERT_TRUE(second.get());
  EXPECT_EQ(recorded.Value("outbound.circuit.calls", {{"outcome", "rejected"}}), 0);
  EXPECT_EQ(client->breaker_state(), circuit::State::kClosed);
  auto fourth = client->SendAsync(Request::Get("/4"));  // a place is free again
  clock.Advance(kBase);
  ASSERT_TRUE(fourth.get());
  EXPECT_EQ(server->request_count(), 3u);
}

TEST_F(AdaptiveConcurrencyTest, TheLimitSettlesNearTheKneeAndHoldsTheDependencyAtItsCapacity) {
  auto client = Adaptive(AdaptiveConcurrency{.initial_limit = 10});
  testing::OpenLoad load = Load(*client);
  load.Run(3000, kPerTick, kTick);  // 3 s to settle
  dependency.TakeMaxInFlight();
  TimePoint from = clock.Now();
  std::vector<double> limits;
  int ticks = 0;
  load.Run(5000, kPerTick, kTick, [&] {
    if (++ticks % 100 == 0) limits.push_back(Limit());
  });
  TimePoint to = clock.Now();
  int held = dependency.TakeMaxInFlight();
  ASSERT_TRUE(load.Drain());

  for (double limit : limits) {
    EXPECT_GE(limit, kWorkers);
    EXPECT_LE(limit, 1.5 * kWorkers);
  }
  // Calls over the limit never reached it; it held no more than the limit.
  EXPECT_EQ(dependency.arrived() + load.rejected(), load.issued());
  EXPECT_GT(load.rejected(), load.issued() / 3);  // half the load is over its capacity
  EXPECT_LE(held, 1.5 * kWorkers);
  // Goodput at 90% of its capacity or more, and the latency near the
  // unloaded one: the measure.
  std::vector<Duration> answers = dependency.AnswersBetween(from, to);
  std::printf(
      "limit %.0f to %.0f; held at most %d; %zu answers in 5 s (capacity %.0f); p99 %lld us\n",
      *std::min_element(limits.begin(), limits.end()),
      *std::max_element(limits.begin(), limits.end()), held, answers.size(), kCapacityPerSecond * 5,
      static_cast<long long>(
          std::chrono::duration_cast<std::chrono::microseconds>(testing::Quantile(answers, 0.99))
              .count()));
  EXPECT_GE(static_cast<double>(answers.size()), 0.9 * kCapacityPerSecond * 5);
  EXPECT_LE(testing::Quantile(answers, 0.99), 2 * kBase);
  EXPECT_EQ(recorded.Value("outbound.circuit.calls", {{"outcome", "failure"}}), 0);
}

TEST_F(AdaptiveConcurrencyTest, TheLimitGrowsBackWhenTheLatencyFalls) {
  auto client = Adaptive(AdaptiveConcurrency{.initial_limit = 10});
  testing::OpenLoad load = Load(*client);
  load.Run(3000, kPerTick, kTick);
  double settled = Limit();
  EXPECT_LE(settled, 1.5 * kWorkers);
  // Three times the workers: the offered load (4 calls a ms at 10 ms each,
  // 40 in flight) is now under the capacity, and the answers are fast.
  dependency.SetWorkers(3 * kWorkers);
  load.Run(3000, kPerTick, kTick);
  int arrived = dependency.arrived();
  int issued = load.issued();
  load.Run(2000, kPerTick, kTick);
  EXPECT_GE(Limit(), 40);
  // Next to none rejected in the last 2 s.
  EXPECT_GE(dependency.arrived() - arrived, 0.99 * (load.issued() - issued));
  ASSERT_TRUE(load.Drain());
}

TEST_F(AdaptiveConcurrencyTest, ATimeoutShrinksTheLimitAndItRecovers) {
  auto client = Adaptive(AdaptiveConcurrency{.initial_limit = 10}, milliseconds(100));
  testing::OpenLoad load = Load(*client);
  load.Run(3000, kPerTick, kTick);
  double settled = Limit();
  ASSERT_GE(settled, kWorkers);
  dependency.Hang(true);  // every call from now on times out at 100 ms
  load.Run(300, kPerTick, kTick);
  EXPECT_LE(Limit(), settled / 2);
  dependency.Hang(false);
  load.Run(5000, kPerTick, kTick);
  EXPECT_GE(Limit(), kWorkers);
  EXPECT_LE(Limit(), 1.5 * kWorkers);
  ASSERT_TRUE(load.Drain());
}

// A hedge is sent beside a slow attempt, not after a failed one: a call
// its hedge (or its first attempt) answered is a latency sample, never a
// drop. Counted as drops, the few hedges of each window would halve the
// limit window after window, down to its floor, under a load well within
// the dependency's capacity.
TEST_F(AdaptiveConcurrencyTest, AHedgedCallIsALatencySampleNotADrop) {
  Settings settings = PaymentsSettings();
  settings.adaptive_concurrency = AdaptiveConcurrency{};
  settings.hedging = Hedging{.delay = milliseconds(5)};  // before every answer (10 ms)
  settings.observers.clear();
  auto client = MakeClient(std::move(settings));
  testing::OpenLoad load = Load(*client);
  load.Run(3000, 1, kTick);  // a call a ms: 10 in flight, half the workers
  ASSERT_TRUE(load.Drain());
  EXPECT_GT(
      recorded.Value("outbound.retry.decisions", {{"decision", "again"}, {"reason", "hedge"}}), 0);
  EXPECT_EQ(load.rejected(), 0);
  EXPECT_GE(Limit(), 20);  // the initial limit, or more: never halved
}

// A redirect followed is an attempt more, but no retry: the call's answer
// is a latency sample, or nothing, never a drop. Counted as drops, the
// redirected calls of each window halved the limit down to its floor,
// under a load well within the dependency's capacity.
TEST_F(AdaptiveConcurrencyTest, ARedirectedCallIsNoDrop) {
  Serve([this](const ServerRequest& r) {
    if (r.target == "/old") return Reply::Status(302).Header("Location", "/");
    return Reply::Ok().DelayHeaders(dependency.Arrive().delay);
  });
  auto client = Adaptive(AdaptiveConcurrency{});
  testing::OpenLoad load(clock, [&client](std::function<void(bool)> ended) {
    client->SendAsync(Request::Get("/old"), [ended](Result<Response> result, std::exception_ptr) {
      ended(!result && result.error().kind() == ErrorKind::kRejected);
    });
  });
  load.Run(3000, 1, kTick);  // a call a ms: 10 in flight, half the workers
  ASSERT_TRUE(load.Drain());
  EXPECT_EQ(load.rejected(), 0);
  EXPECT_GE(Limit(), 20);  // the initial limit, or more: never halved
}

// A dependency that became slower for good (three times its unloaded
// latency, the same workers) must not be held to the latency it once had:
// against the old baseline every window's gradient is at its floor, and
// the limit falls to where limit = limit / 2 + sqrt(limit), 4, a fifth of
// the knee. The baseline is measured afresh every 600 windows, after which
// the limit settles in [k, 1.5 k] again.
TEST_F(AdaptiveConcurrencyTest, ADependencySlowerForGoodIsRelearnedAndHeldAtItsKneeAgain) {
  constexpr Duration kWindow = milliseconds(20);
  auto client = Adaptive(AdaptiveConcurrency{.initial_limit = 10, .sample_window = kWindow});
  testing::OpenLoad load = Load(*client);
  load.Run(2000, kPerTick, kTick);
  EXPECT_GE(Limit(), kWorkers);
  dependency.SetBase(3 * kBase);
  load.Run(3000, kPerTick, kTick);
  EXPECT_LE(Limit(), kWorkers / 2);  // held to the old baseline
  // Past the 600th window (12 s at 20 ms, from the start), and 3 s to settle.
  load.Run(10000, kPerTick, kTick);
  std::vector<double> limits;
  int ticks = 0;
  load.Run(2000, kPerTick, kTick, [&] {
    if (++ticks % 100 == 0) limits.push_back(Limit());
  });
  for (double limit : limits) {
    EXPECT_GE(limit, kWorkers);
    EXPECT_LE(limit, 1.5 * kWorkers);
  }
  ASSERT_TRUE(load.Drain());
}

}  // namespace
}  // namespace outbound::http
