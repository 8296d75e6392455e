// SPDX-License-Identifier: Apache-2.0
#include "node_peer.h"

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "outbound/clock.h"

extern char** environ;

namespace outbound::peers {
namespace {

constexpr auto kWaitForPeer = std::chrono::seconds(10);

// $OUTBOUND_NODE, or the first `node` on PATH.
std::string FindNode() {
  if (const char* given = std::getenv("OUTBOUND_NODE"); given != nullptr && *given != '\0') {
    return given;
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string candidate = dirs.substr(start, end - start) + "/node";
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  throw std::runtime_error(
      "node not found on PATH (nor $OUTBOUND_NODE): the peer tests run Node.js servers; install "
      "Node.js 20 (Debian package `nodejs`)");
}

}  // namespace

std::vector<std::string> NodeCommand(const std::string& script,
                                     const std::vector<std::string>& args) {
  std::string path =
      script.starts_with('/') ? script : std::string(OUTBOUND_PEERS_DIR) + "/" + script;
  std::vector<std::string> command = {FindNode(), path};
  command.insert(command.end(), args.begin(), args.end());
  return command;
}

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path);
  out << content;
  if (!out) throw std::runtime_error("cannot write " + path);
}

PeerFiles::PeerFiles(const testing::Certificate& certificate) {
  std::string pattern = (std::filesystem::temp_directory_path() / "outbound-peer-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = pattern;
  cert_file_ = dir_ + "/chain.pem";
  key_file_ = dir_ + "/key.pem";
  WriteFile(cert_file_, certificate.chain_pem);
  WriteFile(key_file_, certificate.key_pem);
}

PeerFiles::~PeerFiles() {
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::vector<std::string> PeerFiles::Args(std::vector<std::string> more) const {
  more.insert(more.begin(), {"--cert=" + cert_file_, "--key=" + key_file_});
  return more;
}

NodePeer::NodePeer(const std::string& script, const std::vector<std::string>& args)
    : SpawnedPeer(NodeCommand(script, args), script) {}

SpawnedPeer::SpawnedPeer(std::vector<std::string> command, const std::string& what) {
  std::vector<char*> argv;
  for (auto& s : command) argv.push_back(s.data());
  argv.push_back(nullptr);

  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    throw std::runtime_error(std::string("socketpair: ") + std::strerror(errno));
  }
  // The child gets its end as stdin and stdout and no other descriptor of
  // ours (the client's sockets stay in this process); stderr is shared, so
  // a script's error shows in the test's output.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pair[1], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pair[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
  int spawned = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pair[1]);
  channel_ = pair[0];
  if (spawned != 0) {
    close(channel_);
    throw std::runtime_error("cannot start " + command[0] + ": " + std::strerror(spawned));
  }
  try {
    nlohmann::json hello = nlohmann::json::parse(ReadLine());
    port_ = hello.at("port").get<std::uint16_t>();
  } catch (const std::exception& e) {
    Stop();
    throw std::runtime_error(what + " did not start: " + e.what());
  }
}

SpawnedPeer::~SpawnedPeer() { Stop(); }

void SpawnedPeer::Stop() {
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

nlohmann::json SpawnedPeer::Command(const std::string& name) {
  std::string line = name + "\n";
  if (send(channel_, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size())) {
    throw std::runtime_error("the peer is gone");
  }
  nlohmann::json answer = nlohmann::json::parse(ReadLine());
  if (answer.is_object() && answer.contains("error")) {
    throw std::runtime_error("the peer says: " + answer["error"].get<std::string>());
  }
  return answer;
}

std::string SpawnedPeer::ReadLine() {
  TimePoint give_up = SystemClock().Now() + kWaitForPeer;
  while (true) {
    if (std::size_t newline = buffered_.find('\n'); newline != std::string::npos) {
      std::string line = buffered_.substr(0, newline);
      buffered_.erase(0, newline + 1);
      return line;
    }
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(give_up - SystemClock().Now());
    if (left.count() <= 0) throw std::runtime_error("the peer said nothing for 10 s");
    pollfd fd{.fd = channel_, .events = POLLIN, .revents = 0};
    int ready = poll(&fd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char buf[4096];
    ssize_t n = read(channel_, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("the peer exited");
    buffered_.append(buf, static_cast<std::size_t>(n));
  }
}

}  // namespace outbound::peers
