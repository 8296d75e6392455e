// SPDX-License-Identifier: Apache-2.0
#include "pool.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>
#include <utility>
#include <vector>

#include "connection.h"
#include "exchange.h"
#include "resolver.h"
#include "tls.h"

namespace outbound::http::internal {
namespace {

using transport::Connection;
using transport::Exchange;
using transport::SocketAddress;

class NativePool final : public Carrier, private transport::ConnectionEvents {
 public:
  NativePool(CarrierEvents& dispatcher, const Runtime& runtime, const Settings& settings,
             const Origin& origin, std::shared_ptr<EventLoop> loop,
             std::shared_ptr<transport::TlsContext> tls)
      : dispatcher_(dispatcher),
        clock_(*runtime.clock),
        random_(*runtime.random),
        network_(*runtime.network),
        max_age_(settings.max_connection_age),
        max_connections_(static_cast<std::size_t>(settings.max_connections)),
        max_body_(settings.max_response_bytes),
        max_error_body_(settings.max_error_response_bytes),
        origin_(origin),
        loop_(std::move(loop)),
        tls_(std::move(tls)) {
    bool v6 = origin_.host.find(':') != std::string::npos;
    authority_ = v6 ? "[" + origin_.host + "]" : origin_.host;
    bool default_port = origin_.port == (tls_ ? 443 : 80);
    if (!default_port) authority_.append(":").append(std::to_string(origin_.port));
    // Plain http is HTTP/1.1 unless the settings say HTTP/2 (prior
    // knowledge); https says which by ALPN.
    if (!tls_)
      plain_ = learned_ = settings.http2_prior_knowledge ? Connection::Protocol::kHttp2
                                                         : Connection::Protocol::kHttp11;
  }

  // On the loop, after CloseAll.
  ~NativePool() override {
    // Waits for a name being resolved; what it found finds the pool gone
    // (alive_).
    resolver_.reset();
    age_timers_.clear();
    graveyard_.clear();
    alive_.reset();
  }

  std::optional<std::string> Unreachable() const override {
    if (network_.Resolve(origin_.host, origin_.port).kind != Route::Kind::kUnreachable) {
      return std::nullopt;
    }
    return NoRoute();
  }

  bool HasRoom() const override {
    with_room_ = WithRoom();
    return with_room_ != nullptr || MayOpen();
  }

  bool Carry(Exchange& exchange) override {
    exchange.authority = &authority_;
    exchange.max_body = max_body_;
    exchange.max_error_body = max_error_body_;
    const std::string& url = exchange.request->url;
    auto scheme_end = url.find("://");
    auto path_start = url.find('/', scheme_end == std::string::npos ? 0 : scheme_end + 3);
    exchange.path = path_start == std::string::npos ? "/" : url.substr(path_start);
    // The dispatcher asked HasRoom just before, and nothing ran between.
    Connection* connection = std::exchange(with_room_, nullptr);
    if (connection == nullptr || !connection->HasRoom()) connection = WithRoom();
    bool opening = connection == nullptr;
    if (opening) connection = NewConnection();
    if (!connection->Carry(exchange)) return false;
    if (opening) Open(*connection);
    return true;
  }

  void Cancel(Exchange& exchange) override {
    // Connection::Carry set it; null only for an exchange it gave back,
    // which the dispatcher ended at once.
    if (exchange.connection != nullptr) exchange.connection->Cancel(exchange);
  }

  void Resume(Exchange& exchange) override {
    // Null while it waits for a connection: it reads the pipe once started.
    if (exchange.connection != nullptr) exchange.connection->Resume(exchange);
  }

  void Flush() override {
    while (!to_flush_.empty()) {
      std::uint64_t id = to_flush_.back();
      to_flush_.pop_back();
      if (Connection* c = Find(id)) c->FlushRequested();
    }
  }

  bool Ready() const override {
    return std::any_of(connections_.begin(), connections_.end(),
                       [](const auto& c) { return c->was_ready() && !c->closed(); });
  }

  void Warm() override {
    if (stopped_ || !connections_.empty()) return;  // open or opening already
    Open(*NewConnection());
  }

  void CloseIdle(const std::string& why) override {
    std::vector<Connection*> idle;
    for (const auto& c : connections_) {
      if (c->Idle()) idle.push_back(c.get());
    }
    for (Connection* c : idle) c->Close(why);
  }

  void CloseAll(const std::string& why) override {
    stopped_ = true;
    while (!connections_.empty()) connections_.back()->Close(why);
  }

 private:
  // HTTP/2: one connection while the server's MAX_CONCURRENT_STREAMS
  // allows; another only when every open one is full (or going away) and
  // none is being opened. HTTP/1.1: an idle reusable connection first,
  // otherwise a new one. Up to max_connections.

  // An open connection that can take one more exchange now, oldest first.
  Connection* WithRoom() const {
    for (const auto& c : connections_) {
      if (c->HasRoom()) return c.get();
    }
    return nullptr;
  }

  bool MayOpen() const {
    if (connections_.size() >= max_connections_) return false;
    if (learned_ == Connection::Protocol::kHttp11) return true;
    // HTTP/2, or not known yet: the connection being opened will likely
    // take what waits.
    for (const auto& c : connections_) {
      if (c->opening() || c->AwaitingSettings()) return false;
    }
    return true;
  }

  std::string NoRoute() const {
    return origin_.host + ":" + std::to_string(origin_.port) + " is not reachable on this network";
  }

  Connection* NewConnection() {
    connections_.push_back(std::make_unique<Connection>(
        ++next_connection_id_, *loop_, static_cast<transport::ConnectionEvents&>(*this), clock_,
        tls_.get(), origin_.host, plain_));
    return connections_.back().get();
  }

