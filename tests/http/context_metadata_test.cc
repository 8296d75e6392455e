// SPDX-License-Identifier: Apache-2.0
// A call's context metadata (Context::metadata) on an HTTP call: sent as
// header fields with every attempt, after the request's own, and checked
// as those are.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "client_test_support.h"

namespace outbound::http {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;
using testing::Reply;
using testing::ServerRequest;

class ContextMetadataTest : public FakeTransportTestBase, public ::testing::Test {};

// The names and values of `request`'s fields called `name`, in order.
std::vector<std::string> Values(const ServerRequest& request, std::string_view name) {
  std::vector<std::string> values;
  for (const auto& [field, value] : request.headers) {
    if (field == name) values.push_back(value);
  }
  return values;
}

TEST_F(ContextMetadataTest, EveryAttemptSendsTheContextsFieldsAfterTheRequestsOwn) {
  std::atomic<int> calls{0};
  Serve([&](const ServerRequest&) { return Reply::Status(++calls == 1 ? 503 : 200); });
  auto client = MakeClient();
  Context context;
  context.metadata.emplace("x-tenant", "acme");
  context.metadata.emplace("x-tag", "from-context");
  auto call = client->SendAsync(
      Request::Get("/charges/1").Header("x-tag", "from-request").WithContext(context));
  AdvanceAfterAttempt(1, milliseconds(50));
  auto response = call.get();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->status, 200);
  auto requests = server->requests();
  ASSERT_EQ(requests.size(), 2u);
  for (const ServerRequest& request : requests) {
    EXPECT_EQ(request.header("x-tenant"), "acme");
    EXPECT_THAT(Values(request, "x-tag"), ::testing::ElementsAre("from-request", "from-context"));
  }
}

// A field the client writes itself, and a value with a line break, end
// the call with kInvalidRequest naming them, before anything is sent.
TEST_F(ContextMetadataTest, ABadFieldEndsTheCallBeforeAnythingIsSent) {
  Serve([](const ServerRequest&) { return Reply::Ok("no"); });
  auto client = MakeClient();
  const std::pair<const char*, const char*> bad[] = {{"Content-Length", "5"},
                                                     {"x-note", "one\r\nx-injected: two"}};
  for (const auto& [name, value] : bad) {
    Context context;
    context.metadata.emplace(name, value);
    auto response = client->Send(Request::Get("/charges/1").WithContext(context));
    ASSERT_FALSE(response) << name;
    EXPECT_EQ(response.error().kind(), ErrorKind::kInvalidRequest) << name;
    EXPECT_THAT(response.error().message(), HasSubstr(name));
  }
  EXPECT_TRUE(server->requests().empty());
}

}  // namespace
}  // namespace outbound::http
