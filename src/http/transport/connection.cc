// SPDX-License-Identifier: Apache-2.0
#include "connection.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "h1_exchange.h"
#include "h2_session.h"

namespace outbound::http::internal::transport {
namespace {

// Bytes written to one connection per wake-up at most.
constexpr std::size_t kWriteBudget = 256 * 1024;
// One TLS record's worth per write call.
constexpr std::size_t kWriteChunk = 64 * 1024;

// Why a connection that must speak HTTP/2 (gRPC's) failed its handshake:
// the server chose another protocol, or refused ALPN's offer of h2 alone.
constexpr std::string_view kNoHttp2 =
    "the server does not speak HTTP/2 over TLS (ALPN chose no h2), and gRPC needs it";

bool LocalShortage(int error) {
  return error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM;
}

}  // namespace

Connection::Connection(std::uint64_t id, EventLoop& loop, ConnectionEvents& events, Clock& clock,
                       TlsContext* tls, std::string host, Protocol plain)
    : id_(id),
      loop_(loop),
      events_(events),
      clock_(clock),
      tls_(tls),
      plain_(plain),
      host_(std::move(host)),
      began_(clock.Now()) {}

Connection::~Connection() {
  codec_.reset();
  StopDialing();
  if (fd_ >= 0) {
    SendCloseNotify();
    loop_.Unwatch(fd_);
    close(fd_);
  }
  if (ssl_ != nullptr) SSL_free(ssl_);
}

void Connection::SendCloseNotify() {
  if (ssl_ == nullptr || tls_failed_ || SSL_is_init_finished(ssl_) != 1) return;
  SSL_shutdown(ssl_);
  ERR_clear_error();
}

bool Connection::HasRoom() const {
  return state_ == State::kOpen && !draining_ && !closing_ && !close_after_io_ && !write_failed_ &&
         waiting_.empty() && codec_->HasRoom();
}

bool Connection::Idle() const { return waiting_.empty() && (codec_ == nullptr || codec_->Idle()); }

bool Connection::Reusable() const {
  return state_ == State::kOpen && !draining_ && !write_failed_ && codec_->Reusable() &&
         !codec_->Finished();
}

bool Connection::AwaitingSettings() const {
  return state_ == State::kOpen && !codec_->Ready() && codec_->Reusable();
}

void Connection::Dial(std::vector<SocketAddress> addresses) {
  addresses_ = std::move(addresses);
  next_address_ = 0;
  state_ = State::kConnecting;
  DialNext();
}

bool Connection::DialAnother() {
  if (state_ != State::kConnecting || next_address_ >= addresses_.size()) return false;
  DialNext();
  return state_ == State::kConnecting && next_address_ < addresses_.size();
}

void Connection::DialNext() {
  while (next_address_ < addresses_.size()) {
    std::size_t index = next_address_++;
    const SocketAddress& address = addresses_[index];
    const auto* sa = reinterpret_cast<const sockaddr*>(&address.storage);
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      int error = errno;
      // Short of sockets with a dial still in progress: that one may yet
      // answer, and no other address is tried.
      if (LocalShortage(error) && !dialing_.empty()) {
        next_address_ = addresses_.size();
        return;
      }
      if (LocalShortage(error)) {
        return Fail(ErrorKind::kLocalResource,
                    std::string("this process could not open a socket (") + std::strerror(error) +
                        "): not the dependency's failure");
      }
      dial_error_ = error;  // this address's family, say: the next may do
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, sa, address.length) == 0) return Won(fd, index, /*watched=*/false);
    if (errno != EINPROGRESS) {
      dial_error_ = errno;
      close(fd);
      continue;
    }
    dialing_.push_back({fd, index});
    last_dial_began_ = clock_.Now();
    loop_.Watch(fd, EPOLLOUT, [this, fd](std::uint32_t) { DialAnswered(fd); });
    return;
  }
  if (dialing_.empty()) {
    address_ = addresses_.empty() ? SIZE_MAX : addresses_.size() - 1;
    Fail(ErrorKind::kTransport, std::string("could not connect: ") + std::strerror(dial_error_));
  }
}

void Connection::DialAnswered(int fd) {
  auto it =
      std::find_if(dialing_.begin(), dialing_.end(), [fd](const Dialing& d) { return d.fd == fd; });
  if (it == dialing_.end()) return;
  int error = 0;
  socklen_t length = sizeof error;
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
  if (error == 0) return Won(fd, it->address, /*watched=*/true);
  dial_error_ = error;
  loop_.Unwatch(fd);
  close(fd);
  dialing_.erase(it);
  DialNext();  // refused: the next address now, not after the delay
}

