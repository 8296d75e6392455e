// SPDX-License-Identifier: Apache-2.0
// outbound/testing/black_hole.h
//
// A port on loopback where a connection is never accepted: a dependency
// whose host has gone silent. The socket listens with a queue of one and
// the queue is kept full, so the kernel drops every further SYN and a
// client's connect() waits until it gives up on its own (minutes), or its
// attempt timeout ends it. No root, no firewall rule, no network namespace.
//
// example: examples/headers/testing.cc#black-hole
//   auto hole = testing::BlackHole::Start();
//   network.Add("payments", 8443, "127.0.0.1", (*hole)->port());
//   auto call = client->SendAsync(http::Request::Get("/"));   // dials, and waits
//   while ((*hole)->dials() == 0) std::this_thread::yield();  // it has dialled
//   clock.Advance(5s);                                        // AttemptTimeout
//
// Linux only (it relies on SYNs to a full accept queue being dropped, which
// is Linux's behaviour with tcp_abort_on_overflow off, the default).
// Destroying it closes its sockets; connects still waiting then fail.
#ifndef OUTBOUND_TESTING_BLACK_HOLE_H_
#define OUTBOUND_TESTING_BLACK_HOLE_H_

#include <cstdint>
#include <memory>

#include "outbound/error.h"

namespace outbound::testing {

class BlackHole {
 public:
  // Listens on 127.0.0.1 on a port of the OS's choosing and fills the
  // queue. Fails (kTransport) if a connect is still accepted afterwards.
  [[nodiscard]] static Result<std::unique_ptr<BlackHole>> Start();
  ~BlackHole();
  BlackHole(const BlackHole&) = delete;
  BlackHole& operator=(const BlackHole&) = delete;

  std::uint16_t port() const { return port_; }

  // How many connects wait at the hole now (IPv4 sockets of this network
  // namespace in SYN_SENT to its port): a test that moves a fake clock
  // through a call's deadline waits for one first, so that the call has
  // handed its attempt to a connection by then (a call that ends before
  // it dials makes none: wait for either). Reads /proc/net/tcp; 0 if it
  // cannot.
  int dials() const;

 private:
  BlackHole() = default;
  int listener_ = -1;
  int filler_ = -1;  // the connection that fills the queue
  std::uint16_t port_ = 0;
};

}  // namespace outbound::testing

#endif  // OUTBOUND_TESTING_BLACK_HOLE_H_
