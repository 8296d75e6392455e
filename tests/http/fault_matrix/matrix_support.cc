// SPDX-License-Identifier: Apache-2.0
// What every row's "nothing leaked" is measured against. The first client
// in a process may start what the process keeps for every client after it
// (the event loop's thread, its descriptors, OpenSSL's global state); a row must not be charged for
// those. So before any row runs, one client makes one call over each protocol and is destroyed.
#include "matrix_support.h"

namespace outbound::http::matrix {
namespace {

class WarmUp : public MatrixTest {
 public:
  void TestBody() override {}
  void Run() {
    for (Protocol p : {Protocol::kHttp2, Protocol::kHttp11}) {
      protocol = p;
      Serve([](const ServerRequest&) { return Reply::Ok(); });
      StartClient();
      auto response = client->Send(Request::Get("/"));
      EXPECT_TRUE(response) << "the warm-up call failed: " << response.error().message();
      client.reset();
      server.reset();
    }
  }
};

class WarmUpEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { WarmUp().Run(); }
};

[[maybe_unused]] ::testing::Environment* const kWarmUp =
    ::testing::AddGlobalTestEnvironment(new WarmUpEnvironment);

}  // namespace
}  // namespace outbound::http::matrix
