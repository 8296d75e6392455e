// SPDX-License-Identifier: Apache-2.0
#include "pool.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../endpoint_health.h"
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
             const Origin& origin, BodyWanted body_wanted, std::shared_ptr<EventLoop> loop,
             std::shared_ptr<transport::TlsContext> tls)
      : dispatcher_(dispatcher),
        clock_(*runtime.clock),
        random_(*runtime.random),
        network_(*runtime.network),
        max_age_(settings.max_connection_age),
        balancing_(settings.balancing),
        max_connections_(static_cast<std::size_t>(settings.max_connections)),
        max_body_(settings.max_response_bytes),
        max_error_body_(settings.max_error_response_bytes),
        body_wanted_(body_wanted),
        origin_(origin),
        loop_(std::move(loop)),
        tls_(std::move(tls)) {
    authority_ = origin_.Authority();
    // Plain http is HTTP/1.1 unless the settings say HTTP/2 (prior
    // knowledge); https says which by ALPN.
    if (!tls_) {
      plain_ = learned_ = settings.http2_prior_knowledge ? Connection::Protocol::kHttp2
                                                         : Connection::Protocol::kHttp11;
    }
    if (balancing_) detector_ = std::make_shared<OutlierDetector>(balancing_->outlier_detection);
  }

  // On the loop, after CloseAll.
  ~NativePool() override {
    // Waits for a name being resolved; what it found finds the pool gone
    // (alive_).
    resolver_.reset();
    resolve_timer_.Cancel();
    age_timers_.clear();
    keep_timers_.clear();
    dial_timers_.clear();
    patience_timers_.clear();
    graveyard_.clear();
    alive_.reset();
  }

  std::optional<std::string> Unreachable() const override {
    if (balancing_ && !balancing_->endpoints.empty()) return std::nullopt;
    // A name is looked up to dial it: while a connection is open (or
    // opening) the attempts go to it, and asking the Network would cost a
    // Route, a copy on the heap, per attempt.
    if (!connections_.empty()) return std::nullopt;
    if (network_.Resolve(origin_.host, origin_.port).kind != Route::Kind::kUnreachable) {
      return std::nullopt;
    }
    return NoRoute();
  }

  bool HasRoom() override {
    if (balancing_) return BalancedHasRoom();
    with_room_ = WithRoom(nullptr);
    if (with_room_ == nullptr) with_room_ = Orphan(nullptr);
    return with_room_ != nullptr || MayOpen(nullptr);
  }

  bool Carry(Exchange& exchange) override {
    exchange.authority = &authority_;
    exchange.max_body = max_body_;
    exchange.max_error_body = max_error_body_;
    exchange.body_wanted = body_wanted_;
    const std::string& url = exchange.request->url;
    auto scheme_end = url.find("://");
    auto path_start = url.find('/', scheme_end == std::string::npos ? 0 : scheme_end + 3);
    exchange.path = path_start == std::string::npos ? std::string_view("/")
                                                    : std::string_view(url).substr(path_start);
    Connection* connection = nullptr;
    EndpointHealth* endpoint = nullptr;
    if (balancing_) {
      std::uint64_t last = exchange.call_endpoint ? exchange.call_endpoint->load() : 0;
      endpoint = Choose(last);
      if (endpoint != nullptr) {
        if (exchange.call_endpoint) exchange.call_endpoint->store(endpoint->id());
        exchange.endpoint = Shared(*endpoint);
        exchange.events->Carried(exchange.endpoint);
        ++endpoint->outstanding;
        connection = WithRoom(endpoint);
        if (connection == nullptr) connection = Opening(endpoint);
        if (connection == nullptr) connection = Orphan(endpoint);
      }
    } else {
      // The dispatcher asked HasRoom just before, and nothing ran between.
      connection = std::exchange(with_room_, nullptr);
      if (connection == nullptr || !(connection->HasRoom() || connection->orphaned())) {
        connection = WithRoom(nullptr);
      }
    }
    bool opening = connection == nullptr;
    if (opening) connection = NewConnection(endpoint);
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
    if (stopped_) return;
    if (!balancing_) {
      if (connections_.empty()) Open(*NewConnection(nullptr));  // else open or opening already
      return;
    }
    // One connection to every endpoint, once the name is resolved.
    EnsureResolved();
    if (resolving_) {
      warm_pending_ = true;
      return;
    }
    if (endpoints_.empty()) return Open(*NewConnection(nullptr));  // fails, saying why
    for (const auto& e : endpoints_) {
      if (WithRoom(e.health.get()) == nullptr && MayOpen(e.health.get())) {
        Open(*NewConnection(e.health.get()));
      }
    }
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

  // With several endpoints, each has connections of its own and these
  // rules hold per endpoint; `endpoint` null: the client's connections.

  // Whether `c` belongs to `endpoint` (null: any).
  bool Of(const Connection& c, const EndpointHealth* endpoint) const {
    if (endpoint == nullptr) return true;
    auto it = endpoint_of_.find(c.id());
    return it != endpoint_of_.end() && it->second.get() == endpoint;
  }

  // An open connection that can take one more exchange now, oldest first.
  Connection* WithRoom(const EndpointHealth* endpoint) const {
    for (const auto& c : connections_) {
      if (c->HasRoom() && Of(*c, endpoint)) return c.get();
    }
    return nullptr;
  }

  // A connection going on opening for nobody (Connection::orphaned): the
  // next attempt with no room elsewhere takes it, and is bounded by its
  // own timeout there, as the one it was opened for was.
  Connection* Orphan(const EndpointHealth* endpoint) const {
    for (const auto& c : connections_) {
      if (c->orphaned() && Of(*c, endpoint)) return c.get();
    }
    return nullptr;
  }

  bool MayOpen(const EndpointHealth* endpoint) const {
    std::size_t open = 0;
    bool opening = false;
    for (const auto& c : connections_) {
      if (!Of(*c, endpoint)) continue;
      ++open;
      opening = opening || c->opening() || c->AwaitingSettings();
    }
    if (open >= max_connections_) return false;
    // HTTP/2, or not known yet: the connection being opened will likely
    // take what waits.
    return learned_ == Connection::Protocol::kHttp11 || !opening;
  }

  // --- Several endpoints (Settings::balancing) ---

  struct Endpoint {
    SocketAddress address;
    std::shared_ptr<EndpointHealth> health;
    // Its last connection failed to open, and no answer has come from any
    // endpoint since (Choose).
    bool dial_failed = false;
  };

  std::shared_ptr<EndpointHealth> Shared(const EndpointHealth& endpoint) const {
    for (const auto& e : endpoints_) {
      if (e.health.get() == &endpoint) return e.health;
    }
    return nullptr;
  }

  // `endpoint`'s connection failed to open (Choose).
  void DialFailed(const EndpointHealth& endpoint) {
    for (auto& e : endpoints_) {
      if (e.health.get() == &endpoint && !std::exchange(e.dial_failed, true)) ++dial_failures_;
    }
  }

  // HTTP/2 (or not known yet): the endpoint's connection being opened,
  // which takes what waits for it once open, as the one connection does
  // without balancing. Null on HTTP/1.1 (one attempt per connection).
  Connection* Opening(const EndpointHealth* endpoint) const {
    if (learned_ == Connection::Protocol::kHttp11) return nullptr;
    for (const auto& c : connections_) {
      if ((c->opening() || c->AwaitingSettings()) && !c->draining() && Of(*c, endpoint)) {
        return c.get();
      }
    }
    return nullptr;
  }

  // Whether `endpoint` may take an exchange now: not ejected, with room
  // on a connection, one being opened, or room for one more.
  bool Eligible(const Endpoint& e, TimePoint now) const {
    const EndpointHealth* endpoint = e.health.get();
    return e.health->Available(now) &&
           (WithRoom(endpoint) != nullptr || Opening(endpoint) != nullptr ||
            Orphan(endpoint) != nullptr || MayOpen(endpoint));
  }

  bool BalancedHasRoom() {
    EnsureResolved();
    // No endpoint known: wait for the name, or fail what comes, saying why.
    if (endpoints_.empty()) return !resolving_;
    TimePoint now = clock_.Now();
    return std::any_of(endpoints_.begin(), endpoints_.end(),
                       [&](const Endpoint& e) { return Eligible(e, now); });
  }

  // Power of two choices: of two eligible endpoints drawn at random, the
  // one with fewer attempts outstanding; the call's last endpoint only
  // when no other is eligible. Null when no endpoint is known.
  //
  // An endpoint whose last dial failed is drawn only when every other
  // eligible one's failed too, until an answer comes from any endpoint: a
  // refused dial fails at once, with nothing outstanding, so without this
  // each new call would draw it while the others still shake hands, and
  // its failures, one per dial with no answer between them, would open the
  // dependency's breaker before any replica could answer (its own run
  // still ejects it, each failure coming after an answer from elsewhere).
  EndpointHealth* Choose(std::uint64_t avoid) {
    TimePoint now = clock_.Now();
    candidates_.clear();
    bool fresh = false;  // an eligible endpoint whose last dial did not fail
    for (const auto& e : endpoints_) {
      if (Eligible(e, now)) fresh = fresh || !e.dial_failed;
    }
    for (const auto& e : endpoints_) {
      if ((!fresh || !e.dial_failed) && Eligible(e, now)) candidates_.push_back(e.health.get());
    }
    if (candidates_.size() > 1 && avoid != 0) {
      std::erase_if(candidates_, [&](const EndpointHealth* e) { return e->id() == avoid; });
    }
    std::size_t n = candidates_.size();
    if (n <= 1) return n == 1 ? candidates_[0] : nullptr;
    auto draw = [&](std::size_t of) {
      return std::min(of - 1,
                      static_cast<std::size_t>(random_.Uniform() * static_cast<double>(of)));
    };
    std::size_t i = draw(n);
    std::size_t j = draw(n - 1);
    if (j >= i) ++j;
    EndpointHealth* a = candidates_[i];
    EndpointHealth* b = candidates_[j];
    return b->outstanding < a->outstanding ? b : a;
  }

  void EnsureResolved() {
    if (!resolved_once_ && !resolving_ && !stopped_) Resolve();
  }

  // Learns the endpoints: the settings' list, or the name's addresses on
  // the Runtime's network (again every re_resolve_every, and when a
  // connection fails to open).
  void Resolve() {
    if (resolving_ || stopped_) return;
    resolved_once_ = true;
    std::vector<SocketAddress> found;
    if (!balancing_->endpoints.empty()) {
      for (const auto& e : balancing_->endpoints) {
        if (auto literal = transport::Literal(e.address, e.port)) found.push_back(*literal);
      }
      return Update(std::move(found));  // fixed: never resolved again
    }
    ArmResolveTimer();
    Route route = network_.Resolve(origin_.host, origin_.port);
    if (route.kind == Route::Kind::kUnreachable) return Update({}, NoRoute());
    if (route.kind == Route::Kind::kEndpoint) {
      for (const auto& e : route.endpoints) {
        if (auto literal = transport::Literal(e.address, e.port)) found.push_back(*literal);
      }
      return Update(std::move(found), NoRoute());
    }
    if (auto literal = transport::Literal(origin_.host, origin_.port)) return Update({*literal});
    if (!resolver_) resolver_ = std::make_unique<transport::Resolver>();
    resolving_ = true;
    std::weak_ptr<const char> alive = alive_;
    resolver_->Resolve(origin_.host, origin_.port,
                       [this, alive](std::vector<SocketAddress> addresses, std::string error) {
                         loop_->Post([this, alive, addresses = std::move(addresses),
                                      error = std::move(error)]() mutable {
                           if (!alive.lock()) return;
                           resolving_ = false;
                           Update(std::move(addresses), error);
                         });
                       });
  }

  void ArmResolveTimer() {
    double factor = 1 - kMaxConnectionAgeJitter + 2 * kMaxConnectionAgeJitter * random_.Uniform();
    auto period = std::chrono::duration_cast<Duration>(balancing_->re_resolve_every * factor);
    std::weak_ptr<const char> alive = alive_;
    resolve_timer_ = clock_.ScheduleAfter(period, [loop = loop_, alive, this] {
      loop->Post([alive, this] {
        if (alive.lock()) Resolve();
      });
    });
  }

  // The endpoints are now `found`: new ones join, those gone take no new
  // exchange and their connections drain. An empty answer keeps what was
  // known, unless nothing was (then `error` fails what comes).
  void Update(std::vector<SocketAddress> found, const std::string& error = {}) {
    if (stopped_) return;
    if (found.empty()) {
      if (endpoints_.empty()) resolve_error_ = error.empty() ? NoRoute() : error;
      dispatcher_.RoomMade();
      return;
    }
    std::vector<std::string> names;
    for (const auto& a : found) names.push_back(transport::Text(a));
    // Drained once the list is settled: an idle connection closes at once,
    // and what its closing starts may look at the list.
    std::vector<Connection*> to_drain;
    for (auto it = endpoints_.begin(); it != endpoints_.end();) {
      if (std::find(names.begin(), names.end(), it->health->name()) != names.end()) {
        ++it;
        continue;
      }
      detector_->Untrack(*it->health);
      for (const auto& c : connections_) {
        if (Of(*c, it->health.get())) to_drain.push_back(c.get());
      }
      if (it->dial_failed) --dial_failures_;
      it = endpoints_.erase(it);
    }
    for (std::size_t i = 0; i < found.size(); ++i) {
      bool known = std::any_of(endpoints_.begin(), endpoints_.end(),
                               [&](const Endpoint& e) { return e.health->name() == names[i]; });
      if (!known) endpoints_.push_back({found[i], detector_->Track(++next_endpoint_id_, names[i])});
    }
    for (Connection* c : to_drain) c->Drain("the endpoint left the name's addresses");
    if (std::exchange(warm_pending_, false)) Warm();
    dispatcher_.RoomMade();
  }

  std::string NoRoute() const {
    return origin_.host + ":" + std::to_string(origin_.port) + " is not reachable on this network";
  }

  // A connection to `endpoint` (null: to the origin's name).
  Connection* NewConnection(const EndpointHealth* endpoint) {
    connections_.push_back(std::make_unique<Connection>(
        ++next_connection_id_, *loop_, static_cast<transport::ConnectionEvents&>(*this), clock_,
        tls_.get(), origin_.host, plain_));
    Connection* made = connections_.back().get();
    if (endpoint != nullptr) endpoint_of_.emplace(made->id(), Shared(*endpoint));
    return made;
  }

  // Finds where the connection goes and dials it (or fails it).
  void Open(Connection& connection) {
    if (balancing_) {
      for (const auto& e : endpoints_) {
        if (Of(connection, e.health.get())) return connection.Dial({e.address});
      }
      return connection.FailToOpen(ErrorKind::kTransport,
                                   resolve_error_.empty() ? NoRoute() : resolve_error_);
    }
    Route route = network_.Resolve(origin_.host, origin_.port);
    if (route.kind == Route::Kind::kUnreachable) {
      return connection.FailToOpen(ErrorKind::kTransport, NoRoute());
    }
    if (route.kind == Route::Kind::kEndpoint) {
      // Without balancing, the replicas in the network's order.
      std::vector<SocketAddress> addresses;
      for (const auto& e : route.endpoints) {
        if (auto literal = transport::Literal(e.address, e.port)) addresses.push_back(*literal);
      }
      if (addresses.empty()) return connection.FailToOpen(ErrorKind::kTransport, NoRoute());
      return Dial(connection, std::move(addresses));
    }
    const std::string& host = origin_.host;
    const std::uint16_t port = origin_.port;
    if (auto literal = transport::Literal(host, port)) {
      return connection.Dial({*literal});
    }
    if (!resolver_) resolver_ = std::make_unique<transport::Resolver>();
    std::weak_ptr<const char> alive = alive_;
    resolver_->Resolve(host, port,
                       [this, alive, id = connection.id()](std::vector<SocketAddress> addresses,
                                                           std::string error) {
                         loop_->Post([this, alive, id, addresses = std::move(addresses),
                                      error = std::move(error)]() mutable {
                           if (!alive.lock()) return;
                           Connection* c = Find(id);
                           if (c == nullptr || c->state() != Connection::State::kResolving) return;
                           if (addresses.empty()) {
                             return c->FailToOpen(ErrorKind::kTransport, error);
                           }
                           Dial(*c, std::move(addresses));
                         });
                       });
  }

  // Dials the name's addresses, IPv6 and IPv4 taking turns (RFC 8305
  // §4), the next beside the last every kConnectionAttemptDelay it goes
  // unanswered; but the one whose last connection closed while still
  // connecting, or whose dial a later address outran (its SYN unanswered,
  // as a black hole's), goes last until it answers, so it costs no later
  // connection the delay.
  void Dial(Connection& connection, std::vector<SocketAddress> addresses) {
    addresses = transport::InterleaveFamilies(std::move(addresses));
    if (unusable_) {
      std::stable_partition(addresses.begin(), addresses.end(),
                            [&](const SocketAddress& a) { return !(a == *unusable_); });
    }
    bool several = addresses.size() > 1;
    connection.Dial(std::move(addresses));
    if (several && connection.state() == Connection::State::kConnecting) {
      ArmDialTimer(connection.id(), connection.last_dial_began());
    }
  }

  // kConnectionAttemptDelay after the latest dial began, the next address
  // beside the dials still unanswered, while one is left; a dial begun
  // since (the one before it refused) moves the time on. The timer fires
  // on the clock's thread; the dial runs on the loop.
  void ArmDialTimer(std::uint64_t id, TimePoint latest_dial) {
    std::weak_ptr<const char> alive = alive_;
    auto next = [loop = loop_, alive, this, id, latest_dial] {
      loop->Post([alive, this, id, latest_dial] {
        if (!alive.lock()) return;
        Connection* c = Find(id);
        if (c == nullptr || c->state() != Connection::State::kConnecting) {
          dial_timers_.erase(id);
          return;
        }
        // A dial begun since has its own delay, unless that has passed too.
        TimePoint latest = c->last_dial_began();
        bool newer = latest != latest_dial;
        if ((newer && latest + transport::kConnectionAttemptDelay > clock_.Now()) ||
            c->DialAnother()) {
          ArmDialTimer(id, c->last_dial_began());
        } else {
          dial_timers_.erase(id);
        }
      });
    };
    dial_timers_[id] =
        clock_.ScheduleAt(latest_dial + transport::kConnectionAttemptDelay, std::move(next));
  }

  Connection* Find(std::uint64_t id) const {
    for (const auto& c : connections_) {
      if (c->id() == id) return c.get();
    }
    return nullptr;
  }

  // --- What the connections tell ---

  void ExchangeEnded(Exchange& exchange, AttemptOutcome&& outcome) override {
    // With several endpoints, the attempts that waited on a dial that
    // failed are one failure of that endpoint's, not one each: the breaker
    // and outlier detection count the first, and the others go again at
    // once, elsewhere (they were never sent).
    if (balancing_ && outcome.not_sent && outcome.connection != 0) outcome.connection_lost = true;
    // A connection that ends before it was ready failed to open: marked
    // before the dispatcher hears of it, so what it starts next does not
    // dial the same endpoint again.
    if (balancing_ && outcome.connection_lost && exchange.endpoint &&
        exchange.connection != nullptr && !exchange.connection->was_ready()) {
      DialFailed(*exchange.endpoint);
    }
    // An answer: the endpoints whose dial failed may be tried again (Choose).
    if (balancing_ && outcome.result && dial_failures_ > 0) {
      for (auto& e : endpoints_) e.dial_failed = false;
      dial_failures_ = 0;
    }
    dispatcher_.Ended(exchange, std::move(outcome));
  }

  void ConnectionReady(Connection& connection) override {
    dial_timers_.erase(connection.id());
    // It answers after all.
    if (unusable_ && connection.address() != nullptr && *connection.address() == *unusable_) {
      unusable_.reset();
    }
    // An address a later one outran goes last too: the next connection
    // does not wait the attempt delay for it again.
    if (connection.outrun() != nullptr) unusable_ = *connection.outrun();
    ArmAgeTimer(connection);
    dispatcher_.ConnectionReady();
  }

  // With a maximum age, drains the connection once it has lived its own
  // (jittered) share of it.
  void ArmAgeTimer(const Connection& connection) {
    if (!max_age_) return;
    double factor = 1 - kMaxConnectionAgeJitter + 2 * kMaxConnectionAgeJitter * random_.Uniform();
    // In double, clamped: an age near Duration::max() (no limit) times a
    // factor over 1 would not fit.
    double nanos = static_cast<double>(max_age_->count()) * factor;
    Duration age = nanos >= static_cast<double>(Duration::max().count())
                       ? Duration::max()
                       : Duration(static_cast<Duration::rep>(nanos));
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
    if (connection.Idle() && connection.KeptUntil()) {
      if (!CloseIfKeptTooLong(connection)) return;
    }
    dispatcher_.RoomMade();
  }

  // An idle connection the server keeps only for a while (its Keep-Alive
  // timeout; HTTP/2: a probe PING's time to be answered): closed once that
  // is over, else a timer at that time closes it if it is idle then (each
  // answer's time replaces the last one's). False if it closed.
  bool CloseIfKeptTooLong(Connection& connection) {
    TimePoint until = *connection.KeptUntil();
    if (clock_.Now() >= until) {
      connection.Close(connection.protocol() == Connection::Protocol::kHttp2
                           ? "a PING it was sent went unanswered"
                           : "the server's Keep-Alive timeout is near");
      return false;
    }
    KeepTimer& keep = keep_timers_[connection.id()];
    if (keep.until == until) return true;
    keep.until = until;
    std::weak_ptr<const char> alive = alive_;
    keep.timer = clock_.ScheduleAt(until, [loop = loop_, alive, this, id = connection.id(), until] {
      loop->Post([alive, this, id, until] {
        if (!alive.lock()) return;
        auto it = keep_timers_.find(id);
        if (it == keep_timers_.end() || it->second.until != until) return;  // replaced since
        keep_timers_.erase(it);
        Connection* c = Find(id);
        if (c != nullptr && c->Idle() && c->KeptUntil() == until) CloseIfKeptTooLong(*c);
      });
    });
    return true;
  }

  void ConnectionClosed(Connection& connection) override {
    if (with_room_ == &connection) with_room_ = nullptr;
    auto it = std::find_if(connections_.begin(), connections_.end(),
                           [&](const auto& c) { return c.get() == &connection; });
    if (it == connections_.end()) return;
    age_timers_.erase(connection.id());
    keep_timers_.erase(connection.id());
    dial_timers_.erase(connection.id());
    patience_timers_.erase(connection.id());
    if (auto of = endpoint_of_.find(connection.id());
        of != endpoint_of_.end() && !connection.was_ready()) {
      DialFailed(*of->second);
    }
    endpoint_of_.erase(connection.id());
    if (connection.closed_connecting() && connection.address() != nullptr) {
      unusable_ = *connection.address();
    }
    bool first = graveyard_.empty();
    graveyard_.push_back(std::move(*it));
    connections_.erase(it);
    if (!connection.was_ready() && connections_.empty() && !stopped_) {
      dispatcher_.ConnectionFailed(Error(connection.close_kind(), connection.close_reason()));
    }
    // The name may have moved on from the address that failed.
    if (!connection.was_ready() && balancing_ && balancing_->endpoints.empty() && !stopped_) {
      Resolve();
    }
    if (first && !stopped_) {
      std::weak_ptr<const char> alive = alive_;
      loop_->Post([this, alive] {
        if (alive.lock()) graveyard_.clear();
      });
    }
    dispatcher_.RoomMade();
  }

  // Over HTTP/2 one connection at a time goes on opening for nobody (once
  // open it takes every attempt waiting); over HTTP/1.1 each does, as each
  // attempt needs a connection of its own (they count against
  // max_connections). None with several endpoints, where the next attempt
  // may go to another (and the endpoint whose connection did not open in
  // time goes last, Choose). One kept is closed at kOpeningPatience from
  // when it began, if still opening for nobody: a connection no attempt
  // takes again (others had room) would else hold its slot until the
  // kernel gave up its dial.
  bool KeepOpening(const Connection& connection) override {
    if (balancing_) return false;
    Connection::Protocol protocol =
        connection.protocol() != Connection::Protocol::kUnknown ? connection.protocol() : learned_;
    if (protocol != Connection::Protocol::kHttp11) {
      auto mine = endpoint_of_.find(connection.id());
      const EndpointHealth* endpoint = mine != endpoint_of_.end() ? mine->second.get() : nullptr;
      Connection* orphan = Orphan(endpoint);
      if (orphan != nullptr && orphan != &connection) return false;
    }
    if (patience_timers_.contains(connection.id())) return true;
    std::weak_ptr<const char> alive = alive_;
    auto out_of_patience = [loop = loop_, alive, this, id = connection.id()] {
      loop->Post([alive, this, id] {
        if (!alive.lock()) return;
        patience_timers_.erase(id);
        Connection* c = Find(id);
        if (c != nullptr && c->orphaned()) {
          c->Close("it went on opening for no attempt as long as one may");
        }
      });
    };
    patience_timers_.emplace(
        connection.id(),
        clock_.ScheduleAt(connection.began() + transport::kOpeningPatience, out_of_patience));
    return true;
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
  // The address whose last connection closed while connecting, or whose
  // dial another outran: dialled last (Dial) until a connection to it is
  // ready.
  std::optional<SocketAddress> unusable_;
  std::optional<Balancing> balancing_;  // Settings::balancing
  std::size_t max_connections_;
  std::size_t max_body_;
  std::size_t max_error_body_;
  BodyWanted body_wanted_;
  Origin origin_;
  std::string authority_;
  std::shared_ptr<EventLoop> loop_;
  std::shared_ptr<transport::TlsContext> tls_;
  std::unique_ptr<transport::Resolver> resolver_;

  // With several endpoints: what is known of them, in the order found;
  // each connection's endpoint by connection id (it may outlive the
  // endpoint's place in the list while it drains).
  std::shared_ptr<OutlierDetector> detector_;
  std::vector<Endpoint> endpoints_;
  std::unordered_map<std::uint64_t, std::shared_ptr<EndpointHealth>> endpoint_of_;
  std::vector<EndpointHealth*> candidates_;  // Choose's, kept for its room
  int dial_failures_ = 0;                    // endpoints with dial_failed set
  std::uint64_t next_endpoint_id_ = 0;
  bool resolved_once_ = false;
  bool resolving_ = false;  // the OS resolver has the name
  bool warm_pending_ = false;
  std::string resolve_error_;  // why no endpoint is known
  Timer resolve_timer_;

  std::vector<std::unique_ptr<Connection>> connections_;
  std::vector<std::unique_ptr<Connection>> graveyard_;  // closed, destroyed on a later turn
  // Each usable connection's drain at its maximum age, cancelled with it.
  std::unordered_map<std::uint64_t, Timer> age_timers_;
  // Each connection's close at its Keep-Alive time (CloseIfKeptTooLong).
  struct KeepTimer {
    TimePoint until{};
    Timer timer;
  };
  std::unordered_map<std::uint64_t, KeepTimer> keep_timers_;
  // Each connecting connection's next dial (Dial), cancelled once it is
  // ready or closed.
  std::unordered_map<std::uint64_t, Timer> dial_timers_;
  // Each connection kept opening for nobody: its close at kOpeningPatience
  // (KeepOpening), cancelled with it.
  std::unordered_map<std::uint64_t, Timer> patience_timers_;
  Connection::Protocol learned_ = Connection::Protocol::kUnknown;
  Connection::Protocol plain_ = Connection::Protocol::kHttp11;  // without TLS
  std::uint64_t next_connection_id_ = 0;
  std::vector<std::uint64_t> to_flush_;  // connections with requests to write
  // What the last HasRoom found, for the Carry that follows it: the
  // connections are looked through once per exchange, not twice.
  Connection* with_room_ = nullptr;
  bool stopped_ = false;
  // `alive_` tells a late task the pool is gone.
  std::shared_ptr<const char> alive_ = std::make_shared<const char>(0);
};

}  // namespace

Result<std::function<std::unique_ptr<Carrier>(CarrierEvents&)>> NativePoolFor(
    const TransportSpec& spec, std::shared_ptr<EventLoop> loop) {
  std::shared_ptr<transport::TlsContext> tls;
  if (spec.settings.tls) {
    auto made = transport::TlsContext::Create(*spec.settings.tls, spec.http2_only);
    if (!made) return tl::unexpected(made.error());
    tls = std::move(*made);
  }
  return [&runtime = spec.runtime, settings = spec.settings, origin = spec.origin,
          body_wanted = spec.body_wanted, loop = std::move(loop),
          tls = std::move(tls)](CarrierEvents& dispatcher) -> std::unique_ptr<Carrier> {
    return std::make_unique<NativePool>(dispatcher, runtime, settings, origin, body_wanted, loop,
                                        tls);
  };
}

}  // namespace outbound::http::internal