void Connection::Won(int fd, std::size_t address, bool watched) {
  // Watched as a dial, with its own callback: Watch() registers it anew.
  if (watched) loop_.Unwatch(fd);
  std::erase_if(dialing_, [fd](const Dialing& d) { return d.fd == fd; });
  if (!dialing_.empty() && dialing_.front().address < address) outrun_ = dialing_.front().address;
  StopDialing();
  fd_ = fd;
  address_ = address;
  watched_ = 0;
  Connected();
}

void Connection::StopDialing() {
  for (const Dialing& d : dialing_) {
    loop_.Unwatch(d.fd);
    close(d.fd);
  }
  dialing_.clear();
}

void Connection::FailToOpen(ErrorKind kind, const std::string& why) { Fail(kind, why); }

bool Connection::Carry(Exchange& exchange) {
  exchange.connection = this;
  if (state_ == State::kOpen && waiting_.empty() && codec_->HasRoom()) {
    exchange.events->Writing();
    if (!codec_->Start(exchange)) {
      exchange.connection = nullptr;
      return false;
    }
    // Written with whatever else the pool hands over in this turn: one TLS
    // record for many requests.
    if (!flush_requested_) {
      flush_requested_ = true;
      events_.ConnectionWantsFlush(*this);
    }
    return true;
  }
  waiting_.push_back(&exchange);
  return true;
}

void Connection::FlushRequested() {
  if (!flush_requested_) return;
  flush_requested_ = false;
  Flush();
}

void Connection::Cancel(Exchange& exchange) {
  exchange.connection = nullptr;
  if (auto it = std::find(waiting_.begin(), waiting_.end(), &exchange); it != waiting_.end()) {
    waiting_.erase(it);
    // Nobody waits for it to open any more: it goes on opening for the
    // attempt's retry or the next call, which take it as it is (a
    // connection that takes longer to open than an attempt lasts, three
    // round trips on a slow link, would else never open). Cut short once
    // it has been opening for kOpeningPatience, or where the pool keeps no
    // more going on so (KeepOpening), it goes with its attempt: a dial
    // into a black hole, or an HTTP/2 server that never sends its
    // SETTINGS, would hold the pool's opening slot for nothing.
    if ((opening() || AwaitingSettings()) && waiting_.empty()) {
      if (clock_.Now() - began_ >= kOpeningPatience || !events_.KeepOpening(*this)) {
        Close("the attempt it was opened for was cut short");
      } else {
        orphaned_ = true;
        // Still dialling: the dial unanswered (a black hole's SYN) has
        // the next address beside it now, not at its delay.
        DialAnother();
      }
    }
    // Open, it held back those behind (StartWaiting): they go now.
    RoomChanged();
    return;
  }
  if (codec_ == nullptr || closed()) return;
  if (!codec_->Cancel(exchange)) return Close("an attempt on it was cut short");
  Flush();
}

void Connection::Resume(Exchange& exchange) {
  if (state_ != State::kOpen) return;  // still opening: started with what the pipe has
  codec_->Resume(exchange);
  Flush();  // watches the socket again, if the codec had stopped reading
  // What TLS decrypted before reading stopped makes no socket event.
  if (state_ == State::kOpen && ssl_ != nullptr && !codec_->Held() && SSL_pending(ssl_) > 0) {
    events_.ConnectionHasMore(*this);
  }
}

void Connection::Close(const std::string& why) {
  // The goodbye is written now if the socket takes it, never waited for:
  // a full socket buffer leaves it out, as a peer that has gone would. So
  // do bytes not yet written: they would finish frames (a request's last
  // DATA, say) that the close otherwise cuts off, for an exchange that is
  // ending.
  bool goodbye = state_ == State::kOpen && !tls_failed_ && out_offset_ == out_.size();
  if (goodbye && in_io_ && Idle()) {
    // Inside a read or a flush (the last stream of a drained connection
    // ended, say): the close, with nothing on the connection to end, waits
    // for them to return, at the end of Flush.
    if (!close_after_io_) close_after_io_ = why;
    return;
  }
  if (goodbye && !in_io_) {
    closing_ = true;
    if (codec_->Closing()) Flush();
  }
  Fail(ErrorKind::kTransport, why);
}

void Connection::Drain(const std::string& why) {
  draining_ = true;
  if (Idle()) Close(why);
}

void Connection::Continue() {
  if (state_ == State::kOpen) ReadSome();  // which flushes too
}

