// SPDX-License-Identifier: Apache-2.0
// One connection to the origin, on the client's event loop: a socket,
// TLS when the origin is https, and a codec (HTTP/2 or HTTP/1.1, as ALPN
// decided). It dials, shakes hands, then moves bytes between the socket
// and the codec, and does a bounded amount of work per wake-up
// (kReadBudget), so no peer can hold the loop. Every rule about sockets
// lives here: descriptors the process cannot get are kLocalResource, not
// the dependency's failure; nothing is read or written after the
// connection is closed. Internal.
#ifndef OUTBOUND_SRC_HTTP_TRANSPORT_CONNECTION_H_
#define OUTBOUND_SRC_HTTP_TRANSPORT_CONNECTION_H_

#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../event_loop.h"
#include "codec.h"
#include "outbound/clock.h"
#include "tls.h"

namespace outbound::http::internal::transport {

// Bytes read from one connection per wake-up at most; the loop serves
// everything else before it reads more.
inline constexpr std::size_t kReadBudget = 256 * 1024;

// How long a dial goes unanswered before the name's next address is dialled
// beside it (RFC 8305 §5's Connection Attempt Delay, its recommended
// 250 ms): a dead first address costs this much, not the attempt.
inline constexpr Duration kConnectionAttemptDelay = std::chrono::milliseconds(250);

// How long a connection goes on opening for nobody, once the attempt it was
// opened for was cut short (Connection::orphaned), counted from when it
// began to open; as Go's Transport bounds the TLS handshake of a dial its
// request gave up on. A slow link opens well within it.
inline constexpr Duration kOpeningPatience = std::chrono::seconds(10);

// One address to dial.
struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  friend bool operator==(const SocketAddress& a, const SocketAddress& b) {
    return a.length == b.length && std::memcmp(&a.storage, &b.storage, a.length) == 0;
  }
};

// What a connection tells the pool. On the loop thread.
class ConnectionEvents {
 public:
  virtual void ExchangeEnded(Exchange& exchange, AttemptOutcome&& outcome) = 0;
  // The connection became usable, once: open and, for HTTP/2, the server's
  // SETTINGS received. ConnectionHasRoom follows.
  virtual void ConnectionReady(Connection& connection) = 0;
  // The connection can take exchanges (or more of them) now.
  virtual void ConnectionHasRoom(Connection& connection) = 0;
  // The connection is closed; every exchange on it has ended. The pool
  // destroys it later, outside its own call stack.
  virtual void ConnectionClosed(Connection& connection) = 0;
  // Work left over from a wake-up: the pool calls Continue() soon.
  virtual void ConnectionHasMore(Connection& connection) = 0;
  // Requests were queued on the connection: the pool calls
  // FlushRequested() once it has handed over what it can in this turn.
  virtual void ConnectionWantsFlush(Connection& connection) = 0;
  // The last attempt waiting for the connection to open was cut short:
  // whether it goes on opening for the next (Connection::orphaned). If so,
  // the pool closes it once it has been opening for kOpeningPatience.
  virtual bool KeepOpening(const Connection& connection) = 0;

 protected:
  ~ConnectionEvents() = default;
};

class Connection final : private CodecEvents {
 public:
  enum class State { kResolving, kConnecting, kHandshaking, kOpen, kClosed };
  enum class Protocol { kUnknown, kHttp11, kHttp2 };

