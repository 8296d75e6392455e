// SPDX-License-Identifier: Apache-2.0
#include "curl_transport.h"

#include <curl/curl.h>
#include <openssl/ssl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <deque>
#include <mutex>
#include <span>
#include <unordered_set>
#include <vector>

#include "body_growth.h"
#include "body_upload.h"
#include "curl_tls.h"
#include "gzip_decoder.h"

namespace outbound::http::internal {
namespace {

// Streams an HTTP/2 connection carries at once (servers commonly allow 100).
constexpr std::size_t kStreamsPerConnection = 100;

// What a response's header fields usually take at most: room made at once.
constexpr std::size_t kHeaderBytesExpected = 512;

// libcurl 7.88 can leave bytes it has already read from a connection
// unprocessed (a response header block larger than one HTTP/2 frame, met in
// the tests) until it is called for that connection again; through the
// socket interface only a new event would call it, and none comes. So while
// transfers are in flight, connections that saw no event for this long are
// nudged. (Its own easy loop waits up to a second for the same reason.)
constexpr auto kNudgeAfter = std::chrono::milliseconds(50);

// Idle transfer slots that keep their easy handle.
constexpr std::size_t kIdleEasyHandles = 256;

// A response's header section larger than this fails as too large (and is
// not retried): it is no answer a client should hold in memory.
constexpr std::size_t kMaxHeaderBytes = 96 * 1024;

// Connections remembered as having carried a request (see FirstRequestOn).
constexpr std::size_t kConnectionsRemembered = 4096;

// libcurl's global init, once per process, before any handle.
void InitCurlOnce() {
  [[maybe_unused]] static const bool done = [] {
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  }();
}

struct SlistFree {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using Slist = std::unique_ptr<curl_slist, SlistFree>;

struct EasyFree {
  void operator()(CURL* easy) const { curl_easy_cleanup(easy); }
};
using Easy = std::unique_ptr<CURL, EasyFree>;

// One attempt in curl's hands, or waiting in the FIFO queue for a place.
// Transfers are kept in slots and reused, each slot with its easy handle, as
// a hand-written curl loop would reuse its handles: what is the same from
// one attempt to the next is set once. `id` names one use of a slot, so a
// late cut of an attempt that has ended finds nothing.
struct Transfer {
  std::uint64_t id = 0;
  std::uint32_t uses = 0;
  bool live = false;
  std::shared_ptr<Attempt> attempt;
  // The handle and what was last set on it.
  Easy easy;
  Slist headers;
  std::string url;
  curl_slist* connect_to = nullptr;
  bool plain_get = false;
  Response response;
  bool headers_done = false;
  bool too_large = false;
  bool in_curl = false;
  bool forbid_reuse = false;  // cut short: its connection is not kept (Cut)
  std::size_t max_bytes = 0;
  Clock* clock = nullptr;
  class CurlTransport* owner = nullptr;
  char error[CURL_ERROR_SIZE] = {};

  // What the transfer learned on the way; reset for each use of the slot.
  int writes = 0;               // times curl was about to write the request
  bool resend_refused = false;  // curl wanted to write it a second time
  std::uint64_t connection = 0;
  bool fresh_connection = false;  // the first write was its connection's first request
  int socket_errno = 0;           // why opening a socket failed, if it did
  std::size_t header_bytes = 0;
  std::optional<std::uint64_t> content_length;
  bool transfer_encoding = false;
  const char* invalid = nullptr;  // why the response is malformed
  bool headers_too_large = false;
  // The call's BodySink, if it has one (set per use of the slot); what the
  // body gave it, and whether it said no more.
  const BodySink* sink = nullptr;
  std::uint64_t streamed = 0;
  bool stopped = false;
  bool Streams() const { return sink != nullptr && response.successful(); }
  // Decodes a gzip-coded body (Settings::gzip). Ours, not libcurl's
  // (CURLOPT_ACCEPT_ENCODING is never set, so libcurl passes the body as it
  // came): libcurl takes a gzip stream cut short for a whole body, and the
  // two transports should fail the same bodies the same way.
  std::unique_ptr<GzipDecoder> decoder;
  std::uint64_t coded_bytes = 0;  // the body as it came, when decoded
  // A request body read as it is sent (Request::StreamBodyFrom), and
  // whether its reader failed (curl then ends the transfer as aborted).
  std::optional<BodyUpload> upload;
  bool upload_failed = false;

  void Reset() {
    response = Response{};
    headers_done = too_large = in_curl = forbid_reuse = false;
    error[0] = '\0';
    writes = 0;
    resend_refused = false;
    connection = 0;
    fresh_connection = false;
    socket_errno = 0;
    ResetHead();
    headers_too_large = false;
    streamed = 0;
    stopped = false;
    decoder.reset();
    coded_bytes = 0;
    upload.reset();
    upload_failed = false;
  }
  // A new header block (after a 1xx) starts from scratch.
  void ResetHead() {
    header_bytes = 0;
    content_length.reset();
    transfer_encoding = false;
    invalid = nullptr;
  }
};

class CurlTransport final : public AttemptLayer, public ConnectionPool {
 public:
  CurlTransport(const Runtime& runtime, const Settings& settings, const Origin& origin,
                std::shared_ptr<EventLoop> loop, std::shared_ptr<CurlTls> tls)
      : clock_(*runtime.clock),
        network_(*runtime.network),
        settings_(settings),
        origin_(origin),
        loop_(std::move(loop)),
        tls_(std::move(tls)),
        https_(origin.scheme == "https") {
    InitCurlOnce();
    multi_ = NewMulti();
    // HTTP/1.1 carries one transfer per connection; HTTP/2 multiplexes up to
    // 100 on one connection. Beyond that, attempts wait in our FIFO, not in
    // curl's queue (which can starve a transfer for a second).
    // Over TLS the protocol is known only once ALPN has spoken: until the
    // first connection's handshake, one transfer at a time, or curl would
    // open a connection for every transfer added before it ends.
    max_in_flight_ = https_ ? 1 : static_cast<std::size_t>(settings.max_connections);
  }