void Connection::Fail(ErrorKind kind, const std::string& why, bool cannot_improve) {
  if (state_ == State::kClosed) return;
  closed_connecting_ = state_ == State::kConnecting;
  if (!dialing_.empty()) address_ = dialing_.front().address;
  StopDialing();
  state_ = State::kClosed;
  close_kind_ = kind;
  close_reason_ = why;
  if (fd_ >= 0) {
    SendCloseNotify();
    loop_.Unwatch(fd_);
    close(fd_);
    fd_ = -1;
  }
  watched_ = 0;
  std::vector<Exchange*> waiting;
  waiting.swap(waiting_);
  for (Exchange* exchange : waiting) {
    exchange->connection = nullptr;
    AttemptOutcome outcome = Failed(kind, why);
    outcome.cannot_improve = cannot_improve;
    outcome.not_sent = true;  // it waited for the connection to open, or for room
    outcome.connection = id_;
    events_.ExchangeEnded(*exchange, std::move(outcome));
  }
  if (codec_ != nullptr) codec_->Closed(why, cannot_improve);
  events_.ConnectionClosed(*this);
}

void Connection::Watch() {
  if (fd_ < 0) return;
  std::uint32_t wanted = 0;
  switch (state_) {
    case State::kHandshaking:
      wanted = EPOLLIN | (handshake_wants_write_ ? EPOLLOUT : 0u);
      break;
    case State::kOpen:
      // A codec whose reader is behind reads nothing until it catches up.
      wanted = (codec_->Held() ? 0u : EPOLLIN) |
               (out_offset_ < out_.size() && !write_wants_read_ ? EPOLLOUT : 0u);
      break;
    default:
      return;
  }
  if (wanted == watched_) return;
  watched_ = wanted;
  loop_.Watch(fd_, wanted, [this](std::uint32_t events) { OnReady(events); });
}

void Connection::OnReady(std::uint32_t events) {
  switch (state_) {
    case State::kHandshaking:
      return Handshake();
    case State::kOpen:
      if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) ReadSome();
      if (state_ == State::kOpen && ((events & EPOLLOUT) || write_wants_read_)) {
        write_wants_read_ = false;
        Flush();
      }
      return;
    default:
      return;
  }
}

void Connection::Connected() {
  if (tls_ == nullptr) {
    protocol_ = plain_;
    return Opened();
  }
  ssl_ = tls_->NewSession(host_, fd_, resuming_);
  if (ssl_ == nullptr) return Fail(ErrorKind::kLocalResource, "OpenSSL could not make a session");
  state_ = State::kHandshaking;
  Handshake();
}

void Connection::Handshake() {
  ERR_clear_error();
  int r = SSL_do_handshake(ssl_);
  if (r == 1) {
    const unsigned char* alpn = nullptr;
    unsigned int length = 0;
    SSL_get0_alpn_selected(ssl_, &alpn, &length);
    bool h2 = length == 2 && alpn[0] == 'h' && alpn[1] == '2';
    if (!h2 && tls_->http2_only()) {
      return Fail(ErrorKind::kTransport, std::string(kNoHttp2), /*cannot_improve=*/true);
    }
    protocol_ = h2 ? Protocol::kHttp2 : Protocol::kHttp11;
    return Opened();
  }
  int error = SSL_get_error(ssl_, r);
  if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
    handshake_wants_write_ = error == SSL_ERROR_WANT_WRITE;
    return Watch();
  }
  HandshakeFailure failure = DescribeHandshakeFailure(ssl_, error);
  if (failure.no_application_protocol && tls_->http2_only()) failure.message = kNoHttp2;
  if (resuming_) {
    // Perhaps the session offered was refused, not the connection: the
    // next one offers none (a certificate not trusted came from a full
    // handshake, and will again).
    tls_->Forget(host_);
    if (failure.kind != ErrorKind::kTlsUntrusted) failure.cannot_improve = false;
  }
  Fail(failure.kind, failure.message, failure.cannot_improve);
}

void Connection::Opened() {
  state_ = State::kOpen;
  if (protocol_ == Protocol::kHttp2) {
    codec_ = std::make_unique<H2Session>(static_cast<CodecEvents&>(*this), id_, clock_);
  } else {
    codec_ = std::make_unique<H1Exchange>(static_cast<CodecEvents&>(*this), id_, clock_);
  }
  StartWaiting();
  if (closed()) return;
  Flush();
  if (closed()) return;
  Watch();
  TellRoom();
}

