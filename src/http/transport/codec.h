// SPDX-License-Identifier: Apache-2.0
// What a connection speaks once it is open: HTTP/2 (H2Session) or
// HTTP/1.1 (H1Exchange). A codec turns exchanges into bytes to write and
// bytes read into responses; it does no I/O. Internal.
#ifndef OUTBOUND_SRC_HTTP_TRANSPORT_CODEC_H_
#define OUTBOUND_SRC_HTTP_TRANSPORT_CODEC_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "exchange.h"
#include "outbound/clock.h"

namespace outbound::http::internal::transport {

// What a codec tells its connection, once nghttp2 or Beast has returned.
class CodecEvents {
 public:
  // The exchange ended (the codec no longer knows it).
  virtual void ExchangeEnded(Exchange& exchange, AttemptOutcome&& outcome) = 0;
  // The connection may take more exchanges now (or fewer).
  virtual void RoomChanged() = 0;

 protected:
  ~CodecEvents() = default;
};

class Codec {
 public:
  virtual ~Codec() = default;
  // Whether the protocol is ready for exchanges (HTTP/2: the server's
  // first SETTINGS frame arrived, so its stream limit is known).
  virtual bool Ready() const { return true; }
  // Whether the connection may carry one more exchange now.
  virtual bool HasRoom() const = 0;
  // Whether the connection is not carrying any exchange.
  virtual bool Idle() const = 0;
  // Whether the connection is worth keeping for later exchanges.
  virtual bool Reusable() const = 0;
  // Until when, idle, it is worth keeping by the server's word (HTTP/1.1:
  // the last answer's Keep-Alive timeout, less a margin; HTTP/2: while a
  // probe PING may yet be answered); none: as long as the client likes.
  virtual std::optional<TimePoint> KeptUntil() const { return std::nullopt; }
  // Takes an exchange (HasRoom() was true): its request is queued for
  // writing. False if it cannot (nothing of it was sent).
  [[nodiscard]] virtual bool Start(Exchange& exchange) = 0;
  // The pool has ended the exchange (cut short): the codec forgets it and
  // tells the server as its protocol allows. Returns false if the
  // connection must close for it (HTTP/1.1: the response would still come).
  virtual bool Cancel(Exchange& exchange) = 0;
  // The exchange's piped body (Request::StreamBodyFromPipe), which the
  // codec found empty, has bytes or its end: the codec reads it again at
  // its next Produce. Or its ReceiveWindow opened: HTTP/2 acknowledges
  // what it held back.
  virtual void Resume(Exchange& /*exchange*/) {}
  // Bytes read from the connection. False if the connection cannot go on
  // (a protocol error, a flood); the codec has said why in `error`.
  virtual bool Received(const std::uint8_t* data, std::size_t size) = 0;
  // Whether nothing the codec asked for can be on its way now (HTTP/1.1:
  // no request written that awaits its response), so a read now would find
  // nothing it wants: the connection stops reading until the socket is
  // readable again.
  virtual bool Quiet() const { return false; }
  // Whether the codec wants nothing read for now: HTTP/1.1, the answer
  // streams to a sink whose reader is behind (ReceiveWindow). Resume says
  // when that may have changed.
  virtual bool Held() const { return false; }
  // The peer closed its side (an orderly end of the stream).
  virtual void PeerClosed() = 0;
  // Appends what is to be written to `out`; false if it cannot go on.
  virtual bool Produce(std::string& out) = 0;
  // Whether the protocol has ended the connection (HTTP/2: GOAWAY, and no
  // stream left): it is closed.
  virtual bool Finished() const = 0;
  // The client is about to close the connection by its own choice (idle,
  // aged, drained, the client going): the codec queues what its protocol
  // says then, for Produce to hand over before the close, and nothing of
  // any exchange after it. HTTP/2: GOAWAY with NO_ERROR (RFC 9113 §6.8),
  // so the server can tell a graceful end from a lost connection; HTTP/1.1
  // has nothing to say. Returns whether it queued anything.
  virtual bool Closing() { return false; }
  // The connection is gone (`why`): every exchange still on it ends, each
  // reported to the pool with what is known of it; with `cannot_improve`
  // (the server refused the client's certificate) each unanswered one is
  // final: no other connection would fare better.
  virtual void Closed(const std::string& why, bool cannot_improve) = 0;
  // Why the codec ended the connection, when Received or Produce said so.
  const std::string& error() const { return error_; }

 protected:
  std::string error_;
};

}  // namespace outbound::http::internal::transport

#endif  // OUTBOUND_SRC_HTTP_TRANSPORT_CODEC_H_
