// SPDX-License-Identifier: Apache-2.0
// nginx (Debian's nginx-light, with its echo module), run for one test as a
// child process in the foreground, one process, from a configuration written
// for the test into a directory of its own: an HTTPS server on loopback
// whose every request is a line of its access log, read back by the test.
//
//   NginxPeer nginx(files, {.http2 = true, .keepalive_requests = 10});
//   network.Add("payments", 8443, "127.0.0.1", nginx.port());
//   ...
//   EXPECT_EQ(nginx.WaitForRequests(200).size(), 200);
//
// Locations: `/` answers 200 with "ok"; `/echo` answers with the request's
// body; `/big` with a file of `big_bytes` bytes. For gRPC clients:
// `/peer.Down/*` is nginx's documented gRPC error page (204, grpc-status
// 14, grpc-message "unavailable"); `/peer.Html/*` a 200 text/html page;
// `/peer.Gone/*` a gRPC proxy whose upstream refuses it (nginx's own 502
// page).
//
// nginx is required: when it cannot be started the constructor throws, so
// the test fails loudly rather than skipping (Debian package nginx-light).
// The destructor stops and reaps it and removes its directory.
//
// Not thread-safe: one thread uses an NginxPeer.
#ifndef OUTBOUND_TESTS_PEERS_NGINX_PEER_H_
#define OUTBOUND_TESTS_PEERS_NGINX_PEER_H_

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "node_peer.h"

namespace outbound::peers {

struct NginxOptions {
  // ALPN offers h2 (and http/1.1) when true; http/1.1 only when false.
  bool http2 = true;
  // Requests served on one connection before nginx ends it (a GOAWAY on
  // HTTP/2, `Connection: close` on HTTP/1.1).
  int keepalive_requests = 1000;
  // http2_max_concurrent_streams.
  int max_concurrent_streams = 128;
  // The size of /big (zeros).
  std::size_t big_bytes = 2 << 20;
  // ssl_protocols ("TLSv1.2", "TLSv1.3"); empty: nginx's default.
  std::string tls_protocols;
};

// What nginx serves at /text (text/plain, gzip-coded when the request
// accepts gzip): 64 KiB of numbered lines.
std::string NginxText();

// One line of the access log.
struct NginxRequest {
  std::uint64_t connection = 0;  // nginx's connection serial number
  std::string method;
  std::string uri;
  std::string body;  // what /echo read
  int status = 0;
  bool tls_resumed = false;  // $ssl_session_reused: its connection resumed a TLS session
};

class NginxPeer {
 public:
  NginxPeer(const PeerFiles& files, NginxOptions options);
  ~NginxPeer();
  NginxPeer(const NginxPeer&) = delete;
  NginxPeer& operator=(const NginxPeer&) = delete;

  std::uint16_t port() const { return port_; }

  // The access log once it holds at least `count` requests and has not
  // grown for 100 ms (nginx writes a line after the answer has gone), or
  // what it holds after `limit`.
  std::vector<NginxRequest> WaitForRequests(std::size_t count,
                                            std::chrono::seconds limit = std::chrono::seconds(10));

 private:
  std::vector<NginxRequest> ReadLog() const;
  void Stop();

  std::string dir_;
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
};

}  // namespace outbound::peers

#endif  // OUTBOUND_TESTS_PEERS_NGINX_PEER_H_
