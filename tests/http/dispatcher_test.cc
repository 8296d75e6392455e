// SPDX-License-Identifier: Apache-2.0
// The dispatcher's own rules, over a scripted carrier: the FIFO (a sent
// back attempt keeps its place), the last admission check, cancellation,
// a carrier that takes no more, the idle close, the destructor, and Warm. The
// native pool under it is tested end to end (native_transport_test.cc,
// the fault matrix, the peers).
#include "../../src/http/dispatcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <string>
#include <vector>

#include "outbound/testing/manual_clock.h"

namespace outbound::http::internal {
namespace {

using namespace std::chrono_literals;

// One exchange's events: what the dispatcher told it.
class RecordedExchange final : public ExchangeEvents {
 public:
  explicit RecordedExchange(std::string called, const Admission* admission = nullptr)
      : name(std::move(called)) {
    what.request = &request;
    what.queue_place = &place;
    what.admission = admission;
  }

  bool Launch() override { return !cancelled_before; }
  bool SetCanceller(std::function<void()> c) override {
    if (cancelled_since_launch) {
      c();
      return false;
    }
    canceller = std::move(c);
    return true;
  }
  bool Sent(TimePoint) override {
    if (cancelled) return false;
    sent = true;
    return true;
  }
  void RequestBodySent(TimePoint) override {}
  void RequestHeadersSent(TimePoint) override {}
  void HeadersArrived(TimePoint) override {}
  void BodyStreaming(TimePoint) override {}
  bool End(AttemptOutcome&& o) override {
    if (outcome) return false;
    outcome = std::move(o);
    return true;
  }
  AttemptOutcome CancelledOutcome() const override {
    AttemptOutcome o;
    o.result = Fail(ErrorKind::kCancelled, "cancelled by the test");
    return o;
  }

  ErrorKind kind() const { return outcome->result.error().kind(); }

  std::string name;
  CallRequest request;
  std::uint64_t place = 0;
  ExchangeRequest what;
  bool cancelled_before = false;
  // Cancelled after Launch, before the canceller was set: as an Attempt,
  // ended at once, and its canceller runs when given.
  std::atomic<bool> cancelled_since_launch{false};
  std::function<void()> canceller;
  bool sent = false;
  std::optional<AttemptOutcome> outcome;

  // A layer above cancels it, as an Attempt is cancelled: it ends at once,
  // and its canceller (the dispatcher's) runs.
  void Cancel() {
    cancelled = true;
    End(CancelledOutcome());
    if (canceller) canceller();
  }
  bool cancelled = false;
};

// Takes what the test lets it, and records what it was asked.
class ScriptedCarrier final : public Carrier {
 public:
  explicit ScriptedCarrier(CarrierEvents& events) : dispatcher(events) {}

  std::optional<std::string> Unreachable() const override { return unreachable; }
  bool HasRoom() override { return room > 0; }
  bool Carry(transport::Exchange& exchange) override {
    --room;
    if (refuse) return false;
    carried.push_back(&exchange);
    carried_names.push_back(static_cast<RecordedExchange&>(*exchange.events).name);
    return true;
  }
  void Cancel(transport::Exchange& exchange) override { cancelled.push_back(&exchange); }
  void Resume(transport::Exchange&) override {}
  void Flush() override { ++flushes; }
  void CloseIdle(const std::string& why) override { closed_idle.push_back(why); }
  void CloseAll(const std::string& why) override { closed_all->push_back(why); }
  bool Ready() const override { return ready; }
  void Warm() override { ++warms; }

  CarrierEvents& dispatcher;
  std::optional<std::string> unreachable;
  int room = 0;
  bool refuse = false;
  std::vector<transport::Exchange*> carried;  // each freed once ended
  std::vector<std::string> carried_names;
  std::vector<transport::Exchange*> cancelled;
  int flushes = 0;
  std::vector<std::string> closed_idle;
  std::vector<std::string>* closed_all = nullptr;  // outlives the carrier
  bool ready = false;
  int warms = 0;
};

class Admits final : public Admission {
 public:
  bool StillAdmitted(TimePoint) const override { return admitted; }
  bool admitted = true;
};

class DispatcherTest : public ::testing::Test {
 protected:
  DispatcherTest() {
    dispatcher_ = std::make_unique<Dispatcher>(clock_, loop_, [&](CarrierEvents& events) {
      auto made = std::make_unique<ScriptedCarrier>(events);
      made->closed_all = &closed_all_;
      carrier_ = made.get();
      return made;
    });
    dispatcher_->CountCallsWith(live_calls_);
  }

  std::shared_ptr<RecordedExchange> Start(std::string name, const Admission* admission = nullptr) {
    auto exchange = std::make_shared<RecordedExchange>(std::move(name), admission);
    dispatcher_->Start(exchange, exchange->what);
    OnLoop([] {});  // the loop has taken it
    return exchange;
  }