void Connection::StartWaiting() {
  // Cancelled while the connection opened (the cancel's task is queued
  // behind this one on the loop): nothing of it may be written. It stays
  // in waiting_, at the front, until that task takes it out (Cancel).
  std::size_t cancelled = 0;
  while (waiting_.size() > cancelled && state_ == State::kOpen && codec_->HasRoom()) {
    Exchange* exchange = waiting_[cancelled];
    if (exchange->events->Cancelled()) {
      ++cancelled;
      continue;
    }
    waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(cancelled));
    exchange->events->Writing();
    if (!codec_->Start(*exchange)) {
      exchange->connection = nullptr;
      AttemptOutcome outcome =
          Failed(ErrorKind::kTransport, "the connection took no more requests");
      outcome.unprocessed = true;
      events_.ExchangeEnded(*exchange, std::move(outcome));
    }
  }
  // What still waits goes back, unsent, to go at once on another
  // connection: from one that will take no new stream (a GOAWAY, spent
  // stream ids, no answer to its PING), else it would wait for this one's
  // last stream to end and then fail; and from one that opened as
  // HTTP/1.1 (a burst carried to it while its protocol was unknown),
  // else the burst would go one at a time where it may have a connection
  // each; but for a body that can be read only once, which may wait its
  // turn here and may not be sent again.
  if (waiting_.empty() || state_ != State::kOpen) return;
  bool going_away = !codec_->Reusable();
  if (!going_away && protocol_ != Protocol::kHttp11) return;
  std::vector<Exchange*> waiting;
  waiting.swap(waiting_);
  for (Exchange* exchange : waiting) {
    const CallRequest& request = *exchange->request;
    if (!going_away && !request.replayable && request.body_source.pipe == nullptr) {
      waiting_.push_back(exchange);
      continue;
    }
    exchange->connection = nullptr;
    AttemptOutcome outcome =
        Failed(ErrorKind::kTransport,
               going_away ? "the connection took no more requests (it is going away)"
                          : "the connection is HTTP/1.1 and busy");
    outcome.unprocessed = true;
    outcome.connection_retired = true;
    outcome.not_sent = true;
    outcome.connection = id_;
    events_.ExchangeEnded(*exchange, std::move(outcome));
  }
}

void Connection::ReadSome() {
  in_io_ = true;
  std::size_t total = 0;
  std::string ended;  // why the connection ends, if it does
  // The server closed it in order (a FIN; TLS: its close_notify), which
  // alone may end a body that runs to the close (RFC 9112 §9.8): a reset
  // or a TLS end without close_notify cuts such a body short.
  bool orderly_close = false;
  bool cannot_improve = false;  // the server refused the client's certificate
  while (state_ == State::kOpen && total < kReadBudget) {
    std::size_t n = 0;
    if (ssl_ != nullptr) {
      // The error queue is emptied after every failure, so it is empty here.
      int r = SSL_read(ssl_, buffer_.data(), static_cast<int>(buffer_.size()));
      if (r <= 0) {
        int error = SSL_get_error(ssl_, r);
        if (error == SSL_ERROR_WANT_READ) break;
        if (error == SSL_ERROR_WANT_WRITE) {
          flush_again_ = true;
          break;
        }
        if (error == SSL_ERROR_ZERO_RETURN) {
          orderly_close = true;
          ended = "the server closed the connection";
        } else if (error == SSL_ERROR_SYSCALL && errno != 0) {
          tls_failed_ = true;
          ended = std::string("the connection failed: ") + std::strerror(errno);
        } else {
          tls_failed_ = true;
          unsigned long e = ERR_peek_error();
          const char* reason = e != 0 ? ERR_reason_error_string(e) : nullptr;
          ended = reason != nullptr ? std::string("the connection ended: ") + reason
                                    : "the server closed the connection";
          if (std::string refused = DescribeCertificateRefusal(ssl_, e); !refused.empty()) {
            ended = std::move(refused);
            cannot_improve = true;
          }
          ERR_clear_error();
        }
        break;
      }
      n = static_cast<std::size_t>(r);
    } else {
      ssize_t r = recv(fd_, buffer_.data(), buffer_.size(), 0);
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
      if (r <= 0) {
        orderly_close = r == 0;
        ended = r == 0 ? "the server closed the connection"
                       : std::string("the connection failed: ") + std::strerror(errno);
        break;
      }
      n = static_cast<std::size_t>(r);
    }
    total += n;
    if (!codec_->Received(buffer_.data(), n)) {
      ended = codec_->error().empty() ? "the connection cannot go on" : codec_->error();
      break;
    }
    // The answer is whole: another read would only find the socket empty
    // (a system call for nothing). Anything that comes wakes the loop again.
    if (codec_->Quiet() || codec_->Held()) break;
  }
  in_io_ = false;
  if (state_ != State::kOpen) return;
  if (!ended.empty()) {
    if (tls_ == nullptr && protocol_ == Protocol::kHttp2 && !codec_->Ready()) {
      ended +=
          " before its HTTP/2 SETTINGS (HTTP/2 with prior knowledge: does the server speak "
          "only HTTP/1.1?)";
    }
    if (orderly_close) codec_->PeerClosed();
    return Fail(ErrorKind::kTransport, ended, cannot_improve);
  }
  if (total >= kReadBudget && ssl_ != nullptr && SSL_pending(ssl_) > 0) {
    events_.ConnectionHasMore(*this);
  }
  Flush();
}