  // Finds where the connection goes and dials it (or fails it).
  void Open(Connection& connection) {
    Route route = network_.Resolve(origin_.host, origin_.port);
    std::string host = route.kind == Route::Kind::kEndpoint ? route.address : origin_.host;
    std::uint16_t port = route.kind == Route::Kind::kEndpoint ? route.port : origin_.port;
    if (route.kind == Route::Kind::kUnreachable) {
      return connection.FailToOpen(ErrorKind::kTransport, NoRoute());
    }
    if (auto literal = transport::Literal(host, port)) {
      return connection.Dial({*literal});
    }
    if (!resolver_) resolver_ = std::make_unique<transport::Resolver>();
    std::weak_ptr<const char> alive = alive_;
    resolver_->Resolve(host, port,
                       [this, alive, id = connection.id()](std::vector<SocketAddress> addresses,
                                                           std::string error) {
                         loop_->Post([this, alive, id, addresses = std::move(addresses),
                                      error = std::move(error)] {
                           if (!alive.lock()) return;
                           Connection* c = Find(id);
                           if (c == nullptr || c->state() != Connection::State::kResolving) return;
                           if (addresses.empty())
                             return c->FailToOpen(ErrorKind::kTransport, error);
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

  // --- What the connections tell ---

  void ExchangeEnded(Exchange& exchange, AttemptOutcome&& outcome) override {
    dispatcher_.Ended(exchange, std::move(outcome));
  }

  void ConnectionReady(Connection& connection) override {
    ArmAgeTimer(connection);
    dispatcher_.ConnectionReady();
  }

  // With a maximum age, drains the connection once it has lived its own
  // (jittered) share of it.
  void ArmAgeTimer(const Connection& connection) {
    if (!max_age_) return;
    double factor = 1 - kMaxConnectionAgeJitter + 2 * kMaxConnectionAgeJitter * random_.Uniform();
    auto age = std::chrono::duration_cast<Duration>(*max_age_ * factor);
    std::weak_ptr<const char> alive = alive_;
    // The timer fires on the clock's thread; the drain runs on the loop.
    auto drain = [loop = loop_, alive, this, id = connection.id()] {
      loop->Post([alive, this, id] {
        if (!alive.lock()) return;
        age_timers_.erase(id);
        if (Connection* c = Find(id)) c->Drain("the connection reached its maximum age");
      });
    };
    age_timers_.emplace(connection.id(), clock_.ScheduleAfter(age, std::move(drain)));
  }

  void ConnectionHasRoom(Connection& connection) override {
    if (connection.protocol() != Connection::Protocol::kUnknown) learned_ = connection.protocol();
    if (connection.Idle() && !connection.Reusable()) {
      return connection.Close("the connection cannot be used again");
    }
    dispatcher_.RoomMade();
  }

  void ConnectionClosed(Connection& connection) override {
    if (with_room_ == &connection) with_room_ = nullptr;
    auto it = std::find_if(connections_.begin(), connections_.end(),
                           [&](const auto& c) { return c.get() == &connection; });
    if (it == connections_.end()) return;
    age_timers_.erase(connection.id());
    bool first = graveyard_.empty();
    graveyard_.push_back(std::move(*it));
    connections_.erase(it);
    if (!connection.was_ready() && connections_.empty() && !stopped_) {
      dispatcher_.ConnectionFailed(Error(connection.close_kind(), connection.close_reason()));
    }
    if (first && !stopped_) {
      std::weak_ptr<const char> alive = alive_;
      loop_->Post([this, alive] {
        if (alive.lock()) graveyard_.clear();
      });
    }
    dispatcher_.RoomMade();
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

  CarrierEvents& dispatcher_;
  Clock& clock_;
  Random& random_;
  const Network& network_;
  std::optional<Duration> max_age_;  // Settings::max_connection_age
  std::size_t max_connections_;
  std::size_t max_body_;
  std::size_t max_error_body_;
  Origin origin_;
  std::string authority_;
  std::shared_ptr<EventLoop> loop_;
  std::shared_ptr<transport::TlsContext> tls_;
  std::unique_ptr<transport::Resolver> resolver_;

  std::vector<std::unique_ptr<Connection>> connections_;
  std::vector<std::unique_ptr<Connection>> graveyard_;  // closed, destroyed on a later turn
  // Each usable connection's drain at its maximum age, cancelled with it.
  std::unordered_map<std::uint64_t, Timer> age_timers_;
  Connection::Protocol learned_ = Connection::Protocol::kUnknown;
  Connection::Protocol plain_ = Connection::Protocol::kHttp11;  // without TLS
  std::uint64_t next_connection_id_ = 0;
  std::vector<std::uint64_t> to_flush_;  // connections with requests to write
  // What the last HasRoom found, for the Carry that follows it: the
  // connections are looked through once per exchange, not twice.
  mutable Connection* with_room_ = nullptr;
  bool stopped_ = false;
  // `alive_` tells a late task the pool is gone.
  std::shared_ptr<const char> alive_ = std::make_shared<const char>(0);
};

}  // namespace

Result<std::function<std::unique_ptr<Carrier>(CarrierEvents&)>> NativePoolFor(
    const Runtime& runtime, const Settings& settings, const Origin& origin,
    std::shared_ptr<EventLoop> loop) {
  std::shared_ptr<transport::TlsContext> tls;
  if (settings.tls) {
    auto made = transport::TlsContext::Create(*settings.tls);
    if (!made) return tl::unexpected(made.error());
    tls = std::move(*made);
  }
  return [&runtime, settings, origin, loop = std::move(loop),
          tls = std::move(tls)](CarrierEvents& dispatcher) -> std::unique_ptr<Carrier> {
    return std::make_unique<NativePool>(dispatcher, runtime, settings, origin, loop, tls);
  };
}

}  // namespace outbound::http::internal
