// SPDX-License-Identifier: Apache-2.0
#include "pool.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "connection.h"
#include "exchange.h"
#include "tls.h"

namespace outbound::http::internal {
namespace {

using transport::Connection;
using transport::Exchange;
using transport::Failed;
using transport::SocketAddress;
using Address = transport::SocketAddress;

// `text` as an IP literal's socket address, if it is one.
std::optional<Address> Literal(const std::string& text, std::uint16_t port) {
  Address a;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&a.storage);
  if (inet_pton(AF_INET, text.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    a.length = sizeof(sockaddr_in);
    return a;
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&a.storage);
  if (inet_pton(AF_INET6, text.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    a.length = sizeof(sockaddr_in6);
    return a;
  }
  return std::nullopt;
}

// Resolves names with the OS resolver on a thread of its own, so a slow
// DNS answer never holds the loop. Started by the first name it is given;
// its destructor waits for the name being resolved, if any.
class Resolver {
 public:
  // Called on the resolver's thread: the addresses in the resolver's
  // order, or an error.
  using Done = std::function<void(std::vector<Address>, std::string error)>;

  Resolver() : thread_([this] { Run(); }) {}
  ~Resolver() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  Resolver(const Resolver&) = delete;
  Resolver& operator=(const Resolver&) = delete;

  void Resolve(std::string host, std::uint16_t port, Done done) {
    {
      std::lock_guard lock(mu_);
      jobs_.push_back({std::move(host), port, std::move(done)});
    }
    wake_.notify_one();
  }

 private:
  struct Job {
    std::string host;
    std::uint16_t port;
    Done done;
  };

  void Run() {
    for (;;) {
      Job job;
      {
        std::unique_lock lock(mu_);
        wake_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
        if (stop_) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      addrinfo hints{};
      hints.ai_family = AF_UNSPEC;
      hints.ai_socktype = SOCK_STREAM;
      hints.ai_flags = AI_ADDRCONFIG | AI_NUMERICSERV;
      addrinfo* found = nullptr;
      std::string port = std::to_string(job.port);
      int rc = getaddrinfo(job.host.c_str(), port.c_str(), &hints, &found);
      if (rc != 0 || found == nullptr) {
        job.done({}, std::string("could not resolve ") + job.host + ": " + gai_strerror(rc));
        continue;
      }
      std::vector<Address> addresses;
      for (addrinfo* at = found; at != nullptr; at = at->ai_next) {
        Address& a = addresses.emplace_back();
        std::memcpy(&a.storage, at->ai_addr, at->ai_addrlen);
        a.length = at->ai_addrlen;
      }
      freeaddrinfo(found);
      job.done(std::move(addresses), {});
    }
  }

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Job> jobs_;
  bool stop_ = false;
  std::thread thread_;
};

class NativeTransport final : public ClientTransport,
                              public ConnectionPool,
                              private transport::ConnectionEvents {
 public:
  NativeTransport(const Runtime& runtime, const Settings& settings, const Origin& origin,
                  std::shared_ptr<EventLoop> loop, std::shared_ptr<transport::TlsContext> tls)
      : clock_(*runtime.clock),
        network_(*runtime.network),
        settings_(settings),
        origin_(origin),
        loop_(std::move(loop)),
        tls_(std::move(tls)) {
    bool v6 = origin_.host.find(':') != std::string::npos;
    authority_ = v6 ? "[" + origin_.host + "]" : origin_.host;
    bool default_port = origin_.port == (tls_ ? 443 : 80);
    if (!default_port) authority_.append(":").append(std::to_string(origin_.port));
    // Plain http is HTTP/1.1; https says which by ALPN.
    if (!tls_) learned_ = Connection::Protocol::kHttp11;
  }

  ~NativeTransport() override {
    loop_->RunAndWait([this] {
      stopped_ = true;
      // Waits for a name being resolved; what it found finds the transport
      // gone (alive_).
      resolver_.reset();
      idle_timer_.Cancel();
      queue_.clear();
      std::vector<Exchange*> live;
      for (auto& [id, exchange] : exchanges_) live.push_back(exchange.get());
      for (Exchange* exchange : live) {
        if (exchange->connection != nullptr) exchange->connection->Abandon(*exchange);
        End(*exchange, Failed(ErrorKind::kCancelled, "the client was destroyed"));
      }
      while (!connections_.empty()) connections_.back()->Close("the client was destroyed");
      graveyard_.clear();
      alive_.reset();
    });
  }

  void Start(std::shared_ptr<ExchangeEvents> events, const ExchangeRequest& what) override {
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

  // With no call in flight, the pool's connections are closed once they
  // have been idle for kIdleConnectionLifetime, timed on the Runtime's
  // clock; one timer, armed only while the client has no call.
  void CountCallsWith(const std::atomic<int>& live_calls) override { live_calls_ = &live_calls; }

  void ClientIdle(TimePoint since) override {
    idle_since_.store(since.time_since_epoch().count());
    if (!idle_timer_armed_.exchange(true)) {
      loop_->Post([this, since] { ArmIdleTimer(since + kIdleConnectionLifetime); });
    }
  }

 private:
  // --- On the loop thread from here on ---

  void TakeIncoming() {
    std::vector<Incoming> batch;
    {
      std::lock_guard lock(incoming_mu_);
      batch.swap(incoming_);
    }
    ++batching_;
    for (auto& [events, what] : batch) Begin(std::move(events), what);
    --batching_;
    FlushRequested();
  }

  // Writes the requests handed to connections in this turn.
  void FlushRequested() {
    while (!to_flush_.empty()) {
      std::uint64_t id = to_flush_.back();
      to_flush_.pop_back();
      if (Connection* c = Find(id)) c->FlushRequested();
    }
  }

  void Begin(std::shared_ptr<ExchangeEvents> events, const ExchangeRequest& what) {
    if (idle_since_.exchange(kBusy, std::memory_order_relaxed) != kBusy) {
      idle_timer_.Cancel();
      idle_timer_armed_.store(false);
    }
    auto owned = std::make_unique<Exchange>();
    Exchange& exchange = *owned;
    exchange.id = ++next_exchange_id_;
    exchange.events = std::move(events);
    exchange.request = what.request;
    exchange.trace_headers = what.trace_headers;
    exchange.queue_place = what.queue_place;
    exchange.admission = what.admission;
    exchange.sink = what.body_sink;
    exchange.authority = &authority_;
    exchange.max_body = settings_.max_response_bytes;
    exchange.max_error_body = settings_.max_error_response_bytes;
    const std::string& url = exchange.request->url;
    auto scheme_end = url.find("://");
    auto path_start = url.find('/', scheme_end == std::string::npos ? 0 : scheme_end + 3);
    exchange.path = path_start == std::string::npos ? "/" : url.substr(path_start);
    exchanges_.emplace(exchange.id, std::move(owned));
    if (stopped_) return End(exchange, Failed(ErrorKind::kCancelled, "the client was destroyed"));
    std::weak_ptr<const char> alive = alive_;
    exchange.events->SetCanceller([this, alive, id = exchange.id] {
      loop_->Post([this, alive, id] {
        if (alive.lock()) Cancel(id);
      });
    });
    if (network_.Resolve(origin_.host, origin_.port).kind == Route::Kind::kUnreachable) {
      exchange.events->Sent(clock_.Now());  // dialled, as far as the dependency is concerned
      return End(exchange,
                 Failed(ErrorKind::kTransport, origin_.host + ":" + std::to_string(origin_.port) +
                                                   " is not reachable on this network"));
    }
    // In turn: a new attempt at the back, one sent back by a connection's
    // end at its old place (ExchangeRequest::queue_place), ahead of later
    // ones.
    std::uint64_t& place = *exchange.queue_place;
    if (place == 0) place = ++queued_;
    auto at = queue_.end();
    while (at != queue_.begin() && *(*std::prev(at))->queue_place > place) --at;
    queue_.insert(at, &exchange);
    Dispatch();
  }

  // Hands queued exchanges to connections while there is room, oldest
  // first, opening connections as the pool's rules allow.
  void Dispatch() {
    if (dispatching_) {
      dispatch_again_ = true;
      return;
    }
    dispatching_ = true;
    do {
      dispatch_again_ = false;
      while (!queue_.empty() && !stopped_) {
        Exchange& exchange = *queue_.front();
        Connection* connection = WithRoom();
        if (connection == nullptr && !MayOpen()) break;
        queue_.pop_front();
        // The breaker that admitted it may have opened meanwhile.
        const Admission* admission = exchange.admission;
        if (admission != nullptr && !admission->StillAdmitted()) {
          End(exchange, Failed(ErrorKind::kRejected,
                               "the circuit breaker opened before the attempt was sent: "
                               "nothing was sent"));
          continue;
        }
        exchange.events->Sent(clock_.Now());
        bool opening = connection == nullptr;
        if (opening) connection = NewConnection();
        if (!connection->Carry(exchange)) {
          AttemptOutcome outcome =
              Failed(ErrorKind::kTransport, "the connection took no more requests");
          outcome.unprocessed = true;
          End(exchange, std::move(outcome));
          continue;
        }
        if (opening) Open(*connection);
      }
    } while (dispatch_again_ && !stopped_);
    dispatching_ = false;
    if (batching_ == 0) FlushRequested();
  }

  // An open connection that can take one more exchange now, oldest first.
  Connection* WithRoom() const {
    for (const auto& c : connections_) {
      if (c->HasRoom()) return c.get();
    }
    return nullptr;
  }

  bool MayOpen() const {
    if (connections_.size() >= static_cast<std::size_t>(settings_.max_connections)) return false;
    if (learned_ == Connection::Protocol::kHttp11) return true;
    // HTTP/2, or not known yet: the connection being opened will likely
    // take what waits.
    for (const auto& c : connections_) {
      if (c->opening() || c->AwaitingSettings()) return false;
    }
    return true;
  }

  Connection* NewConnection() {
    connections_.push_back(std::make_unique<Connection>(
        ++next_connection_id_, *loop_, static_cast<transport::ConnectionEvents&>(*this), clock_,
        tls_.get(), origin_.host));
    return connections_.back().get();
  }

  // Finds where the connection goes and dials it (or fails it).
  void Open(Connection& connection) {
    Route route = network_.Resolve(origin_.host, origin_.port);
    std::string host = route.kind == Route::Kind::kEndpoint ? route.address : origin_.host;
    std::uint16_t port = route.kind == Route::Kind::kEndpoint ? route.port : origin_.port;
    if (route.kind == Route::Kind::kUnreachable) {
      return connection.FailToOpen(
          ErrorKind::kTransport,
          origin_.host + ":" + std::to_string(origin_.port) + " is not reachable on this network");
    }
    if (auto literal = Literal(host, port)) {
      return connection.Dial({*literal});
    }
    if (!resolver_) resolver_ = std::make_unique<Resolver>();
    std::weak_ptr<const char> alive = alive_;
    resolver_->Resolve(
        host, port,
        [this, alive, id = connection.id()](std::vector<Address> addresses, std::string error) {
          loop_->Post(
              [this, alive, id, addresses = std::move(addresses), error = std::move(error)] {
                if (!alive.lock()) return;
                Connection* c = Find(id);
                if (c == nullptr || c->state() != Connection::State::kResolving) return;
                if (addresses.empty()) return c->FailToOpen(ErrorKind::kTransport, error);
                c->Dial(addresses);
              });
        });
  }

  Connection* Find(std::uint64_t id) const {
    for (const auto& c : connections_) {
      if (c->id() == id) return c.get();
    }
    return nullptr;
  }

  // A layer above cancelled the attempt: it has been answered already. On
  // HTTP/2 its stream is reset; on HTTP/1.1 its connection is closed.
  void Cancel(std::uint64_t id) {
    auto it = exchanges_.find(id);
    if (it == exchanges_.end()) return;
    Exchange& exchange = *it->second;
    if (exchange.connection != nullptr) {
      exchange.connection->Abandon(exchange);
    } else if (auto queued = std::find(queue_.begin(), queue_.end(), &exchange);
               queued != queue_.end()) {
      queue_.erase(queued);
    }
    End(exchange, exchange.events->CancelledOutcome());
  }

  void End(Exchange& exchange, AttemptOutcome&& outcome) {
    auto node = exchanges_.extract(exchange.id);  // the exchange lives to the end of this
    std::shared_ptr<ExchangeEvents> events = std::move(exchange.events);
    // The layers above hear of this attempt (its breaker ticket is settled)
    // before the queue moves, so a breaker it opened stops the queued ones.
    events->End(std::move(outcome));
    Dispatch();
  }

  // --- What the connections tell ---

  void ExchangeEnded(Exchange& exchange, AttemptOutcome&& outcome) override {
    End(exchange, std::move(outcome));
  }

  void ConnectionHasRoom(Connection& connection) override {
    if (connection.protocol() != Connection::Protocol::kUnknown) learned_ = connection.protocol();
    if (connection.Idle() && !connection.Reusable()) {
      return connection.Close("the connection cannot be used again");
    }
    Dispatch();
  }

  void ConnectionClosed(Connection& connection) override {
    auto it = std::find_if(connections_.begin(), connections_.end(),
                           [&](const auto& c) { return c.get() == &connection; });
    if (it == connections_.end()) return;
    bool first = graveyard_.empty();
    graveyard_.push_back(std::move(*it));
    connections_.erase(it);
    if (first && !stopped_) {
      std::weak_ptr<const char> alive = alive_;
      loop_->Post([this, alive] {
        if (alive.lock()) graveyard_.clear();
      });
    }
    Dispatch();
  }

  void ConnectionWantsFlush(Connection& connection) override {
    to_flush_.push_back(connection.id());
  }

  void ConnectionHasMore(Connection& connection) override {
    std::weak_ptr<const char> alive = alive_;
    loop_->Post([this, alive, id = connection.id()] {
      if (!alive.lock()) return;
      if (Connection* c = Find(id)) c->Continue();
    });
  }

  // --- Closing idle connections ---

  void ArmIdleTimer(TimePoint when) {
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

  void IdleTimerFired() {
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
    std::vector<Connection*> idle;
    for (const auto& c : connections_) {
      if (c->Idle()) idle.push_back(c.get());
    }
    for (Connection* c : idle) c->Close("idle for 90 s");
  }

  Clock& clock_;
  const Network& network_;
  Settings settings_;
  Origin origin_;
  std::string authority_;
  std::shared_ptr<EventLoop> loop_;
  std::shared_ptr<transport::TlsContext> tls_;
  std::unique_ptr<Resolver> resolver_;

  std::unordered_map<std::uint64_t, std::unique_ptr<Exchange>> exchanges_;
  std::deque<Exchange*> queue_;
  std::uint64_t queued_ = 0;  // the last queue place given (Attempt::queue_place)
  std::vector<std::unique_ptr<Connection>> connections_;
  std::vector<std::unique_ptr<Connection>> graveyard_;  // closed, destroyed on a later turn
  Connection::Protocol learned_ = Connection::Protocol::kUnknown;
  std::uint64_t next_exchange_id_ = 0;
  std::uint64_t next_connection_id_ = 0;
  bool dispatching_ = false;
  int batching_ = 0;                     // TakeIncoming is handing a batch over
  std::vector<std::uint64_t> to_flush_;  // connections with requests to write
  bool dispatch_again_ = false;
  bool stopped_ = false;

  // `alive_` tells a late task or timer the transport is gone.
  std::shared_ptr<const char> alive_ = std::make_shared<const char>(0);
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
  std::mutex incoming_mu_;
  std::vector<Incoming> incoming_;
};

}  // namespace

Result<std::unique_ptr<ClientTransport>> MakeNativeTransport(const Runtime& runtime,
                                                             const Settings& settings,
                                                             const Origin& origin,
                                                             std::shared_ptr<EventLoop> loop,
                                                             ConnectionPool** pool) {
  std::shared_ptr<transport::TlsContext> tls;
  if (settings.tls) {
    auto made = transport::TlsContext::Create(*settings.tls);
    if (!made) return tl::unexpected(made.error());
    tls = std::move(*made);
  }
  auto made =
      std::make_unique<NativeTransport>(runtime, settings, origin, std::move(loop), std::move(tls));
  *pool = made.get();
  return std::unique_ptr<ClientTransport>(std::move(made));
}

}  // namespace outbound::http::internal
