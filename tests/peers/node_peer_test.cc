// SPDX-License-Identifier: Apache-2.0
// The helper that runs the Node peers: it starts a script, learns its port,
// reads its counts, and leaves no process or descriptor behind.
#include "node_peer.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <cerrno>
#include <stdexcept>
#include <string>

#include "../testing/test_support.h"

namespace outbound::peers {
namespace {

TEST(NodePeerTest, StartsAScriptReadsItsCountsAndLeavesNothingBehind) {
  testing::TestCA ca;
  int descriptors = testing::OpenDescriptors();
  pid_t pid;
  {
    PeerFiles files(ca.IssueServer({"payments"}));
    NodePeer peer("h2_server.js", files.Args());
    pid = peer.pid();
    EXPECT_GT(peer.port(), 0);
    EXPECT_EQ(peer.Stats()["sessions"].get<int>(), 0);
    EXPECT_EQ(kill(pid, 0), 0);
  }
  EXPECT_EQ(kill(pid, 0), -1);  // killed and reaped: not even a zombie
  EXPECT_EQ(errno, ESRCH);
  EXPECT_EQ(testing::OpenDescriptors(), descriptors);
}

TEST(NodePeerTest, AScriptThatFailsToStartIsAnError) {
  testing::TestCA ca;
  PeerFiles files(ca.IssueServer({"payments"}));
  int descriptors = testing::OpenDescriptors();
  // No --key: the script throws before it listens.
  EXPECT_THROW(NodePeer("h2_server.js", {"--cert=/nonexistent"}), std::runtime_error);
  EXPECT_EQ(testing::OpenDescriptors(), descriptors);
}

}  // namespace
}  // namespace outbound::peers
