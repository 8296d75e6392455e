// SPDX-License-Identifier: Apache-2.0
// Helpers for the test kit's own tests: temp files, running the curl command,
// counting this process's descriptors and threads.
#ifndef OUTBOUND_TESTS_TESTING_TEST_SUPPORT_H_
#define OUTBOUND_TESTS_TESTING_TEST_SUPPORT_H_

#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace outbound::testing {

// A directory under /tmp, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string pattern = "/tmp/outbound-test-XXXXXX";
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string Write(const std::string& name, const std::string& content) const {
    std::string path = path_ + "/" + name;
    std::ofstream(path) << content;
    return path;
  }

 private:
  std::string path_;
};

struct CommandResult {
  int exit_code;
  std::string output;
};

// Runs a shell command; its stdout and its exit code.
inline CommandResult RunCommand(const std::string& command) {
  CommandResult result{-1, ""};
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) result.output.append(buf.data(), n);
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

inline int CountEntries(const char* dir) {
  int n = 0;
  if (DIR* d = opendir(dir)) {
    while (readdir(d) != nullptr) ++n;
    closedir(d);
  }
  return n;
}
inline int OpenDescriptors() { return CountEntries("/proc/self/fd"); }
inline int Threads() { return CountEntries("/proc/self/task"); }

// The socket inodes of TCP connections to `port` (any address, IPv4 or
// IPv6), from /proc/self/net/tcp{,6}: "sl local rem st ... uid timeout inode".
inline std::set<std::string> SocketsConnectedTo(int port) {
  std::set<std::string> inodes;
  for (const char* table : {"/proc/self/net/tcp", "/proc/self/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the heading
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode;
      auto colon = remote.rfind(':');
      if (colon == std::string::npos) continue;
      if (std::stoi(remote.substr(colon + 1), nullptr, 16) == port) inodes.insert(inode);
    }
  }
  return inodes;
}

// This process's open descriptors, leaving out its TCP connections to
// `port`: a client's pool of connections to a peer changes size on its own
// (a connection the peer closed goes when the client next looks at it);
// everything else must not grow.
inline int OpenDescriptorsBesideConnectionsTo(int port) {
  std::set<std::string> connections = SocketsConnectedTo(port);
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code error;
    std::string target = std::filesystem::read_symlink(entry.path(), error).string();
    // "socket:[12345]"
    if (target.rfind("socket:[", 0) == 0 &&
        connections.count(target.substr(8, target.size() - 9)) != 0) {
      continue;
    }
    ++n;
  }
  return n;
}

}  // namespace outbound::testing

#endif  // OUTBOUND_TESTS_TESTING_TEST_SUPPORT_H_