  ~CurlTransport() override {
    // Everything curl touches is the loop thread's; so is its teardown. The
    // multi handle's cleanup closes the pooled connections.
    loop_->RunAndWait([this] {
      stopped_ = true;
      *running_ = false;
      idle_timer_.Cancel();
      for (auto& t : slots_) {
        if (t->live) Finish(*t, Failed(ErrorKind::kCancelled, "the client was destroyed"));
      }
      slots_.clear();  // the easy handles, before the multi handle they belonged to
      curl_multi_cleanup(multi_);
      loop_->SetDeadline(this, std::nullopt, nullptr);
      loop_->SetDeadline(&nudge_key_, std::nullopt, nullptr);
    });
  }

  void Start(const std::shared_ptr<Attempt>& attempt) override {
    // Cut on its way down: nothing is sent.
    if (!attempt->Launch()) {
      attempt->Complete(attempt->CutOutcome());
      return;
    }
    bool first;
    {
      std::lock_guard lock(incoming_mu_);
      first = incoming_.empty();
      incoming_.push_back(attempt);
    }
    // One task takes every attempt that arrived before it runs.
    if (first) loop_->Post([this] { TakeIncoming(); });
  }

  // The transport ends attempts itself (Complete); nothing passes through.
  void Finish(Attempt&, AttemptOutcome&) override {}

