// SPDX-License-Identifier: Apache-2.0
// A gRPC server nobody here wrote, run as a program for one test and
// talked to over its stdin and stdout: grpcio_peer.py under Python
// grpcio, grpc_go_peer under grpc-go. The program prints {"port": n} once
// it listens, answers each "stats" line with one JSON line of what it has
// seen, and stops when its stdin ends, so a test that dies leaves no
// server behind. CertFiles writes a certificate where such a program
// reads it (--cert, --key).
#ifndef OUTBOUND_TESTS_RPC_SPAWNED_PEER_H_
#define OUTBOUND_TESTS_RPC_SPAWNED_PEER_H_

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "outbound/testing/test_ca.h"

extern char** environ;

namespace outbound::rpc {

class SpawnedPeer {
 public:
  // A safety net for a broken test, never a tolerance: a passing test
  // waits for events.
  static constexpr auto kSafetyNet = std::chrono::seconds(10);

  // Runs `argv` (the program first) and waits for its port. Throws if it
  // cannot start or says no port, with `what` ("grpc_go_peer") in the
  // message.
  SpawnedPeer(std::vector<std::string> argv, const std::string& what) {
    std::vector<char*> args;
    for (auto& s : argv) args.push_back(s.data());
    args.push_back(nullptr);
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
      throw std::runtime_error(std::string("socketpair: ") + std::strerror(errno));
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pair[1], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, pair[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
    int spawned = posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(pair[1]);
    channel_ = pair[0];
    if (spawned != 0) {
      close(channel_);
      throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(spawned));
    }
    try {
      port_ = nlohmann::json::parse(ReadLine()).at("port").get<std::uint16_t>();
    } catch (const std::exception& e) {
      Stop();
      throw std::runtime_error(what + " did not start: " + e.what());
    }
  }
  // Kills and reaps the program.
  ~SpawnedPeer() { Stop(); }
  SpawnedPeer(const SpawnedPeer&) = delete;
  SpawnedPeer& operator=(const SpawnedPeer&) = delete;

  std::uint16_t port() const { return port_; }

  // What the server has seen so far (each program says what its fields
  // hold).
  nlohmann::json Stats() {
    static constexpr char kStats[] = "stats\n";
    if (send(channel_, kStats, sizeof(kStats) - 1, MSG_NOSIGNAL) != sizeof(kStats) - 1) {
      throw std::runtime_error("the peer is gone");
    }
    return nlohmann::json::parse(ReadLine());
  }

  // Calls of `method` ("Say") the server has seen: Stats()["calls"].
  int Calls(const std::string& method) { return Stats().at("calls").value(method, 0); }

  // Waits (the safety net at most) until `done(Stats())` holds.
  template <typename Done>
  bool WaitFor(Done done) {
    auto until = std::chrono::steady_clock::now() + kSafetyNet;
    while (!done(Stats())) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }

 private:
  void Stop() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      int status;
      while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      pid_ = -1;
    }
    if (channel_ >= 0) {
      close(channel_);
      channel_ = -1;
    }
  }

  std::string ReadLine() {
    auto until = std::chrono::steady_clock::now() + kSafetyNet;
    while (true) {
      if (std::size_t newline = buffered_.find('\n'); newline != std::string::npos) {
        std::string line = buffered_.substr(0, newline);
        buffered_.erase(0, newline + 1);
        return line;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          until - std::chrono::steady_clock::now());
      if (left.count() <= 0) throw std::runtime_error("the peer said nothing for 10 s");
      pollfd fd{.fd = channel_, .events = POLLIN, .revents = 0};
      if (poll(&fd, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[4096];
      ssize_t n = read(channel_, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw std::runtime_error("the peer exited");
      buffered_.append(buf, static_cast<std::size_t>(n));
    }
  }

  pid_t pid_ = -1;
  int channel_ = -1;
  std::string buffered_;
  std::uint16_t port_ = 0;
};

// A certificate written where the peer reads it, removed with its
// directory when the object goes.
class CertFiles {
 public:
  explicit CertFiles(const testing::Certificate& certificate) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "outbound-peer-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = pattern;
    Write(dir_ + "/chain.pem", certificate.chain_pem);
    Write(dir_ + "/key.pem", certificate.key_pem);
  }
  ~CertFiles() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  CertFiles(const CertFiles&) = delete;
  CertFiles& operator=(const CertFiles&) = delete;

  // The peer's arguments that name the files.
  std::vector<std::string> Args() const {
    return {"--cert=" + dir_ + "/chain.pem", "--key=" + dir_ + "/key.pem"};
  }

 private:
  static void Write(const std::string& path, const std::string& content) {
    std::ofstream out(path);
    out << content;
    if (!out) throw std::runtime_error("cannot write " + path);
  }
  std::string dir_;
};

}  // namespace outbound::rpc

#endif  // OUTBOUND_TESTS_RPC_SPAWNED_PEER_H_
