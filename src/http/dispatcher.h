// SPDX-License-Identifier: Apache-2.0
// The client's dispatcher: the one place an attempt waits between the
// attempt layers and the wire, on the client's event loop.
//  - attempts wait in one FIFO queue, oldest first; one sent back by a
//    connection's end keeps its old place (ExchangeRequest::queue_place);
//  - each is handed to the carrier (and counts as sent) only when the
//    carrier has room for it, after asking its breaker whether it still
//    admits it (Admission);
//  - a cancelled attempt leaves the queue, or its carrier abandons it;
//  - with no call in flight for kIdleConnectionLifetime (on the Runtime's
//    clock), the carrier closes its idle connections.
// What carries an exchange, and how many connections there are, is the
// carrier's business (carrier.h; the native one is transport/pool.h).
// Internal.
#ifndef OUTBOUND_SRC_HTTP_DISPATCHER_H_
#define OUTBOUND_SRC_HTTP_DISPATCHER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "carrier.h"
#include "client_transport.h"
#include "event_loop.h"
#include "outbound/internal/mutex.h"

namespace outbound::http::internal {

// Idle connections are closed once the client has had no call in flight
// for this long.
inline constexpr auto kIdleConnectionLifetime = std::chrono::seconds(90);

class Dispatcher final : public ClientTransport, private CarrierEvents {
 public:
  using MakeCarrier = std::function<std::unique_ptr<Carrier>(CarrierEvents&)>;

  Dispatcher(Clock& clock, std::shared_ptr<EventLoop> loop, const MakeCarrier& make_carrier);
  // Ends every exchange still here as cancelled ("the client was
  // destroyed") and closes the carrier's connections, on the loop.
  ~Dispatcher() override;
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  // Thread-safe: the exchange is taken on the loop, with every other that
  // arrived before the loop's task ran.
  void Start(std::shared_ptr<ExchangeEvents> events, const ExchangeRequest& what) override;
  // Thread-safe.
  void Warm(TimePoint deadline, std::function<void(Result<void>)> ready) override;
  bool Connected() const override { return connected_.load(std::memory_order_acquire); }

  // `live_calls` counts the client's calls in flight; it outlives the
  // dispatcher. Thread-safe from here on.
  void CountCallsWith(const std::atomic<int>& live_calls) { live_calls_ = &live_calls; }
  // The client's last call ended at `since`.
  void ClientIdle(TimePoint since);

 private:
  void TakeIncoming();
  void Begin(std::shared_ptr<ExchangeEvents> events, const ExchangeRequest& what);
  void Dispatch();
  // When an exchange is handed to the carrier: the clock, read once for a
  // batch of incoming exchanges.
  TimePoint HandOverTime();
  void Cancel(std::uint64_t id);
  // The exchange's pipe has bytes (or its end) for a transport that found
  // none.
  void Resume(std::uint64_t id);
  void End(transport::Exchange& exchange, AttemptOutcome&& outcome);
  void Ended(transport::Exchange& exchange, AttemptOutcome&& outcome) override;
  void RoomMade() override {
    if (carrier_) Dispatch();  // not while the carrier is destroyed
  }
  void ConnectionReady() override;
  void ConnectionFailed(const Error& error) override;
  void BeginWarm(TimePoint deadline, std::function<void(Result<void>)> ready);
  // Runs the ready callbacks of every Warm waiting (or only `id`'s):
  // whether there was any.
  bool SettleWarm(const Result<void>& result, std::uint64_t id = 0);
  void ArmIdleTimer(TimePoint when);
  void IdleTimerFired();

  Clock& clock_;
  std::shared_ptr<EventLoop> loop_;
  std::unique_ptr<Carrier> carrier_;

  using Exchanges = std::unordered_map<std::uint64_t, std::unique_ptr<transport::Exchange>>;
  Exchanges exchanges_;
  // Ended exchanges, each in its map node, for the next attempts: no
  // allocation per attempt. At most kSpareExchanges are kept, each with at
  // most kKeptHeaderRoom of room for an answer's header fields, so a burst
  // of calls leaves no more memory behind than this (about 1.4 MiB; a
  // usual answer's room is 512 bytes).
  static constexpr std::size_t kSpareExchanges = 256;
  static constexpr std::size_t kKeptHeaderRoom = 4096;
  std::vector<Exchanges::node_type> spare_;
  std::deque<transport::Exchange*> queue_;
  std::uint64_t queued_ = 0;  // the last queue place given
  std::uint64_t next_exchange_id_ = 0;
  bool dispatching_ = false;
  bool dispatch_again_ = false;
  bool batching_ = false;  // TakeIncoming is handing a batch over: it flushes
  // The time the batch is handed over, read when its first exchange is.
  std::optional<TimePoint> batch_time_;
  bool stopped_ = false;

  // Warm's callers waiting for a connection.
  struct WarmWaiter {
    std::uint64_t id;
    std::function<void(Result<void>)> ready;
    Timer deadline;
  };
  std::vector<WarmWaiter> warm_waiters_;
  std::uint64_t next_warm_id_ = 0;
  std::atomic<bool> connected_{false};

  // `alive_` tells a late task or timer the dispatcher is gone.
  std::shared_ptr<const char> alive_ = std::make_shared<const char>(0);
  // The same, never changed: read on any thread (an attempt's canceller),
  // while the loop may be resetting `alive_`.
  const std::weak_ptr<const char> alive_watch_ = alive_;
  Timer idle_timer_;
  std::atomic<bool> idle_timer_armed_{false};
  static constexpr std::int64_t kBusy = -1;
  std::atomic<std::int64_t> idle_since_{kBusy};
  const std::atomic<int>* live_calls_ = nullptr;

  // Exchanges started on other threads, for the loop to take.
  struct Incoming {
    std::shared_ptr<ExchangeEvents> events;
    ExchangeRequest what;
  };
  outbound::internal::Mutex incoming_mu_;
  std::vector<Incoming> incoming_;
  std::vector<Incoming> taken_;  // the batch TakeIncoming hands over; on the loop
  static constexpr std::size_t kKeptIncoming = 256;  // room kept for the next batch
};

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_DISPATCHER_H_
