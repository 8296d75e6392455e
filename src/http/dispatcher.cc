// SPDX-License-Identifier: Apache-2.0
#include "dispatcher.h"

#include <algorithm>
#include <iterator>
#include <memory>
#include <unordered_set>

#include "body_pipe_link.h"
#include "receive_window_link.h"

namespace outbound::http::internal {

using transport::Exchange;
using transport::Failed;

Dispatcher::Dispatcher(Clock& clock, std::shared_ptr<EventLoop> loop,
                       const MakeCarrier& make_carrier)
    : clock_(clock), loop_(std::move(loop)), carrier_(make_carrier(*this)) {}

Dispatcher::~Dispatcher() {
  loop_->RunAndWait([this] {
    stopped_ = true;
    idle_timer_.Cancel();
    std::unordered_set<Exchange*> queued(queue_.begin(), queue_.end());
    queue_.clear();
    std::vector<Exchange*> live;
    live.reserve(exchanges_.size());
    for (auto& [id, exchange] : exchanges_) live.push_back(exchange.get());
    for (Exchange* exchange : live) {
      if (queued.count(exchange) == 0) carrier_->Cancel(*exchange);
      End(*exchange, Failed(ErrorKind::kCancelled, "the client was destroyed"));
    }
    SettleWarm(Fail(ErrorKind::kCancelled, "the client was destroyed"));
    carrier_->CloseAll("the client was destroyed");
    carrier_.reset();  // on the loop: it waits for a name being resolved
    alive_.reset();
  });
}

void Dispatcher::Start(std::shared_ptr<ExchangeEvents> events, const ExchangeRequest& what) {
  // Cancelled on its way down: nothing is sent.
  if (!events->Launch()) {
    events->End(events->CancelledOutcome());
    return;
  }
  bool first;
  {
    std::lock_guard lock(incoming_mu_);
    first = incoming_.empty();
    incoming_.push_back({std::move(events), what});
  }
  // One task takes every exchange that arrived before it runs.
  if (first) loop_->Post([this] { TakeIncoming(); });
}

void Dispatcher::Warm(TimePoint deadline, std::function<void(Result<void>)> ready) {
  std::weak_ptr<const char> alive = alive_;
  loop_->Post([this, alive, deadline, ready = std::move(ready)]() mutable {
    if (!alive.lock()) return ready(Fail(ErrorKind::kCancelled, "the client was destroyed"));
    BeginWarm(deadline, std::move(ready));
  });
}

// --- On the loop thread from here on ---

void Dispatcher::BeginWarm(TimePoint deadline, std::function<void(Result<void>)> ready) {
  if (carrier_->Ready()) return ready({});
  if (auto why = carrier_->Unreachable()) return ready(Fail(ErrorKind::kTransport, *why));
  if (clock_.Now() >= deadline) {
    return ready(Fail(ErrorKind::kDeadline, "no connection opened before the deadline"));
  }
  std::uint64_t id = ++next_warm_id_;
  std::weak_ptr<const char> alive = alive_;
  Timer timer = clock_.ScheduleAt(deadline, [loop = loop_, alive, this, id] {
    loop->Post([alive, this, id] {
      if (!alive.lock()) return;
      // Settled already if a connection became usable meanwhile.
      if (!SettleWarm(Fail(ErrorKind::kDeadline, "no connection opened before the deadline"), id)) {
        return;
      }
      // None became usable: one still opening for Warm alone (no exchange
      // waits on it; a host that took the connection and went silent)
      // would hold the carrier's one opening slot, and every later call
      // would wait behind it, never dialled, to its own deadline.
      if (warm_waiters_.empty() && !stopped_) {
        carrier_->CloseIdle("no connection opened before Warm's deadline");
      }
    });
  });
  warm_waiters_.push_back({id, std::move(ready), std::move(timer)});
  carrier_->Warm();
}

void Dispatcher::ConnectionReady() {
  connected_.store(true, std::memory_order_release);
  if (!warm_waiters_.empty()) SettleWarm({});
}

void Dispatcher::ConnectionFailed(const Error& error) {
  if (!warm_waiters_.empty()) SettleWarm(tl::unexpected(error));
}

bool Dispatcher::SettleWarm(const Result<void>& result, std::uint64_t id) {
  std::vector<WarmWaiter> settled;
  auto to_settle = [id](const WarmWaiter& w) { return id == 0 || w.id == id; };
  auto first = std::stable_partition(warm_waiters_.begin(), warm_waiters_.end(),
                                     [&](const WarmWaiter& w) { return !to_settle(w); });
  std::move(first, warm_waiters_.end(), std::back_inserter(settled));
  warm_waiters_.erase(first, warm_waiters_.end());
  for (WarmWaiter& w : settled) {
    w.deadline.Cancel();
    w.ready(result);
  }
  return !settled.empty();
}

void Dispatcher::TakeIncoming() {
  {
    std::lock_guard lock(incoming_mu_);
    taken_.swap(incoming_);  // each keeps its room for the next batch
  }
  // The batch's requests are written together, once all are handed over.
  batching_ = true;
  batch_time_.reset();
  for (auto& [events, what] : taken_) Begin(std::move(events), what);
  taken_.clear();
  if (taken_.capacity() > kKeptIncoming) taken_.shrink_to_fit();  // a burst's room goes
  batching_ = false;
  if (carrier_) carrier_->Flush();
}

void Dispatcher::Begin(std::shared_ptr<ExchangeEvents> events, const ExchangeRequest& what) {
  if (idle_since_.exchange(kBusy, std::memory_order_relaxed) != kBusy) {
    idle_timer_.Cancel();
    idle_timer_armed_.store(false);
  }
  std::uint64_t id = ++next_exchange_id_;
  Exchanges::iterator made;
  if (spare_.empty()) {
    made = exchanges_.emplace(id, std::make_unique<Exchange>()).first;
  } else {
    Exchanges::node_type node = std::move(spare_.back());
    spare_.pop_back();
    node.key() = id;
    made = exchanges_.insert(std::move(node)).position;
  }
  Exchange& exchange = *made->second;
  exchange.id = id;
  exchange.events = std::move(events);
  exchange.request = what.request;
  exchange.attempt_headers = what.attempt_headers;
  exchange.queue_place = what.queue_place;
  exchange.admission = what.admission;
  exchange.call_endpoint = what.call_endpoint;
  exchange.sink = what.body_sink;
  exchange.head_sink = what.body_head;
  exchange.window = what.receive_window;
  if (stopped_) return End(exchange, Failed(ErrorKind::kCancelled, "the client was destroyed"));
  // Two words, so std::function keeps it without a heap block.
  bool live = exchange.events->SetCanceller([this, id] {
    loop_->Post([this, alive = alive_watch_, id] {
      if (alive.lock()) Cancel(id);
    });
  });
  // Cancelled after Start let it in, before this loop took it: nothing of
  // it may be sent (a cancelled POST must not reach the server).
  if (!live) return End(exchange, exchange.events->CancelledOutcome());
  if (exchange.window != nullptr) {
    // As the pipe's below: the window wakes the exchange by its id.
    WindowLink::Attach(*exchange.window, id, [this, loop = loop_, alive = alive_watch_, id] {
      loop->Post([this, alive, id] {
        if (alive.lock()) Resume(id);
      });
    });
  }
  if (const auto& pipe = exchange.request->body_source.pipe) {
    // The pipe wakes the exchange by its id: nothing of the exchange is
    // held by a writer, so a late wake finds it gone and does nothing.
    exchange.pipe_attached = PipeLink::Attach(
        *pipe,
        [this, loop = loop_, alive = alive_watch_, id] {
          loop->Post([this, alive, id] {
            if (alive.lock()) Resume(id);
          });
        },
        [loop = std::weak_ptr<EventLoop>(loop_)] {
          auto held = loop.lock();
          return held != nullptr && held->InLoop();
        });
    if (!exchange.pipe_attached) {
      return End(exchange, Failed(ErrorKind::kCancelled, "the request's BodyPipe had ended"));
    }
  }
  if (auto why = carrier_->Unreachable()) {
    // A dial that failed, as far as the dependency is concerned: the
    // breaker counts it, and nothing of the request left the client, as
    // when a connection to a name that leads nowhere fails to open.
    if (!exchange.events->Sent(clock_.Now())) {
      return End(exchange, exchange.events->CancelledOutcome());
    }
    AttemptOutcome outcome = Failed(ErrorKind::kTransport, *why);
    outcome.not_sent = true;
    return End(exchange, std::move(outcome));
  }
  // In turn: a new attempt at the back, one sent back by a connection's
  // end at its old place, ahead of later ones.
  std::uint64_t& place = *exchange.queue_place;
  if (place == 0) place = ++queued_;
  auto at = queue_.end();
  while (at != queue_.begin() && *(*std::prev(at))->queue_place > place) --at;
  queue_.insert(at, &exchange);
  Dispatch();
}

// Hands queued exchanges to the carrier while it has room, oldest first.
void Dispatcher::Dispatch() {
  if (dispatching_) {
    dispatch_again_ = true;
    return;
  }
  dispatching_ = true;
  do {
    dispatch_again_ = false;
    while (!queue_.empty() && !stopped_ && carrier_->HasRoom()) {
      Exchange& exchange = *queue_.front();
      queue_.pop_front();
      TimePoint now = HandOverTime();
      // The breaker that admitted it may have opened meanwhile.
      const Admission* admission = exchange.admission;
      if (admission != nullptr && !admission->StillAdmitted(now)) {
        End(exchange, Failed(ErrorKind::kRejected,
                             "the circuit breaker opened before the attempt was sent: "
                             "nothing was sent"));
        continue;
      }
      // Cancelled while it waited (its canceller's task is on its way to
      // this loop): nothing of it may be sent.
      if (!exchange.events->Sent(now)) {
        End(exchange, exchange.events->CancelledOutcome());
        continue;
      }
      if (!carrier_->Carry(exchange)) {
        AttemptOutcome outcome =
            Failed(ErrorKind::kTransport, "the connection took no more requests");
        outcome.unprocessed = true;
        End(exchange, std::move(outcome));
      }
    }
  } while (dispatch_again_ && !stopped_);
  dispatching_ = false;
  if (!batching_ && carrier_) carrier_->Flush();
}

TimePoint Dispatcher::HandOverTime() {
  if (!batching_) return clock_.Now();
  if (!batch_time_) batch_time_ = clock_.Now();
  return *batch_time_;
}

// A layer above cancelled the attempt: it has been answered already.
void Dispatcher::Cancel(std::uint64_t id) {
  auto it = exchanges_.find(id);
  if (it == exchanges_.end()) return;
  Exchange& exchange = *it->second;
  // Not queued, and not ended: the carrier has it.
  if (auto queued = std::find(queue_.begin(), queue_.end(), &exchange); queued != queue_.end()) {
    queue_.erase(queued);
  } else {
    carrier_->Cancel(exchange);
  }
  End(exchange, exchange.events->CancelledOutcome());
}

void Dispatcher::Resume(std::uint64_t id) {
  auto it = exchanges_.find(id);
  if (it == exchanges_.end() || stopped_) return;
  carrier_->Resume(*it->second);
}

// `outcome` may be the exchange's own (HTTP/2 writes it there): it is not
// touched once the layers above have taken it and the exchange is reset.
void Dispatcher::End(Exchange& exchange, AttemptOutcome&& outcome) {
  auto node = exchanges_.extract(exchange.id);  // the exchange lives to the end of this
  // The pipe's body stays for another attempt; the call's end finishes it.
  if (exchange.pipe_attached) PipeLink::Detach(*exchange.request->body_source.pipe);
  if (exchange.window != nullptr) WindowLink::Detach(*exchange.window, exchange.id);
  std::shared_ptr<ExchangeEvents> events = std::move(exchange.events);
  if (exchange.endpoint) {
    --exchange.endpoint->outstanding;
    outcome.endpoint = std::move(exchange.endpoint);
  }
  // The layers above hear of this attempt (its breaker ticket is settled)
  // before the queue moves, so a breaker it opened stops the queued ones.
  events->End(std::move(outcome));
  if (spare_.size() < kSpareExchanges) {
    // As a new one: nothing of this attempt's is kept but the room its
    // answer's fields were read into, when the exchange still has it (over
    // HTTP/2 the caller got a copy, H2Session::KeepHeaderRoom; a failed
    // attempt's answer went nowhere) and it is of a usual size. The
    // constructor allocates nothing (the outcome's default message fits a
    // string's own buffer), so it cannot throw between the two.
    ResponseHeaders room = std::move(exchange.response.headers);
    std::destroy_at(&exchange);
    std::construct_at(&exchange);
    if (room.capacity() <= kKeptHeaderRoom) {
      room.clear();
      exchange.response.headers = std::move(room);
    }
    spare_.push_back(std::move(node));
  }
  if (carrier_) Dispatch();
}

void Dispatcher::Ended(Exchange& exchange, AttemptOutcome&& outcome) {
  End(exchange, std::move(outcome));
}

// --- Closing idle connections ---
// One timer, armed only while the client has no call in flight.

void Dispatcher::ClientIdle(TimePoint since) {
  idle_since_.store(since.time_since_epoch().count());
  if (!idle_timer_armed_.exchange(true)) {
    loop_->Post([this, since] { ArmIdleTimer(since + kIdleConnectionLifetime); });
  }
}

void Dispatcher::ArmIdleTimer(TimePoint when) {
  if (stopped_ || live_calls_->load() > 0) {
    idle_timer_armed_.store(false);
    return;
  }
  std::weak_ptr<const char> alive = alive_;
  idle_timer_ = clock_.ScheduleAt(when, [loop = loop_, alive, this] {
    loop->Post([alive, this] {
      if (alive.lock()) IdleTimerFired();
    });
  });
}

void Dispatcher::IdleTimerFired() {
  // Disarmed before `idle_since_` is read: a ClientIdle in between arms
  // the timer again itself.
  idle_timer_armed_.store(false);
  std::int64_t since = idle_since_.load();
  if (since == kBusy || stopped_ || live_calls_->load() > 0) return;  // armed again when idle
  TimePoint due = TimePoint(Duration(since)) + kIdleConnectionLifetime;
  if (clock_.Now() < due) {
    if (!idle_timer_armed_.exchange(true)) ArmIdleTimer(due);
    return;
  }
  carrier_->CloseIdle("idle for 90 s");
}

}  // namespace outbound::http::internal
