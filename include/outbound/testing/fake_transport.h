// SPDX-License-Identifier: Apache-2.0
// outbound/testing/fake_transport.h
//
// A transport with no socket: each attempt a client sends is answered by a
// handler, as FakeServer's are, with the same Reply script, in the
// Runtime's (fake) time. Every layer above the transport runs as it does
// over a network (retries, the breaker, timeouts, redirects, middleware,
// telemetry), so a test of those is exact and instant:
//
// example: examples/headers/testing.cc#fake-transport
//   testing::ManualClock clock;
//   testing::FakeTransport payments(clock, [](const testing::ServerRequest& r) {
//     return r.target == "/slow" ? testing::Reply::Hang() : testing::Reply::Ok("paid");
//   });
//   Runtime runtime{.clock = &clock, .transport = &payments};
//   auto client = http::Client::CreateOrThrow(runtime, settings);
//
// What a Reply does here:
//   Status/Ok, with Header, DelayHeaders    the answer (after the delay, on the clock)
//   Trailer                                 the response's trailers, once the body is whole
//   HeadersOnly                             the headers, no body
//   Hang                                    nothing, until the client cancels
//   Trickle                                 the body in pieces, on the clock
//   Reset (REFUSED_STREAM, the default)     the stream refused, unprocessed
//   Reset with another code                 the stream reset: a transport error
//   Close, ResetConnection                  the connection lost: a transport error
//   ResetAfterHeaders, ResetAfter,
//   ShortBody, TruncateChunked              the headers, then the body fails
//   Stall                                   the headers and part of the body, then nothing
// Raw HTTP/2 frames (Frames, Flood) and framing details (StatusLine,
// HeadersAsGiven) need bytes on a wire: a FakeServer plays those, and an
// exchange given one ends with kInvalidRequest saying so. Bodies are not
// decoded (Settings::gzip): a FakeServer tests that too. There is no
// connection to open: a client's Warm is ready at once and Connected true.
//
// One FakeTransport may carry several clients; it must outlive them.
// Thread-safe.
#ifndef OUTBOUND_TESTING_FAKE_TRANSPORT_H_
#define OUTBOUND_TESTING_FAKE_TRANSPORT_H_

#include <cstddef>
#include <memory>
#include <vector>

#include "outbound/clock.h"
#include "outbound/http/transport.h"
#include "outbound/testing/fake_server.h"

namespace outbound::testing {

class FakeTransport final : public http::Transport {
 public:
  // Answers each exchange with `handler`; delays and trickles run on
  // `clock`, which must be the Runtime's.
  FakeTransport(Clock& clock, Handler handler);
  ~FakeTransport() override;
  FakeTransport(const FakeTransport&) = delete;
  FakeTransport& operator=(const FakeTransport&) = delete;

  // Every request handed to the transport, in order, as a FakeServer
  // would record it over HTTP/2 (`scheme`, the fields in the order the
  // wire carries them, `host` first from :authority, header names in
  // lower case, the attempt's trace headers included, a streamed body
  // read whole); `version` is "2". A request is
  // here once its reply's DelayHeaders timer is pending and before any of
  // the answer arrives, so a test may move the clock as soon as it sees it.
  std::vector<ServerRequest> requests() const;
  std::size_t request_count() const;
  // Exchanges the client cancelled before they ended (an attempt timeout,
  // the call's deadline, the caller).
  int cancelled() const;

  std::unique_ptr<http::internal::ClientTransport> CarryFor(
      const http::internal::TransportSpec& spec) override;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace outbound::testing

#endif  // OUTBOUND_TESTING_FAKE_TRANSPORT_H_
