// SPDX-License-Identifier: Apache-2.0
// Operator control from a runtime file (config::RuntimeFile) against a
// dependency nobody here wrote: Node 20's own http2 server
// (tests/peers/tail_h2_server.js, every answer after 1 ms). The file acts
// on the client; the server's count of the requests it saw shows which
// calls the file let through.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "outbound/config/runtime_file.h"
#include "peer_test_support.h"

namespace outbound::peers {
namespace {

using http::Request;

class NodeRuntimeFileTest : public PeerTestBase, public ::testing::Test {};

// An operator isolates the dependency from the file: no call reaches the
// server; a bad file changes nothing; held closed, every call reaches it.
TEST_F(NodeRuntimeFileTest, ARuntimeFileIsolatesTheDependencyAndThenHoldsItClosed) {
  StartPeer("tail_h2_server.js", {"--fast-ms=1"});
  auto client = MakeClient(PaymentsSettings());
  ASSERT_TRUE(client);
  std::string path =
      (std::filesystem::path(files.cert_file()).parent_path() / "runtime.json").string();
  auto write = [&](const std::string& text) { std::ofstream(path, std::ios::trunc) << text; };

  write(R"({"dependencies": {"payments": {"breaker": "isolate"}}})");
  auto file = config::RuntimeFile::Watch(runtime, path, std::chrono::hours(1));
  ASSERT_TRUE(file) << file.error().message();
  config::Subscription held = (*file)->Control("payments", *client);
  for (int i = 0; i < 5; ++i) {
    auto rejected = client->Send(Request::Get("/fast/" + std::to_string(i)));
    ASSERT_FALSE(rejected);
    EXPECT_EQ(rejected.error().kind(), ErrorKind::kRejected) << rejected.error().message();
  }
  EXPECT_EQ(peer->Stats()["streams"].get<int>(), 0);

  write(R"({"dependencies": {"payments": {"breaker": "force_closd"}}})");  // misspelt: refused
  EXPECT_FALSE((*file)->Reload());
  EXPECT_FALSE(client->Send(Request::Get("/fast/still-open")));

  write(R"({"dependencies": {"payments": {"breaker": "force_closed"}}})");
  ASSERT_TRUE((*file)->Reload());
  for (int i = 0; i < 5; ++i) {
    auto answered = client->Send(Request::Get("/fast/again/" + std::to_string(i)));
    ASSERT_TRUE(answered) << answered.error().message();
  }
  EXPECT_EQ(peer->Stats()["streams"].get<int>(), 5);
}

}  // namespace
}  // namespace outbound::peers