 private:
  CURLM* NewMulti() {
    CURLM* multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, OnSocket);
    curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, this);
    curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, OnTimer);
    curl_multi_setopt(multi, CURLMOPT_TIMERDATA, this);
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, static_cast<long>(CURLPIPE_MULTIPLEX));
    curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS,
                      static_cast<long>(settings_.max_connections));
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, 100L);  // idle connections kept
    return multi;
  }

  static AttemptOutcome Failed(ErrorKind kind, std::string message) {
    AttemptOutcome outcome;
    outcome.result = Fail(kind, std::move(message));
    return outcome;
  }

  // --- On the loop thread from here on ---

  void TakeIncoming() {
    std::vector<std::shared_ptr<Attempt>> batch;
    {
      std::lock_guard lock(incoming_mu_);
      batch.swap(incoming_);
    }
    for (auto& attempt : batch) Begin(std::move(attempt));
    batch.clear();
    std::lock_guard lock(incoming_mu_);
    if (incoming_.empty()) incoming_.swap(batch);  // keep the room for the next batch
  }

  void Begin(std::shared_ptr<Attempt> attempt) {
    if (idle_since_.exchange(kBusy, std::memory_order_relaxed) != kBusy) {
      idle_timer_.Cancel();  // busy again: a test counting timers sees only the call's
      idle_timer_armed_.store(false);
    }
    Transfer& t = Acquire();
    t.attempt = std::move(attempt);
    t.max_bytes = settings_.max_response_bytes;
    t.sink = t.attempt->call->body_sink ? &t.attempt->call->body_sink : nullptr;
    t.clock = &clock_;
    t.owner = this;
    if (stopped_) return Finish(t, Failed(ErrorKind::kCancelled, "the client was destroyed"));
    // A canceller may run, and its task reach the loop, after this transport
    // is gone (an attempt cut while the client is torn down): both hold the
    // loop and the running flag, not the transport, until they know it is there.
    t.attempt->SetCanceller([this, id = t.id, loop = loop_, running = running_] {
      loop->Post([this, id, running] {
        if (*running) Cut(id);
      });
    });
    Route route = network_.Resolve(origin_.host, origin_.port);
    if (route.kind == Route::Kind::kUnreachable) {
      t.attempt->HandedOver(clock_.Now());  // dialled, as far as the dependency is concerned
      return Finish(
          t, Failed(ErrorKind::kTransport, origin_.host + ":" + std::to_string(origin_.port) +
                                               " is not reachable on this network"));
    }
    Prepare(t, route);
    // Room now: sent at once, unless the breaker opened since it admitted
    // the attempt (an attempt that ended meanwhile may have opened it).
    if (queue_.empty() && in_flight_ < max_in_flight_ && !starting_ && !stopped_) {
      if (!StillAdmitted(t)) return;
      return Send(t);
    }
    queue_.push_back(t.id);
    StartQueued();
  }

  // Whether the attempt's breaker still admits it; if not, it ends as
  // rejected and nothing is sent.
  bool StillAdmitted(Transfer& t) {
    const Attempt& attempt = *t.attempt;
    if (!attempt.still_admitted || attempt.still_admitted()) return true;
    Finish(t, Failed(ErrorKind::kRejected,
                     "the circuit breaker opened before the attempt was sent: nothing was sent"));
    return false;
  }

  void Send(Transfer& t) {
    t.in_curl = true;
    ++in_flight_;
    t.attempt->HandedOver(clock_.Now());
    curl_multi_add_handle(multi_, t.easy.get());
    ArmNudge();
  }

  // See kNudgeAfter. Armed while transfers are in flight; a connection
  // event in the meantime puts the nudge off.
  void ArmNudge() {
    if (nudge_armed_ || in_flight_ == 0) return;
    nudge_armed_ = true;
    loop_->SetDeadline(&nudge_key_, SystemClock().Now() + kNudgeAfter, [this] { Nudge(); });
  }

  void Nudge() {
    nudge_armed_ = false;
    if (in_flight_ == 0) return;
    if (events_ == events_at_nudge_) {
      std::vector<curl_socket_t> sockets = sockets_;  // an action may change sockets_
      for (curl_socket_t fd : sockets) {
        int running = 0;
        curl_multi_socket_action(multi_, fd, CURL_CSELECT_IN, &running);
      }
      Harvest();
    }
    events_at_nudge_ = events_;
    ArmNudge();
  }

  // With no call in flight, the pool's connections are closed once they
  // have been idle for kIdleConnectionLifetime (curl itself would keep them
  // until it next looked for one to reuse). Timed on the Runtime's clock;
  // one timer, re-armed only when it fires, so a busy client pays nothing,
  // and armed only while the client has no call (a test between attempts
  // sees only the call's own timers).
  void CountCallsWith(const std::atomic<int>& live_calls) override { live_calls_ = &live_calls; }

  void ClientIdle(TimePoint since) override {
    idle_since_.store(since.time_since_epoch().count());
    if (!idle_timer_armed_.exchange(true)) {
      loop_->Post([this, since] { ArmIdleTimer(since + kIdleConnectionLifetime); });
    }
  }

  void ArmIdleTimer(TimePoint when) {
    // A call began meanwhile: armed again when it ends. (A test waiting
    // for a call's own timers never sees this one.)
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
    curl_multi_cleanup(multi_);  // closes every connection it pooled
    loop_->SetDeadline(this, std::nullopt, nullptr);
    multi_ = NewMulti();
  }

  // A transfer slot for a new attempt: a free one, or a new one.
  Transfer& Acquire() {
    if (free_slots_.empty()) {
      free_slots_.push_back(static_cast<std::uint32_t>(slots_.size()));
      slots_.push_back(std::make_unique<Transfer>());
    }
    std::uint32_t slot = free_slots_.back();
    free_slots_.pop_back();
    Transfer& t = *slots_[slot];
    t.id = (static_cast<std::uint64_t>(++t.uses) << 32) | slot;
    t.live = true;
    return t;
  }

  // The live transfer `id` names, or null once it has ended.
  Transfer* Find(std::uint64_t id) {
    auto slot = static_cast<std::size_t>(id & 0xffffffffu);
    if (slot >= slots_.size()) return nullptr;
    Transfer* t = slots_[slot].get();
    return t->live && t->id == id ? t : nullptr;
  }

  // Returns an ended transfer's slot, clean, to the free list. Past a few
  // hundred idle slots, the slot's handle goes (a burst is not kept).
  void Release(Transfer& t) {
    t.live = false;
    t.attempt.reset();
    // curl counts its resends on the handle, across transfers: a handle that
    // tried one goes, so the next attempt starts from a clean count.
    if (free_slots_.size() >= kIdleEasyHandles || t.resend_refused) {
      t.easy.reset();
      t.headers.reset();
    }
    t.Reset();
    free_slots_.push_back(static_cast<std::uint32_t>(t.id & 0xffffffffu));
  }

  // Hands queued transfers to curl while there is room, oldest first.
  void StartQueued() {
    // Finish() calls back here: one pass at a time, however many it fails.
    if (starting_ || stopped_) return;
    starting_ = true;
    while (!queue_.empty() && in_flight_ < max_in_flight_) {
      Transfer* t = Find(queue_.front());
      queue_.pop_front();
      if (t == nullptr) continue;  // cut while queued
      if (StillAdmitted(*t)) Send(*t);
    }
    starting_ = false;
  }

  // Sets what this attempt sends on the slot's handle: only what differs
  // from the handle's last attempt.
  void Prepare(Transfer& t, const Route& route) {
    if (!t.easy) {
      t.easy.reset(curl_easy_init());
      ConfigureOnce(t);
    }
    CURL* easy = t.easy.get();
    const CallRequest& request = *t.attempt->request;
    if (request.url != t.url) {  // most calls go to the same few URLs
      t.url = request.url;
      curl_easy_setopt(easy, CURLOPT_URL, t.url.c_str());
    }
    if (curl_slist* connect_to = ConnectTo(route); connect_to != t.connect_to) {
      curl_easy_setopt(easy, CURLOPT_CONNECT_TO, connect_to);
      t.connect_to = connect_to;
    }

    const std::string& method = request.method;
    const std::string& body = request.body;
    bool has_body = !body.empty() || method == "POST" || method == "PUT" || method == "PATCH" ||
                    request.body_source;
    const Headers& trace_headers = t.attempt->trace_headers;
    bool plain_get =
        method == "GET" && !has_body && request.headers.empty() && trace_headers.empty();
    if (plain_get && t.plain_get) return;  // the handle is set for this already
    t.plain_get = plain_get;

    // The method, from a clean slate (the handle may have sent a POST last).
    curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, nullptr);
    if (method == "HEAD") {
      curl_easy_setopt(easy, CURLOPT_NOBODY, 1L);
    } else if (method != "GET" || has_body) {
      curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, method.c_str());
    }
    if (request.body_source) {
      // Read by OnUploadWanted as curl sends it: chunked on HTTP/1.1 when
      // its length is not known (-1).
      t.upload.emplace(request.body_source);
      const auto& length = request.body_source.length;
      curl_easy_setopt(easy, CURLOPT_POST, 1L);
      curl_easy_setopt(easy, CURLOPT_POSTFIELDS, nullptr);
      curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE,
                       length ? static_cast<curl_off_t>(*length) : curl_off_t{-1});
    } else if (has_body) {
      curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
      curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body.data());  // the call owns it
    }
    curl_slist* headers = nullptr;
    bool has_expect = false, has_content_type = false;
    auto replaced = [&](const std::string& name) {
      for (const auto& trace_header : trace_headers) {
        if (SameHeaderName(name, trace_header.first)) return true;
      }
      return false;
    };
    for (const auto& [name, value] : trace_headers) {
      headers = curl_slist_append(headers, (name + ": " + value).c_str());
    }
    for (const auto& [name, value] : request.headers) {
      if (!trace_headers.empty() && replaced(name)) continue;
      std::string line = value.empty() ? name + ";" : name + ": " + value;
      headers = curl_slist_append(headers, line.c_str());
      has_expect |= SameHeaderName(name, "Expect");
      has_content_type |= SameHeaderName(name, "Content-Type");
    }
    // With a body: no 100-continue round trip, no form content type made up by curl.
    if (has_body && !has_expect) headers = curl_slist_append(headers, "Expect:");
    if (has_body && !has_content_type) headers = curl_slist_append(headers, "Content-Type:");
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
    t.headers.reset(headers);
  }

  // The CURLOPT_CONNECT_TO list for `route`, built once per distinct route
  // (the network rarely changes its mind), or null to resolve as usual.
  curl_slist* ConnectTo(const Route& route) {
    if (route.kind != Route::Kind::kEndpoint) return nullptr;
    if (!connect_to_ || route.address != connect_route_.address ||
        route.port != connect_route_.port) {
      bool v6 = route.address.find(':') != std::string::npos;
      std::string entry = origin_.host + ":" + std::to_string(origin_.port) + ":" +
                          (v6 ? "[" + route.address + "]" : route.address) + ":" +
                          std::to_string(route.port);
      // Transfers still in curl's hands may point at the old list: keep it.
      if (connect_to_) retired_connect_to_.push_back(std::move(connect_to_));
      connect_to_.reset(curl_slist_append(nullptr, entry.c_str()));
      connect_route_ = route;
    }
    return connect_to_.get();
  }

  // What every attempt of this client has in common, and the slot's own
  // buffers.
  void ConfigureOnce(Transfer& t) const {
    CURL* easy = t.easy.get();
    curl_easy_setopt(easy, CURLOPT_PRIVATE, &t);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, t.error);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &t);
    t.url.clear();
    t.connect_to = nullptr;
    t.plain_get = false;
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_PROXY, "");  // never a proxy, whatever the environment says
    curl_easy_setopt(easy, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(easy, CURLOPT_NETRC, static_cast<long>(CURL_NETRC_IGNORED));
    curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);  // redirects are the client's
    curl_easy_setopt(easy, CURLOPT_MAXAGE_CONN, 90L);    // idle connections kept 90 s
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, OnHeaderLine);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, OnBody);
    curl_easy_setopt(easy, CURLOPT_READFUNCTION, OnUploadWanted);
    curl_easy_setopt(easy, CURLOPT_READDATA, &t);
    // Every write of a request is one the retry layer decided: curl's own
    // resends (a reused connection found dead, a refused HTTP/2 stream) are
    // refused here and reported up as a lost connection.
    curl_easy_setopt(easy, CURLOPT_PREREQFUNCTION, OnAboutToWrite);
    curl_easy_setopt(easy, CURLOPT_PREREQDATA, &t);
    curl_easy_setopt(easy, CURLOPT_OPENSOCKETFUNCTION, OnOpenSocket);
    curl_easy_setopt(easy, CURLOPT_OPENSOCKETDATA, &t);
    curl_easy_setopt(easy, CURLOPT_HTTP_VERSION,
                     https_ ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1);
    if (!https_) return;
    curl_easy_setopt(easy, CURLOPT_PIPEWAIT, 1L);  // share a connection rather than open one
    tls_->Apply(easy);
  }

  static std::size_t OnUploadWanted(char* buffer, std::size_t size, std::size_t count, void* user) {
    auto& t = *static_cast<Transfer*>(user);
    if (!t.upload) return 0;
    Result<std::size_t> n = t.upload->Read(std::span<char>(buffer, size * count));
    if (!n) {
      t.upload_failed = true;
      return CURL_READFUNC_ABORT;
    }
    if (t.upload->done()) t.attempt->BodySent(t.clock->Now());
    return *n;
  }

  static int OnAboutToWrite(void* user, char*, char* local_ip, int remote_port, int local_port) {
    auto& t = *static_cast<Transfer*>(user);
    if (++t.writes > 1) {
      t.resend_refused = true;
      return CURL_PREREQFUNC_ABORT;
    }
    // One connection, named by its local end and the remote port.
    std::uint64_t name = 1469598103934665603ull;
    for (const char* c = local_ip; c != nullptr && *c != '\0'; ++c) {
      name = (name ^ static_cast<unsigned char>(*c)) * 1099511628211ull;
    }
    t.connection = name ^ (static_cast<std::uint64_t>(local_port) << 16) ^
                   static_cast<std::uint64_t>(remote_port);
    if (t.connection == 0) t.connection = 1;
    t.fresh_connection = t.owner->FirstRequestOn(t.connection);
    t.owner->LearnProtocol(t);
    return CURL_PREREQFUNC_OK;
  }

  // Whether `connection` carries its first request now. Connections are
  // remembered a while (a local port reused sooner reads as used: the safe
  // side, where nothing is resent).
  bool FirstRequestOn(std::uint64_t connection) {
    if (!carried_.insert(connection).second) return false;
    carried_order_.push_back(connection);
    if (carried_order_.size() > kConnectionsRemembered) {
      carried_.erase(carried_order_.front());
      carried_order_.pop_front();
    }
    return true;
  }

  // Over TLS, the first connection's ALPN says how many transfers may go at
  // once; the queue moves as soon as curl returns (not from this callback).
  void LearnProtocol(Transfer& t) {
    if (!https_ || protocol_known_) return;
    curl_tlssessioninfo* info = nullptr;
    if (curl_easy_getinfo(t.easy.get(), CURLINFO_TLS_SSL_PTR, &info) != CURLE_OK ||
        info == nullptr || info->backend != CURLSSLBACKEND_OPENSSL || info->internals == nullptr) {
      return;
    }
    const unsigned char* alpn = nullptr;
    unsigned int length = 0;
    SSL_get0_alpn_selected(static_cast<SSL*>(info->internals), &alpn, &length);
    protocol_known_ = true;
    bool h2 = length == 2 && alpn[0] == 'h' && alpn[1] == '2';
    max_in_flight_ =
        h2 ? kStreamsPerConnection : static_cast<std::size_t>(settings_.max_connections);
  }

  static curl_socket_t OnOpenSocket(void* user, curlsocktype, curl_sockaddr* address) {
    int fd = socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
    if (fd < 0) static_cast<Transfer*>(user)->socket_errno = errno;
    return fd < 0 ? CURL_SOCKET_BAD : fd;
  }

  static size_t OnHeaderLine(char* data, size_t size, size_t n, void* user) {
    auto& t = *static_cast<Transfer*>(user);
    std::string_view line(data, size * n);
    t.header_bytes += line.size();
    if (t.header_bytes > kMaxHeaderBytes) {
      t.headers_too_large = true;
      return 0;
    }
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
    if (line.rfind("HTTP/", 0) == 0) {                      // a status line: a new header block
      if (t.response.status != 0) t.response = Response{};  // the last was a 1xx
      t.ResetHead();
      t.header_bytes = line.size();
      t.response.headers.reserve(kHeaderBytesExpected);
      auto space = line.find(' ');
      t.response.version = line.substr(5, space == std::string_view::npos ? 0 : space - 5);
      t.response.status = space == std::string_view::npos ? 0 : StatusCode(line.substr(space + 1));
      if (t.response.status == 0) return Invalid(t, "a malformed status line");
    } else if (line.empty()) {  // the end of a header block
      if (t.response.status >= 200 && !t.headers_done) {
        if (t.content_length && t.transfer_encoding) {
          // RFC 9112 §6.3: a sign of request smuggling; the connection could
          // not be trusted after it.
          return Invalid(t, "both Content-Length and Transfer-Encoding");
        }
        // A gzip-coded body is judged by its decoded size, as it arrives.
        bool no_body = HasNoBody(t.attempt->request->method, t.response.status);
        if (t.attempt->request->decode_gzip && !no_body &&
            GzipDecoder::IsGzip(t.response.headers.Find("content-encoding"))) {
          t.decoder = std::make_unique<GzipDecoder>();
        }
        if (t.content_length && *t.content_length > t.max_bytes && !t.Streams() && !t.decoder &&
            !no_body) {
          t.too_large = true;  // announced: fail now, read nothing of it
          return 0;
        }
        if (t.content_length && !t.Streams() && !t.decoder) {
          t.response.body.reserve(static_cast<std::size_t>(*t.content_length));
        }
        t.headers_done = true;
        t.response.received_at = t.clock->WallNow();
        t.attempt->HeadersArrived();
        if (t.Streams()) t.attempt->BodyStreaming(t.clock->Now());
      }
    } else if (t.headers_done) {
      // A trailer field (libcurl passes them here too): dropped, as the
      // native transport does (Response::headers).
    } else if (auto colon = line.find(':'); colon != std::string_view::npos) {
      std::string_view name = line.substr(0, colon);
      std::string_view value = line.substr(colon + 1);
      while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) {
        value.remove_prefix(1);
      }
      while (!value.empty() && (value.back() == ' ' || value.back() == '\t'))
        value.remove_suffix(1);
      if (SameHeaderName(name, "Content-Length")) {
        std::uint64_t length = 0;
        auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), length);
        if (ec != std::errc() || end != value.data() + value.size() || value.empty()) {
          return Invalid(t, "a malformed Content-Length");
        }
        if (t.content_length && *t.content_length != length) {
          return Invalid(t, "conflicting Content-Length headers");  // RFC 9112 §6.3
        }
        t.content_length = length;
      } else if (SameHeaderName(name, "Transfer-Encoding")) {
        t.transfer_encoding = true;
      }
      t.response.headers.Add(name, value);
    }
    return size * n;
  }

  // The status code of a status line's rest ("200 OK"): three digits, 100
  // to 599, then a space or nothing; 0 if it is not one.
  static int StatusCode(std::string_view rest) {
    if (rest.size() < 3 || (rest.size() > 3 && rest[3] != ' ')) return 0;
    int code = 0;
    for (char c : rest.substr(0, 3)) {
      if (c < '0' || c > '9') return 0;
      code = code * 10 + (c - '0');
    }
    return code >= 100 && code <= 599 ? code : 0;
  }

  static size_t Invalid(Transfer& t, const char* why) {
    t.invalid = why;
    return 0;  // curl aborts the transfer and does not reuse its connection
  }

  // Takes the body as it arrives, decoded first if it is gzip-coded: past
  // the limit, the transfer is aborted.
  static size_t OnBody(char* data, size_t size, size_t n, void* user) {
    auto& t = *static_cast<Transfer*>(user);
    size_t len = size * n;
    if (!t.decoder) return Take(t, std::string_view(data, len)) ? len : 0;
    t.coded_bytes += len;
    BodySink take = [&t](std::string_view piece) { return Take(t, piece); };
    switch (t.decoder->Feed(std::string_view(data, len), take)) {
      case GzipDecoder::Status::kOk:
        return len;
      case GzipDecoder::Status::kStopped:
        return 0;  // Take said why
      case GzipDecoder::Status::kCorrupt:
      case GzipDecoder::Status::kNoMemory:
        break;
    }
    return Invalid(t, "a gzip-coded body that does not decode");
  }

  // A piece of the (decoded) body: to the sink, or into the response, which
  // grows as MakeRoom says, never past the limit, so a body near the limit
  // never holds twice the limit. False ends the transfer.
  static bool Take(Transfer& t, std::string_view piece) {
    if (t.Streams()) {
      if (!(*t.sink)(piece)) {
        t.stopped = true;
        return false;
      }
      t.streamed += piece.size();
      return true;
    }
    if (!AppendWithin(t.response.body, piece, t.max_bytes)) {
      t.too_large = true;
      return false;
    }
    return true;
  }

  static int OnSocket(CURL*, curl_socket_t fd, int what, void* user, void*) {
    auto* self = static_cast<CurlTransport*>(user);
    std::vector<curl_socket_t>& sockets = self->sockets_;
    auto known = std::find(sockets.begin(), sockets.end(), fd);
    if (what == CURL_POLL_REMOVE) {
      if (known != sockets.end()) sockets.erase(known);
      self->loop_->Unwatch(fd);
      return 0;
    }
    if (known == sockets.end()) sockets.push_back(fd);
    std::uint32_t events = 0;
    if (what & CURL_POLL_IN) events |= EPOLLIN;
    if (what & CURL_POLL_OUT) events |= EPOLLOUT;
    self->loop_->Watch(fd, events, [self, fd](std::uint32_t ready) {
      int flags = 0;
      if (ready & (EPOLLIN | EPOLLHUP | EPOLLERR)) flags |= CURL_CSELECT_IN;
      if (ready & EPOLLOUT) flags |= CURL_CSELECT_OUT;
      if (ready & EPOLLERR) flags |= CURL_CSELECT_ERR;
      int running = 0;
      ++self->events_;
      curl_multi_socket_action(self->multi_, fd, flags, &running);
      self->Harvest();
    });
    return 0;
  }

  static int OnTimer(CURLM*, long timeout_ms, void* user) {
    auto* self = static_cast<CurlTransport*>(user);
    if (timeout_ms < 0) {
      self->loop_->SetDeadline(self, std::nullopt, nullptr);
      return 0;
    }
    self->loop_->SetDeadline(
        self, SystemClock().Now() + std::chrono::milliseconds(timeout_ms), [self] {
          int running = 0;
          curl_multi_socket_action(self->multi_, CURL_SOCKET_TIMEOUT, 0, &running);
          self->Harvest();
        });
    return 0;
  }

  // Collects the transfers curl has finished, then moves the queue (the
  // protocol may have become known meanwhile).
  void Harvest() {
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi_, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      void* priv = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
      Completed(*static_cast<Transfer*>(priv), msg->data.result);
    }
    StartQueued();
  }

  void Completed(Transfer& t, CURLcode code) {
    if (!t.live || !t.in_curl) return;
    if (code == CURLE_OK) return Finish(t, Answered(t));
    Finish(t, Failure(t, code));
  }

  // A transfer curl ended well: the response, unless its body fell short
  // of the length it announced (curl lets an HTTP/2 stream reset with
  // NO_ERROR pass as a whole body).
  AttemptOutcome Answered(Transfer& t) const {
    AttemptOutcome outcome;
    outcome.connection = t.connection;
    outcome.body_streamed = t.streamed > 0;
    const Response& response = t.response;
    bool bodyless = HasNoBody(t.attempt->request->method, response.status);
    std::uint64_t got = t.decoder ? t.coded_bytes : t.Streams() ? t.streamed : response.body.size();
    if (t.content_length && !bodyless && got != *t.content_length) {
      outcome.body_failed = true;
      outcome.result =
          Fail(ErrorKind::kTransport, "the response ended after " + std::to_string(got) +
                                          " of the " + std::to_string(*t.content_length) +
                                          " bytes its Content-Length announced");
      return outcome;
    }
    if (t.decoder && !bodyless && !t.decoder->complete()) {
      outcome.body_failed = true;
      outcome.cannot_improve = true;
      outcome.result = Fail(ErrorKind::kInvalidResponse,
                            "the response has a gzip-coded body that ended before its gzip stream");
      return outcome;
    }
    outcome.result = std::move(t.response);
    return outcome;
  }

  // What a failed transfer means, as precisely as curl lets us tell.
  AttemptOutcome Failure(const Transfer& t, CURLcode code) const {
    AttemptOutcome outcome;
    outcome.connection = t.connection;
    outcome.body_failed = t.headers_done;
    outcome.body_streamed = t.streamed > 0;
    std::string detail = t.error[0] ? t.error : curl_easy_strerror(code);
    auto fail = [&](ErrorKind kind, std::string message) {
      outcome.result = Fail(kind, std::move(message));
      return outcome;
    };
    if (t.stopped) return fail(ErrorKind::kCancelled, "the caller stopped reading the body");
    if (t.upload_failed) {
      outcome.result = t.upload->Failure().result;
      return outcome;
    }
    if (t.too_large) {
      return fail(ErrorKind::kResponseTooLarge, "the response's body is larger than " +
                                                    std::to_string(settings_.max_response_bytes) +
                                                    " bytes");
    }
    // libcurl's own bounds on a header section end the transfer as "out of
    // memory" (HTTP/1.1: a field over its buffer) or as its nghttp2
    // callback failing (HTTP/2) before the headers are complete.
    bool curl_header_bound = !t.headers_done && t.connection != 0 &&
                             (code == CURLE_OUT_OF_MEMORY ||
                              detail.find("callback function failed") != std::string::npos);
    if (t.headers_too_large || curl_header_bound ||
        (code == CURLE_OUT_OF_MEMORY && detail.find("header") != std::string::npos)) {
      return fail(ErrorKind::kResponseTooLarge, "the response's header section is larger than " +
                                                    std::to_string(kMaxHeaderBytes) + " bytes");
    }
    if (t.invalid != nullptr) {
      outcome.cannot_improve = true;
      return fail(ErrorKind::kInvalidResponse, std::string("the response has ") + t.invalid);
    }
    if (code == CURLE_HTTP2_STREAM && !t.headers_done &&
        detail.find("PROTOCOL_ERROR") != std::string::npos) {
      // libcurl's nghttp2 refused the response's header section (a status
      // that is not three digits, conflicting Content-Lengths, a
      // connection-specific field), or the server said our request broke
      // the protocol. Either way the same request gets the same answer.
      outcome.cannot_improve = true;
      return fail(ErrorKind::kInvalidResponse,
                  "the response broke the HTTP/2 protocol on its stream (PROTOCOL_ERROR)");
    }
    // A streamed body cannot be rewound (no CURLOPT_SEEKFUNCTION): curl's
    // own resend of it ends here instead of at OnAboutToWrite.
    bool resend_refused = t.resend_refused || code == CURLE_SEND_FAIL_REWIND;
    if (resend_refused && t.fresh_connection) {
      // curl resends a request written on a new connection only when the
      // server refused its stream (REFUSED_STREAM, or above a GOAWAY's last
      // stream): nothing was processed.
      outcome.unprocessed = true;
      return fail(ErrorKind::kTransport, "the server refused the stream without processing it");
    }
    if (resend_refused) {
      outcome.connection_lost = true;
      return fail(ErrorKind::kTransport,
                  "the connection ended before any response (the server closed it, or refused "
                  "the stream): the request may have been processed and is not sent again by "
                  "the transport");
    }
    if (t.socket_errno == EMFILE || t.socket_errno == ENFILE || t.socket_errno == ENOBUFS ||
        t.socket_errno == ENOMEM) {
      return fail(ErrorKind::kLocalResource, std::string("this process could not open a socket (") +
                                                 std::strerror(t.socket_errno) +
                                                 "): not the dependency's failure");
    }
    switch (code) {
      case CURLE_OUT_OF_MEMORY:
        return fail(ErrorKind::kLocalResource,
                    "this process ran out of memory: not the dependency's failure");
      case CURLE_PEER_FAILED_VERIFICATION:
        return fail(ErrorKind::kTlsUntrusted, detail);
      case CURLE_WEIRD_SERVER_REPLY:
      case CURLE_UNSUPPORTED_PROTOCOL:
      case CURLE_BAD_CONTENT_ENCODING:
        outcome.cannot_improve = true;
        return fail(ErrorKind::kInvalidResponse, detail);
      case CURLE_SSL_CONNECT_ERROR:
        // A handshake the server refuses for its protocol version or cipher,
        // or a server that does not speak TLS at all, refuses it again.
        outcome.cannot_improve = detail.find("version") != std::string::npos ||
                                 detail.find("cipher") != std::string::npos ||
                                 detail.find("handshake failure") != std::string::npos;
        return fail(ErrorKind::kTransport, "TLS handshake failed: " + detail);
      case CURLE_RECV_ERROR:
      case CURLE_SEND_ERROR:
      case CURLE_GOT_NOTHING:
      case CURLE_HTTP2:
      case CURLE_PARTIAL_FILE:
        // The connection ended under the attempt; before its headers, every
        // other attempt on it ended the same way.
        outcome.connection_lost = t.connection != 0 && !t.headers_done;
        return fail(ErrorKind::kTransport, detail);
      default:
        return fail(ErrorKind::kTransport, detail);
    }
  }

  // A layer above cut the attempt short: the call's deadline, the caller, or
  // AttemptTimeout. It has been answered already; removing the handle
  // resets an HTTP/2 stream or closes an HTTP/1.1 connection, so the server
  // sees the attempt abandoned. But curl 7.88 only queues the HTTP/2
  // RST_STREAM: it goes out with the connection's next frames, and on a
  // connection nothing else uses, not until the next call (Node's server
  // kept the stream open meanwhile). So a cut transfer's connection is not
  // kept for reuse: with other transfers on it, curl keeps it for them and
  // the reset goes out with their frames or the next call's (as before);
  // alone, it closes, and the server sees the stream end with it.
  void Cut(std::uint64_t id) {
    Transfer* t = Find(id);
    if (t == nullptr) return;
    if (t->in_curl) {
      curl_easy_setopt(t->easy.get(), CURLOPT_FORBID_REUSE, 1L);
      t->forbid_reuse = true;
    }
    Finish(*t, t->attempt->CutOutcome());
  }

  void Finish(Transfer& t, AttemptOutcome&& outcome) {
    if (t.in_curl) {
      curl_multi_remove_handle(multi_, t.easy.get());
      --in_flight_;
    }
    if (t.forbid_reuse) curl_easy_setopt(t.easy.get(), CURLOPT_FORBID_REUSE, 0L);
    std::shared_ptr<Attempt> attempt = std::move(t.attempt);
    Release(t);
    // The layers above hear of this attempt (its breaker ticket is settled)
    // before the queue moves, so a breaker it opened stops the queued ones.
    attempt->Complete(std::move(outcome));
    StartQueued();
  }

  Clock& clock_;
  const Network& network_;
  Settings settings_;
  Origin origin_;
  std::shared_ptr<EventLoop> loop_;
  std::shared_ptr<CurlTls> tls_;
  bool https_;
  CURLM* multi_ = nullptr;
  std::size_t max_in_flight_;
  std::size_t in_flight_ = 0;
  bool stopped_ = false;
  // False once stopped; shared with the cancellers' tasks, which may outlive
  // the transport. Read and written on the loop thread only.
  std::shared_ptr<bool> running_ = std::make_shared<bool>(true);
  bool starting_ = false;
  bool protocol_known_ = false;
  std::vector<std::unique_ptr<Transfer>> slots_;
  std::vector<std::uint32_t> free_slots_;
  std::deque<std::uint64_t> queue_;
  Route connect_route_;
  Slist connect_to_;
  std::vector<Slist> retired_connect_to_;

  // The connections curl watches, and the nudge (see kNudgeAfter).
  std::vector<curl_socket_t> sockets_;
  std::uint64_t events_ = 0;
  std::uint64_t events_at_nudge_ = 0;
  bool nudge_armed_ = false;
  const char nudge_key_ = 0;  // its address names the nudge's deadline

  // The connections that carried a request, newest last.
  std::unordered_set<std::uint64_t> carried_;
  std::deque<std::uint64_t> carried_order_;

  // Closing idle connections; `alive_` tells a late timer the transport is gone.
  std::shared_ptr<const char> alive_ = std::make_shared<const char>(0);
  Timer idle_timer_;
  std::atomic<bool> idle_timer_armed_{false};
  // Since when the client has had no call (its clock's count), or kBusy.
  static constexpr std::int64_t kBusy = -1;
  std::atomic<std::int64_t> idle_since_{kBusy};
  const std::atomic<int>* live_calls_ = nullptr;

  // Attempts started on other threads, waiting for the loop to take them.
  std::mutex incoming_mu_;
  std::vector<std::shared_ptr<Attempt>> incoming_;
};

}  // namespace

Result<std::unique_ptr<AttemptLayer>> MakeCurlTransport(const Runtime& runtime,
                                                        const Settings& settings,
                                                        const Origin& origin,
                                                        std::shared_ptr<EventLoop> loop,
                                                        ConnectionPool** pool) {
  std::shared_ptr<CurlTls> tls;
  if (settings.tls) {
    auto made = CurlTls::Create(*settings.tls);
    if (!made) return tl::unexpected(made.error());
    tls = std::move(*made);
  }
  auto transport =
      std::make_unique<CurlTransport>(runtime, settings, origin, std::move(loop), std::move(tls));
  *pool = transport.get();
  return std::unique_ptr<AttemptLayer>(std::move(transport));
}

}  // namespace outbound::http::internal
