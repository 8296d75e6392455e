// SPDX-License-Identifier: Apache-2.0
// Between the client's dispatcher (dispatcher.h) and what carries its
// exchanges over the wire (the native connection pool, transport/pool.h):
// the dispatcher decides when an exchange goes, the carrier on which
// connection. Both on the client's event loop. Internal.
#ifndef OUTBOUND_SRC_HTTP_CARRIER_H_
#define OUTBOUND_SRC_HTTP_CARRIER_H_

#include <optional>
#include <string>

#include "transport/exchange.h"

namespace outbound::http::internal {

// What the carrier tells the dispatcher. On the loop thread.
class CarrierEvents {
 public:
  // The exchange is over (ended by its connection).
  virtual void Ended(transport::Exchange& exchange, AttemptOutcome&& outcome) = 0;
  // The carrier may have room for more (a connection opened, freed a
  // stream, or closed).
  virtual void RoomMade() = 0;
  // A connection became usable (see Carrier::Ready).
  virtual void ConnectionReady() = 0;
  // A connection closed before it was ever usable, and no other is open or
  // opening: `error` says why (refused, no route, an untrusted
  // certificate, a server that does not speak the protocol).
  virtual void ConnectionFailed(const Error& error) = 0;

 protected:
  ~CarrierEvents() = default;
};

// What the dispatcher hands exchanges to: the native transport's
// connection pool. On the loop thread only.
class Carrier {
 public:
  virtual ~Carrier() = default;
  // Why no exchange can reach the dependency, if none can (the Runtime's
  // network has no route to it). Asked before each exchange is queued; a
  // carrier with a connection open or opening answers none.
  virtual std::optional<std::string> Unreachable() const = 0;
  // Whether an exchange handed over now goes at once: a connection has
  // room for it, or one may be opened for it. It may start learning where
  // the dependency is (a name resolved once more).
  virtual bool HasRoom() = 0;
  // Takes the exchange, which stays the dispatcher's. False if the
  // connection took no more: the exchange was not sent.
  virtual bool Carry(transport::Exchange& exchange) = 0;
  // Cancels an exchange it carries: an HTTP/2 stream reset, an HTTP/1.1
  // connection closed.
  virtual void Cancel(transport::Exchange& exchange) = 0;
  // Bytes (or the end) came for the exchange's piped request body, which
  // its transport found empty: it reads on and writes.
  virtual void Resume(transport::Exchange& exchange) = 0;
  // Writes the requests handed over since the last Flush.
  virtual void Flush() = 0;
  // Whether a connection is usable now: open and, for HTTP/2, the
  // server's SETTINGS received.
  virtual bool Ready() const = 0;
  // Opens a connection now unless one is open or opening; what becomes of
  // it is told as ConnectionReady or ConnectionFailed.
  virtual void Warm() = 0;
  // Closes the connections that carry nothing, or all of them.
  virtual void CloseIdle(const std::string& why) = 0;
  virtual void CloseAll(const std::string& why) = 0;
};

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_CARRIER_H_