  // `tls` null for plain http, which speaks `plain` (HTTP/1.1, or HTTP/2
  // with prior knowledge). Starts in kResolving: Dial() or FailToOpen()
  // next.
  Connection(std::uint64_t id, EventLoop& loop, ConnectionEvents& events, Clock& clock,
             TlsContext* tls, std::string host, Protocol plain = Protocol::kHttp11);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  std::uint64_t id() const { return id_; }
  State state() const { return state_; }
  // The address it connected to; or, closed while connecting, the oldest
  // dial still unanswered then (the last one tried if none was); null
  // before that.
  const SocketAddress* address() const {
    return address_ < addresses_.size() ? &addresses_[address_] : nullptr;
  }
  // The address of the oldest dial still unanswered when a later one won
  // the race (as a black hole's SYN goes unanswered); null if none.
  const SocketAddress* outrun() const {
    return outrun_ < addresses_.size() ? &addresses_[outrun_] : nullptr;
  }
  // Whether it closed while still connecting to address(): its SYN
  // unanswered (or refused), as a black hole's is.
  bool closed_connecting() const { return closed_connecting_; }
  Protocol protocol() const { return protocol_; }
  bool opening() const { return state_ < State::kOpen; }
  bool closed() const { return state_ == State::kClosed; }
  // Whether the connection, open, can take an exchange now.
  bool HasRoom() const;
  // Whether it carries no exchange (none waiting for it either).
  bool Idle() const;
  // Whether it is worth keeping once idle.
  bool Reusable() const;
  // Until when, idle, it is worth keeping by the server's word (Codec's).
  std::optional<TimePoint> KeptUntil() const {
    return codec_ != nullptr ? codec_->KeptUntil() : std::nullopt;
  }
  // Whether Drain() was called.
  bool draining() const { return draining_; }
  // HTTP/2 and still waiting for the server's SETTINGS.
  bool AwaitingSettings() const;
  // Still opening, for no attempt: the one it was opened for was cut
  // short, and it goes on opening for that attempt's retry or the next
  // call (Cancel), until kOpeningPatience from when it began.
  bool orphaned() const {
    return orphaned_ && waiting_.empty() && (opening() || AwaitingSettings()) && !closed() &&
           !closing_ && !draining_ && !write_failed_ && !close_after_io_;
  }
  // Whether it has been usable (see ConnectionEvents::ConnectionReady).
  bool was_ready() const { return ready_told_; }
  // Once closed: why, as the exchanges on it were told.
  ErrorKind close_kind() const { return close_kind_; }
  const std::string& close_reason() const { return close_reason_; }

  // Connects to the first of `addresses` that accepts: dials them in
  // order, the next at once when one is refused, and the next beside
  // those still unanswered at each DialAnother (Happy Eyeballs, RFC 8305
  // §5); the first to answer is kept and the others closed.
  void Dial(std::vector<SocketAddress> addresses);
  // The pool's kConnectionAttemptDelay passed: dials the next address
  // beside those unanswered. Whether an address is still left to dial at
  // the next delay (false: nothing more to time).
  bool DialAnother();
  // When the latest dial began, on the clock: the next address waits
  // kConnectionAttemptDelay from it, whether that dial began on the
  // delay or because the one before it was refused (RFC 8305 §5).
  TimePoint last_dial_began() const { return last_dial_began_; }
  // When it began to open (its name's resolution included).
  TimePoint began() const { return began_; }
  // The connection could not be opened: its waiting exchanges end.
  void FailToOpen(ErrorKind kind, const std::string& why);

  // Carries `exchange`: started at once when there is room, or when the
  // connection opens. False if the codec refused it (nothing was sent).
  [[nodiscard]] bool Carry(Exchange& exchange);
  // The pool ended `exchange` (cut short): the connection forgets it.
  void Cancel(Exchange& exchange);
  // The exchange's piped body has bytes, or its end: written now.
  void Resume(Exchange& exchange);
  // Closes the connection, which the client no longer wants; the
  // exchanges on it end with `why`. An open connection says goodbye first
  // as its protocol has it (Codec::Closing: HTTP/2's GOAWAY), then TLS's
  // close_notify. A connection that failed is not closed this way.
  void Close(const std::string& why);
  // Takes no new exchange from now on, as after a server's GOAWAY: it has
  // no room and is not reusable, so the pool closes it once idle (at once
  // if it is idle now, with `why`); what it carries finishes normally.
  void Drain(const std::string& why);
  // Goes on with the work a wake-up left (see ConnectionHasMore).
  void Continue();
  // Writes what Carry queued (see ConnectionWantsFlush).
  void FlushRequested();

