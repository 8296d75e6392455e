// SPDX-License-Identifier: Apache-2.0
// HeldDoor: a server slow to answer a new connection, as slow as the test
// decides (tests/rpc/grpc_timeout_test.cc, the grpc-go peer's test).
#ifndef OUTBOUND_TESTS_RPC_HELD_DOOR_H_
#define OUTBOUND_TESTS_RPC_HELD_DOOR_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace outbound::rpc {

// A port on loopback whose first `connections` connections are accepted
// and then held, nothing read or written, until Open() and the last of
// them has come; from then on their bytes go both ways to `to_port`. (A
// later connection is left in the listener's queue: connected, never
// answered.) A server slow to answer a new connection, whose slowness the
// test decides.
class HeldDoor {
 public:
  explicit HeldDoor(std::uint16_t to_port, std::size_t connections = 1)
      : to_port_(to_port), connections_(connections) {
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof(address);
    if (bind(listener_, reinterpret_cast<sockaddr*>(&address), size) == 0 &&
        listen(listener_, 4) == 0 &&
        getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &size) == 0) {
      port_ = ntohs(address.sin_port);
    }
    relay_ = std::thread([this] { Relay(); });
  }
  // Ends the relays whatever their ends are doing, then closes them.
  ~HeldDoor() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      shutdown(listener_, SHUT_RDWR);
      for (int fd : ends_) shutdown(fd, SHUT_RDWR);
    }
    Open();
    relay_.join();
    close(listener_);
    for (int fd : ends_) close(fd);
  }
  HeldDoor(const HeldDoor&) = delete;
  HeldDoor& operator=(const HeldDoor&) = delete;

  std::uint16_t port() const { return port_; }
  // Waits (10 s of real time at most) until `n` of a client's connections
  // are held.
  bool WaitForConnection(std::size_t n = 1) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, std::chrono::seconds(10), [&] { return held_ >= n; });
  }
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    changed_.notify_all();
  }

 private:
  void Relay() {
    std::vector<int> clients;
    while (clients.size() < connections_) {
      int client = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      std::lock_guard lock(mu_);
      if (client < 0 || stopping_) {
        if (client >= 0) ends_.push_back(client);
        return;
      }
      clients.push_back(client);
      ends_.push_back(client);
      ++held_;
      changed_.notify_all();
    }
    std::vector<std::thread> pumps;
    for (int client : clients) {
      int server = -1;
      {
        std::unique_lock lock(mu_);
        changed_.wait(lock, [this] { return open_; });
        if (stopping_) break;
        server = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (server >= 0) ends_.push_back(server);
      }
      sockaddr_in address{};
      address.sin_family = AF_INET;
      address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      address.sin_port = htons(to_port_);
      if (server >= 0 &&
          connect(server, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
        pumps.emplace_back([client, server] { Pump(client, server); });
      } else {
        shutdown(client, SHUT_RDWR);  // the client hears the failure, not silence
      }
    }
    for (std::thread& pump : pumps) pump.join();
  }

  // Carries bytes both ways until either end closes.
  static void Pump(int a, int b) {
    std::array<pollfd, 2> ends{{{a, POLLIN, 0}, {b, POLLIN, 0}}};
    std::array<char, 16 * 1024> buffer;
    while (poll(ends.data(), ends.size(), -1) > 0) {
      for (std::size_t i = 0; i < ends.size(); ++i) {
        if (ends[i].revents == 0) continue;
        ssize_t n = read(ends[i].fd, buffer.data(), buffer.size());
        if (n <= 0) return;
        for (ssize_t sent = 0; sent < n;) {
          // MSG_NOSIGNAL: an end that closed while bytes were on their way
          // ends the relay, not the test with SIGPIPE.
          ssize_t w = send(ends[1 - i].fd, buffer.data() + sent, static_cast<std::size_t>(n - sent),
                           MSG_NOSIGNAL);
          if (w <= 0) return;
          sent += w;
        }
      }
    }
  }

  std::uint16_t to_port_;
  std::size_t connections_;
  std::uint16_t port_ = 0;
  int listener_ = -1;
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<int> ends_;  // guarded by mu_, as are those below: every socket but the listener
  std::size_t held_ = 0;
  bool open_ = false;
  bool stopping_ = false;
  std::thread relay_;
};

}  // namespace outbound::rpc

#endif  // OUTBOUND_TESTS_RPC_HELD_DOOR_H_