void Connection::Flush() {
  if (in_io_) {
    flush_again_ = true;
    return;
  }
  if (state_ != State::kOpen) return;
  in_io_ = true;
  std::size_t written = 0;
  std::string failed;
  bool socket_failed = false;  // the socket refused a write, not the codec its bytes
  do {
    flush_again_ = false;
    while (written < kWriteBudget) {
      if (out_offset_ == out_.size()) {
        out_.clear();
        out_offset_ = 0;
        if (!codec_->Produce(out_)) {
          failed = codec_->error();
          break;
        }
        if (out_.empty() || state_ != State::kOpen) break;
      }
      std::size_t chunk = std::min(out_.size() - out_offset_, kWriteChunk);
      if (ssl_ != nullptr) {
        int r = SSL_write(ssl_, out_.data() + out_offset_, static_cast<int>(chunk));
        if (r <= 0) {
          int error = SSL_get_error(ssl_, r);
          if (error == SSL_ERROR_WANT_WRITE) break;
          if (error == SSL_ERROR_WANT_READ) {
            write_wants_read_ = true;
            break;
          }
          tls_failed_ = true;
          socket_failed = error == SSL_ERROR_SYSCALL;
          failed = error == SSL_ERROR_SYSCALL && errno != 0
                       ? std::string("the connection failed: ") + std::strerror(errno)
                       : "the connection failed while writing";
          ERR_clear_error();
          break;
        }
        out_offset_ += static_cast<std::size_t>(r);
        written += static_cast<std::size_t>(r);
      } else {
        ssize_t r = send(fd_, out_.data() + out_offset_, chunk, MSG_NOSIGNAL);
        if (r < 0) {
          if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
          socket_failed = true;
          failed = std::string("the connection failed: ") + std::strerror(errno);
          break;
        }
        out_offset_ += static_cast<std::size_t>(r);
        written += static_cast<std::size_t>(r);
      }
    }
  } while (flush_again_ && failed.empty() && state_ == State::kOpen && written < kWriteBudget);
  in_io_ = false;
  if (state_ != State::kOpen || closing_) return;  // closing: Close goes on
  if (!failed.empty()) {
    // A write the socket refused: the server closed or reset the
    // connection, maybe after answering. One that answers before it has
    // read a request's body (a 413) closes as the client still writes it,
    // and its answer, in the socket already, is the exchange's (RFC 9112
    // §9.5), not this write's error. So what arrived is read first, once,
    // the connection taking nothing new meanwhile; a write failing again
    // then fails it. Over TLS only after a system call's failure: OpenSSL 3
    // still reads what came before it, never after a TLS protocol error.
    if (socket_failed && !std::exchange(write_failed_, true)) ReadSome();
    if (state_ == State::kOpen) Fail(ErrorKind::kTransport, failed);
    return;
  }
  if (close_after_io_) return Close(*std::exchange(close_after_io_, std::nullopt));
  if (codec_->Finished()) {
    return Fail(ErrorKind::kTransport,
                codec_->error().empty() ? "the HTTP/2 session ended (GOAWAY)" : codec_->error());
  }
  Watch();
  if (written >= kWriteBudget) events_.ConnectionHasMore(*this);  // the rest on a later turn
}

void Connection::ExchangeEnded(Exchange& exchange, AttemptOutcome&& outcome) {
  exchange.connection = nullptr;
  events_.ExchangeEnded(exchange, std::move(outcome));
}

void Connection::RoomChanged() {
  if (state_ != State::kOpen) return;
  StartWaiting();
  if (state_ != State::kOpen) return;
  Flush();
  if (state_ == State::kOpen) TellRoom();
}

void Connection::TellRoom() {
  if (!ready_told_ && !AwaitingSettings()) {
    ready_told_ = true;
    events_.ConnectionReady(*this);
    if (state_ != State::kOpen) return;
  }
  events_.ConnectionHasRoom(*this);
}

}  // namespace outbound::http::internal::transport