  void OnLoop(const std::function<void()>& fn) { loop_->RunAndWait(fn); }

  // Room for `n` more, and the dispatcher told so.
  void MakeRoom(int n) {
    OnLoop([&] {
      carrier_->room += n;
      carrier_->dispatcher.RoomMade();
    });
  }

  // The names of the exchanges carried, in order.
  std::vector<std::string> Carried() {
    std::vector<std::string> names;
    OnLoop([&] { names = carrier_->carried_names; });
    return names;
  }

  // Asks the dispatcher to warm, with a deadline `within` from now.
  std::future<Result<void>> Warm(Duration within) {
    auto ready = std::make_shared<std::promise<Result<void>>>();
    auto warmed = ready->get_future();
    dispatcher_->Warm(clock_.Now() + within,
                      [ready](Result<void> result) { ready->set_value(std::move(result)); });
    OnLoop([] {});  // the loop has taken it
    return warmed;
  }

  static bool Settled(const std::future<Result<void>>& f) {
    return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }

  // The carrier ends an exchange it carries, as a connection would.
  void EndCarried(std::size_t index, AttemptOutcome outcome) {
    OnLoop([&] { carrier_->dispatcher.Ended(*carrier_->carried.at(index), std::move(outcome)); });
  }

  testing::ManualClock clock_;
  std::shared_ptr<EventLoop> loop_ = std::make_shared<EventLoop>();
  std::atomic<int> live_calls_{0};
  ScriptedCarrier* carrier_ = nullptr;
  std::vector<std::string> closed_all_;
  std::unique_ptr<Dispatcher> dispatcher_;
};

TEST_F(DispatcherTest, AttemptsGoOldestFirstAsRoomIsMade) {
  auto a = Start("a");
  auto b = Start("b");
  auto c = Start("c");
  EXPECT_TRUE(Carried().empty());
  EXPECT_FALSE(a->sent);
  MakeRoom(2);
  EXPECT_EQ(Carried(), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(a->sent);
  EXPECT_FALSE(c->sent);
  MakeRoom(1);
  EXPECT_EQ(Carried(), (std::vector<std::string>{"a", "b", "c"}));
}

TEST_F(DispatcherTest, AnAttemptSentBackKeepsItsPlaceAheadOfLaterOnes) {
  MakeRoom(1);
  auto first = Start("first");
  auto later = Start("later");  // waits: no room
  AttemptOutcome left_out;
  left_out.result = Fail(ErrorKind::kTransport, "GOAWAY");
  left_out.unprocessed = true;
  EndCarried(0, std::move(left_out));
  ASSERT_TRUE(first->outcome.has_value());
  // The attempt layers send it again with the place it was given.
  auto again = std::make_shared<RecordedExchange>("again");
  again->place = first->place;
  dispatcher_->Start(again, again->what);
  OnLoop([] {});
  auto last = Start("last");
  MakeRoom(3);
  EXPECT_EQ(Carried(), (std::vector<std::string>{"first", "again", "later", "last"}));
}

TEST_F(DispatcherTest, AnAttemptWhoseBreakerOpenedWhileItWaitedIsRejectedUnsent) {
  Admits breaker;
  auto a = Start("a", &breaker);
  auto b = Start("b");
  breaker.admitted = false;
  MakeRoom(2);
  ASSERT_TRUE(a->outcome.has_value());
  EXPECT_EQ(a->kind(), ErrorKind::kRejected);
  EXPECT_FALSE(a->sent);
  EXPECT_EQ(Carried(), (std::vector<std::string>{"b"}));
}

TEST_F(DispatcherTest, ACancelledAttemptLeavesTheQueueOrIsCancelledOnItsConnection) {
  MakeRoom(1);
  auto carried = Start("carried");
  auto queued = Start("queued");
  auto next = Start("next");
  queued->canceller();  // posts the cancel to the loop
  carried->canceller();
  OnLoop([] {});
  ASSERT_TRUE(queued->outcome.has_value());
  EXPECT_EQ(queued->kind(), ErrorKind::kCancelled);
  ASSERT_TRUE(carried->outcome.has_value());
  EXPECT_EQ(carried->kind(), ErrorKind::kCancelled);
  OnLoop([&] { EXPECT_EQ(carrier_->cancelled.size(), 1u); });
  MakeRoom(1);
  EXPECT_EQ(Carried(), (std::vector<std::string>{"carried", "next"}));
}

// Cancelled while it waits for room, and room comes before the loop runs
// the canceller's task: the attempt has ended (its caller was told), so
// nothing of it may be sent (a cancelled POST must not reach the server).
TEST_F(DispatcherTest, AnAttemptCancelledWhileItWaitsIsNotSentWhenRoomComesFirst) {
  auto waiting = Start("waiting");
  auto next = Start("next");
  OnLoop([&] {
    waiting->Cancel();  // on another thread, as far as the loop knows: its task comes later
    carrier_->room = 1;
    carrier_->dispatcher.RoomMade();
  });
  OnLoop([] {});  // the canceller's task
  EXPECT_EQ(Carried(), (std::vector<std::string>{"next"}));
  EXPECT_FALSE(waiting->sent);
  ASSERT_TRUE(waiting->outcome.has_value());
  EXPECT_EQ(waiting->kind(), ErrorKind::kCancelled);
  OnLoop([&] { EXPECT_TRUE(carrier_->cancelled.empty()); });
}

TEST_F(DispatcherTest, AnAttemptCancelledOnItsWayDownIsNeitherQueuedNorSent) {
  auto exchange = std::make_shared<RecordedExchange>("late");
  exchange->cancelled_before = true;
  dispatcher_->Start(exchange, exchange->what);
  ASSERT_TRUE(exchange->outcome.has_value());
  EXPECT_EQ(exchange->kind(), ErrorKind::kCancelled);
  MakeRoom(1);
  EXPECT_TRUE(Carried().empty());
}

// Start let it in, then the call was cancelled before the loop took it:
// the attempt ended then (it had no canceller yet), and the loop must not
// send it afterwards.
TEST_F(DispatcherTest, AnAttemptCancelledBeforeTheLoopTakesItIsNotSent) {
  MakeRoom(1);
  std::promise<void> release;
  loop_->Post([held = release.get_future().share()] { held.wait(); });
  auto exchange = std::make_shared<RecordedExchange>("late");
  dispatcher_->Start(exchange, exchange->what);
  exchange->cancelled_since_launch = true;
  ASSERT_TRUE(exchange->End(exchange->CancelledOutcome()));
  release.set_value();
  OnLoop([] {});
  EXPECT_TRUE(Carried().empty());
  EXPECT_EQ(exchange->kind(), ErrorKind::kCancelled);
  auto next = Start("next");
  EXPECT_EQ(Carried(), (std::vector<std::string>{"next"}));
}

TEST_F(DispatcherTest, AnAttemptAConnectionDidNotTakeIsUnprocessed) {
  OnLoop([&] { carrier_->refuse = true; });
  MakeRoom(1);
  auto a = Start("a");
  ASSERT_TRUE(a->outcome.has_value());
  EXPECT_EQ(a->kind(), ErrorKind::kTransport);
  EXPECT_TRUE(a->outcome->unprocessed);
}

// Sent, so the breaker counts it; not sent, so any method may go again, as
// after a connection to the name failed to open.
TEST_F(DispatcherTest, AnUnreachableDependencyFailsTheAttemptAsADialThatFailedWithoutQueueingIt) {
  OnLoop([&] { carrier_->unreachable = "payments:443 is not reachable on this network"; });
  auto a = Start("a");
  ASSERT_TRUE(a->outcome.has_value());
  EXPECT_EQ(a->kind(), ErrorKind::kTransport);
  EXPECT_EQ(a->outcome->result.error().message(), "payments:443 is not reachable on this network");
  EXPECT_TRUE(a->sent);
  EXPECT_TRUE(a->outcome->not_sent);
  MakeRoom(1);
  EXPECT_TRUE(Carried().empty());
}

TEST_F(DispatcherTest, IdleConnectionsCloseAfterNinetySecondsWithoutACall) {
  MakeRoom(1);
  auto a = Start("a");
  EndCarried(0, AttemptOutcome{});
  dispatcher_->ClientIdle(clock_.Now());
  OnLoop([] {});  // the idle timer is armed on the loop
  clock_.Advance(kIdleConnectionLifetime - 1ms);
  OnLoop([] {});
  OnLoop([&] { EXPECT_TRUE(carrier_->closed_idle.empty()); });
  clock_.Advance(1ms);
  OnLoop([] {});
  OnLoop([&] { EXPECT_EQ(carrier_->closed_idle, std::vector<std::string>{"idle for 90 s"}); });
}

TEST_F(DispatcherTest, ACallBeforeTheIdleTimeKeepsTheConnections) {
  dispatcher_->ClientIdle(clock_.Now());
  OnLoop([] {});
  clock_.Advance(30s);
  live_calls_ = 1;
  MakeRoom(1);
  auto a = Start("a");  // busy again: the timer is disarmed
  clock_.Advance(kIdleConnectionLifetime);
  OnLoop([] {});
  OnLoop([&] { EXPECT_TRUE(carrier_->closed_idle.empty()); });
}

TEST_F(DispatcherTest, ItsEndCancelsWhatIsLeftAndClosesEveryConnection) {
  MakeRoom(1);
  auto carried = Start("carried");
  auto queued = Start("queued");
  dispatcher_.reset();
  ASSERT_TRUE(carried->outcome.has_value());
  EXPECT_EQ(carried->kind(), ErrorKind::kCancelled);
  EXPECT_EQ(carried->outcome->result.error().message(), "the client was destroyed");
  ASSERT_TRUE(queued->outcome.has_value());
  EXPECT_EQ(queued->kind(), ErrorKind::kCancelled);
  EXPECT_EQ(closed_all_, std::vector<std::string>{"the client was destroyed"});
}

TEST_F(DispatcherTest, WarmWaitsForAConnectionAndLatchesConnected) {
  EXPECT_FALSE(dispatcher_->Connected());
  auto first = Warm(5s);
  auto second = Warm(5s);
  EXPECT_FALSE(Settled(first));
  EXPECT_EQ(carrier_->warms, 2);  // the carrier opens one unless one is opening
  OnLoop([&] {
    carrier_->ready = true;
    carrier_->dispatcher.ConnectionReady();
  });
  ASSERT_TRUE(Settled(first) && Settled(second));
  EXPECT_TRUE(first.get().has_value());
  EXPECT_TRUE(second.get().has_value());
  EXPECT_TRUE(dispatcher_->Connected());
  // Usable now: ready at once, nothing opened.
  auto again = Warm(5s);
  ASSERT_TRUE(Settled(again));
  EXPECT_TRUE(again.get().has_value());
  EXPECT_EQ(carrier_->warms, 2);
  // The connection goes: readiness is latched.
  OnLoop([&] { carrier_->ready = false; });
  EXPECT_TRUE(dispatcher_->Connected());
}

TEST_F(DispatcherTest, WarmSaysWhyNoConnectionOpened) {
  auto warmed = Warm(5s);
  OnLoop([&] {
    carrier_->dispatcher.ConnectionFailed(
        Error(ErrorKind::kTlsUntrusted, "certificate verify failed"));
  });
  ASSERT_TRUE(Settled(warmed));
  Result<void> result = warmed.get();
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().kind(), ErrorKind::kTlsUntrusted);
  EXPECT_EQ(result.error().message(), "certificate verify failed");
  EXPECT_FALSE(dispatcher_->Connected());
}

TEST_F(DispatcherTest, WarmEndsAtItsDeadlineOnTheClock) {
  auto warmed = Warm(2s);
  clock_.Advance(1999ms);
  OnLoop([] {});
  EXPECT_FALSE(Settled(warmed));
  clock_.Advance(1ms);
  OnLoop([] {});  // the timer posted its end to the loop
  ASSERT_TRUE(Settled(warmed));
  Result<void> result = warmed.get();
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().kind(), ErrorKind::kDeadline);
}

// Its end closes the connections opened for it and still idle: none
// became usable, and one still opening would hold the carrier's one
// opening slot.
TEST_F(DispatcherTest, WarmsDeadlineClosesWhatItOpenedThatIsIdle) {
  auto warmed = Warm(2s);
  clock_.Advance(2s);
  OnLoop([] {});
  ASSERT_TRUE(Settled(warmed));
  OnLoop([&] { EXPECT_EQ(carrier_->closed_idle.size(), 1u); });
}

// A connection became usable just before the deadline's task reached the
// loop: Warm succeeded, and its deadline closes nothing.
TEST_F(DispatcherTest, AWarmSettledJustBeforeItsDeadlineClosesNothing) {
  auto warmed = Warm(2s);
  std::promise<void> release;
  loop_->Post([held = release.get_future().share()] { held.wait(); });
  loop_->Post([&] {
    carrier_->ready = true;
    carrier_->dispatcher.ConnectionReady();
  });
  clock_.Advance(2s);  // the deadline's task goes to the loop behind both
  release.set_value();
  OnLoop([] {});
  ASSERT_TRUE(Settled(warmed));
  EXPECT_TRUE(warmed.get().has_value());
  OnLoop([&] { EXPECT_TRUE(carrier_->closed_idle.empty()); });
}

TEST_F(DispatcherTest, WarmToAnUnreachableDependencyFailsAtOnce) {
  OnLoop([&] { carrier_->unreachable = "payments:8443 is not reachable on this network"; });
  auto warmed = Warm(5s);
  ASSERT_TRUE(Settled(warmed));
  Result<void> result = warmed.get();
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().message(), "payments:8443 is not reachable on this network");
  EXPECT_EQ(carrier_->warms, 0);
}

TEST_F(DispatcherTest, AWarmStillWaitingWhenTheClientGoesEndsCancelled) {
  auto warmed = Warm(5s);
  dispatcher_.reset();
  ASSERT_TRUE(Settled(warmed));
  Result<void> result = warmed.get();
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().kind(), ErrorKind::kCancelled);
}

}  // namespace
}  // namespace outbound::http::internal