 private:
  // Dials the next address that a socket can be made for; fails the
  // connection if none is left and no dial is in progress.
  void DialNext();
  // A dial in progress on `fd` answered: it won, or it failed and the
  // next address is dialled at once.
  void DialAnswered(int fd);
  // The dial on `fd` (watched by the loop or not) won: the others close.
  void Won(int fd, std::size_t address, bool watched);
  // Closes every dial in progress.
  void StopDialing();
  void OnReady(std::uint32_t events);
  void Connected();
  void Handshake();
  void Opened();
  void ReadSome();
  void Flush();
  void Watch();
  // Starts what waited for the connection to open (or for room).
  void StartWaiting();
  void Fail(ErrorKind kind, const std::string& why, bool cannot_improve = false);
  // TLS: sends the close_notify alert RFC 8446 §6.1 asks for before the
  // write side closes, so the server can tell this end from a cut. Once,
  // without waiting for the server's; never before the handshake ended or
  // after a fatal TLS error (OpenSSL's rule); a full socket buffer drops it.
  void SendCloseNotify();
  // Tells the pool there is room, and the first time that it is ready.
  void TellRoom();

  // CodecEvents
  void ExchangeEnded(Exchange& exchange, AttemptOutcome&& outcome) override;
  void RoomChanged() override;

  std::uint64_t id_;
  EventLoop& loop_;
  ConnectionEvents& events_;
  Clock& clock_;
  TlsContext* tls_;
  Protocol plain_;
  std::string host_;
  State state_ = State::kResolving;
  Protocol protocol_ = Protocol::kUnknown;
  int fd_ = -1;
  SSL* ssl_ = nullptr;
  std::unique_ptr<Codec> codec_;
  std::vector<Exchange*> waiting_;
  std::vector<SocketAddress> addresses_;
  std::size_t next_address_ = 0;
  // A connect in progress to addresses_[address], on `fd`: several race
  // while the first goes unanswered. The winner becomes fd_.
  struct Dialing {
    int fd;
    std::size_t address;
  };
  std::vector<Dialing> dialing_;    // oldest first
  TimePoint last_dial_began_{};     // last_dial_began()
  std::size_t address_ = SIZE_MAX;  // address()'s index
  std::size_t outrun_ = SIZE_MAX;   // outrun()'s index
  int dial_error_ = 0;              // why the last dial failed, for the message
  bool closed_connecting_ = false;
  std::uint32_t watched_ = 0;
  bool handshake_wants_write_ = false;
  bool tls_failed_ = false;        // a read or write ended in a fatal TLS error
  TimePoint began_;                // when it began to open
  bool orphaned_ = false;          // it has gone on opening for nobody (Cancel)
  bool resuming_ = false;          // its handshake offered a session kept from an earlier one
  bool write_wants_read_ = false;  // TLS: SSL_write needs a read first
  bool write_failed_ = false;      // the socket refused a write: what came is read, then it fails
  bool in_io_ = false;             // a read or flush is on the stack
  bool flush_again_ = false;
  bool flush_requested_ = false;
  bool ready_told_ = false;
  bool draining_ = false;
  bool closing_ = false;  // Close is writing the goodbye: Flush leaves the close to it
  // Close was asked for inside a read or flush, with nothing on the
  // connection: why, for the end of Flush.
  std::optional<std::string> close_after_io_;
  ErrorKind close_kind_ = ErrorKind::kTransport;
  std::string close_reason_;
  std::string out_;
  std::size_t out_offset_ = 0;
  std::array<std::uint8_t, 16 * 1024> buffer_;
};

}  // namespace outbound::http::internal::transport

#endif  // OUTBOUND_SRC_HTTP_TRANSPORT_CONNECTION_H_
