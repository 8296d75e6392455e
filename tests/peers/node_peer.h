// SPDX-License-Identifier: Apache-2.0
// A server nobody here wrote, run for one test: `node <script> args...` as a
// child process (the scripts are beside this file). The script prints the
// port it listens on; the test reads counts from it over the same control
// channel (its stdin and stdout, never the wire under test).
//
//   testing::TestCA ca;
//   PeerFiles files(ca.IssueServer({"payments"}));
//   NodePeer peer("h2_server.js", files.Args({"--refuse-every=2"}));
//   network.Add("payments", 8443, "127.0.0.1", peer.port());
//   ...
//   EXPECT_LE(peer.Stats()["streams"].get<int>(), 12);
//
// Node is required: when `node` is not on PATH (or $OUTBOUND_NODE), the
// constructor throws, so the test fails loudly rather than skipping. On
// Debian, Node comes from the package `nodejs` (these scripts need 18 or
// later; they are written against 20).
//
// The destructor kills and reaps the child and closes the channel: no
// process or descriptor outlives the object. If the test process dies
// instead, the child sees its stdin end and exits on its own.
//
// Not thread-safe: one thread uses a NodePeer.
#ifndef OUTBOUND_TESTS_PEERS_NODE_PEER_H_
#define OUTBOUND_TESTS_PEERS_NODE_PEER_H_

#include <sys/types.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "outbound/testing/test_ca.h"

namespace outbound::peers {

// Writes `content` to the file at `path`, replacing it; throws
// std::runtime_error if it cannot.
void WriteFile(const std::string& path, const std::string& content);

// A server certificate written to files for a script: removed, with their
// directory, when the object goes.
class PeerFiles {
 public:
  explicit PeerFiles(const testing::Certificate& certificate);
  ~PeerFiles();
  PeerFiles(const PeerFiles&) = delete;
  PeerFiles& operator=(const PeerFiles&) = delete;

  // `--cert=... --key=...` followed by `more`.
  std::vector<std::string> Args(std::vector<std::string> more = {}) const;
  const std::string& cert_file() const { return cert_file_; }
  const std::string& key_file() const { return key_file_; }

 private:
  std::string dir_;
  std::string cert_file_;
  std::string key_file_;
};

// A server run as a program for one test, talked to over its stdin and
// stdout (a socket pair): it prints {"port": n} once it listens, answers
// each command line ("stats", a script's own) with one JSON line, and
// exits when its stdin ends. The Node scripts here (NodePeer), and the
// gRPC peers under Python grpcio, grpc-go and grpc-js
// (tests/rpc/spawned_peer.h).
class SpawnedPeer {
 public:
  // Runs `command` (the program first) and waits (10 s at most) for the
  // port it prints. Throws std::runtime_error when it cannot be started,
  // or exits or prints no port, with `what` ("h2_server.js") in the
  // message.
  SpawnedPeer(std::vector<std::string> command, const std::string& what);
  ~SpawnedPeer();
  SpawnedPeer(const SpawnedPeer&) = delete;
  SpawnedPeer& operator=(const SpawnedPeer&) = delete;

  std::uint16_t port() const { return port_; }
  // The child's process id (gone once the SpawnedPeer is).
  pid_t pid() const { return pid_; }
  // The program's counts now (see its header for the fields). Throws
  // std::runtime_error if it does not answer in 10 s.
  nlohmann::json Stats() { return Command("stats"); }
  // Runs one of the program's commands (h1_server.js's "release", say) and
  // returns its answer, once the program has done it. Throws
  // std::runtime_error as Stats does, and when the program does not know
  // the command (it answers {"error": ...}).
  nlohmann::json Command(const std::string& name);

 private:
  // Kills and reaps the child, closes the channel. Idempotent.
  void Stop();
  // One line from the child, without its newline.
  std::string ReadLine();

  pid_t pid_ = -1;
  int channel_ = -1;  // our end of a socket pair: the child's stdin and stdout
  std::string buffered_;
  std::uint16_t port_ = 0;
};

// `node <script> args...`: a script elsewhere in the tree (tests/telemetry's
// receiver, tests/rpc's) is given by its absolute path, the others by their
// name in tests/peers. Throws std::runtime_error when node cannot be found.
std::vector<std::string> NodeCommand(const std::string& script,
                                     const std::vector<std::string>& args);

class NodePeer : public SpawnedPeer {
 public:
  // Starts `node <tests/peers>/<script> args...` (or `node <script>` for an
  // absolute path). Throws std::runtime_error when node cannot be found,
  // and as SpawnedPeer does.
  NodePeer(const std::string& script, const std::vector<std::string>& args);
};

}  // namespace outbound::peers

#endif  // OUTBOUND_TESTS_PEERS_NODE_PEER_H_
