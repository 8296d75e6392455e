// SPDX-License-Identifier: Apache-2.0
#include "outbound/testing/black_hole.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

namespace outbound::testing {
namespace {

sockaddr_in Loopback(std::uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

tl::unexpected<Error> SystemFailure(const char* what) {
  return Fail(ErrorKind::kTransport,
              std::string("BlackHole: ") + what + ": " + std::strerror(errno));
}

}  // namespace

Result<std::unique_ptr<BlackHole>> BlackHole::Start() {
  std::unique_ptr<BlackHole> hole(new BlackHole());
  hole->listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (hole->listener_ < 0) return SystemFailure("socket");
  sockaddr_in addr = Loopback(0);
  if (bind(hole->listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return SystemFailure("bind");
  }
  // A backlog of 0: the accept queue holds one connection and is then full.
  if (listen(hole->listener_, 0) != 0) return SystemFailure("listen");
  socklen_t len = sizeof addr;
  if (getsockname(hole->listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return SystemFailure("getsockname");
  }
  hole->port_ = ntohs(addr.sin_port);

  // The filler: connected by the kernel, never accepted, so the queue stays full.
  hole->filler_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (hole->filler_ < 0) return SystemFailure("socket");
  sockaddr_in to = Loopback(hole->port_);
  if (connect(hole->filler_, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    return SystemFailure("connect the filler");
  }

  // Proof: one more connect must not complete. Its SYN is dropped; a
  // loopback handshake that could complete does so within the connect call
  // or a moment after, so 100 ms of silence is an answer, not a guess.
  int probe = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (probe < 0) return SystemFailure("socket");
  int rc = connect(probe, reinterpret_cast<sockaddr*>(&to), sizeof to);
  bool accepted = rc == 0;
  if (rc != 0 && errno == EINPROGRESS) {
    pollfd p{probe, POLLOUT, 0};
    accepted = poll(&p, 1, 100) > 0;
  }
  close(probe);
  if (accepted) return Fail(ErrorKind::kTransport, "BlackHole: a connect was still accepted");
  return hole;
}

int BlackHole::dials() const {
  // A row of /proc/net/tcp: "sl: local_address rem_address st ...", each
  // address the hex of its bytes as the kernel holds them, then the port;
  // state 02 is SYN_SENT.
  char to[32];
  std::snprintf(to, sizeof to, "%08X:%04X", htonl(INADDR_LOOPBACK), port_);
  std::ifstream table("/proc/net/tcp");
  std::string line;
  std::getline(table, line);  // the heading
  int waiting = 0;
  char remote[64];
  char state[8];
  while (std::getline(table, line)) {
    if (std::sscanf(line.c_str(), "%*s %*s %63s %7s", remote, state) == 2 &&
        std::strcmp(remote, to) == 0 && std::strcmp(state, "02") == 0) {
      ++waiting;
    }
  }
  return waiting;
}

BlackHole::~BlackHole() {
  if (filler_ >= 0) close(filler_);
  if (listener_ >= 0) close(listener_);
}

}  // namespace outbound::testing
