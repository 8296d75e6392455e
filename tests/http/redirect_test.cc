// SPDX-License-Identifier: Apache-2.0
// Redirects against a fake dependency over TLS, both protocols: which are
// followed (same origin, however written), which go back to the caller as
// they came (another scheme, host or port, or user info), and how a loop ends.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "client_test_support.h"
#include "outbound/http/client.h"

namespace outbound::http {
namespace {

using testing::Reply;
using testing::ServerRequest;

class RedirectTest : public ClientTestBase, public ::testing::TestWithParam<Protocol> {
 protected:
  // The defaults, with every attempt's URL kept (the record's view is valid
  // only while the observer runs).
  std::unique_ptr<Client> MakeRecordingClient() {
    Settings settings = PaymentsSettings();
    // First, so a URL is kept before the base's observer wakes a waiting test.
    settings.observers.insert(settings.observers.begin(),
                              ObserveAttempts([this](const AttemptRecord& r) {
                                std::lock_guard lock(mu);
                                attempt_urls.emplace_back(r.url);
                              }));
    return MakeClient(std::move(settings));
  }

  std::vector<std::string> AttemptUrls() {
    std::lock_guard lock(mu);
    return attempt_urls;
  }

  std::vector<std::string> attempt_urls;
};

TEST_P(RedirectTest, ASameOriginRedirectCarryingUserInfoIsReturnedAsItCame) {
  const std::vector<std::string> locations = {
      "https://user:secret@payments:8443/x",   "//user:secret@payments:8443/x",
      "https://user@payments:8443/x",          "https://:secret@payments:8443/x",
      "https://payments:8443@payments:8443/x",
  };
  std::string location;
  Serve(
      [&](const ServerRequest& r) {
        if (r.target == "/login") return Reply::Status(302).Header("Location", location);
        return Reply::Ok("followed to " + r.target);
      },
      GetParam());
  auto client = MakeRecordingClient();
  for (const std::string& l : locations) {
    location = l;
    auto response = client->Send(Request::Get("/login"));
    ASSERT_TRUE(response) << l << ": " << response.error().message();
    EXPECT_EQ(response->status, 302) << l;
    EXPECT_EQ(response->header("Location"), l);
  }
  EXPECT_EQ(server->request_count(), locations.size());
  for (const ServerRequest& r : server->requests()) {
    EXPECT_EQ(r.target, "/login");
    EXPECT_EQ(r.header("Authorization"), "");
  }
  for (const std::string& url : AttemptUrls()) {
    EXPECT_EQ(url, "https://payments:8443/login");
  }
}

TEST_P(RedirectTest, RedirectsToAnotherSchemeHostOrPortAreReturnedAsTheyCame) {
  const std::vector<std::string> locations = {
      "file:///etc/passwd",
      "ftp://payments:8443/x",
      "http://payments:8443/x",
      "https://ledger:8443/x",
      "https://payments:9443/x",
      "https://payments/x",              // the default port, 443
      "https://payments.:8443/x",        // a name with a trailing dot is another host
      "https://p\xc3\xa4yments:8443/x",  // not an ASCII host: never followed
      "https://payments:8443\\@ledger:8443/x",
      "javascript:alert(1)",
      "//ledger:8443/x",
  };
  std::string location;
  Serve(
      [&](const ServerRequest& r) {
        if (r.target == "/away") return Reply::Status(302).Header("Location", location);
        return Reply::Ok("followed to " + r.target);
      },
      GetParam());
  auto client = MakeClient();
  for (const std::string& l : locations) {
    location = l;
    auto response = client->Send(Request::Get("/away"));
    ASSERT_TRUE(response) << l << ": " << response.error().message();
    EXPECT_EQ(response->status, 302) << l;
    EXPECT_EQ(response->header("Location"), l);
  }
  EXPECT_EQ(server->request_count(), locations.size());
}

TEST_P(RedirectTest, ASameOriginRedirectWrittenInCapitalsIsFollowed) {
  Serve(
      [](const ServerRequest& r) {
        if (r.target == "/old")
          return Reply::Status(301).Header("Location", "HTTPS://PAYMENTS:8443/new");
        return Reply::Ok("at " + r.target);
      },
      GetParam());
  auto client = MakeRecordingClient();
  auto response = client->Send(Request::Get("/old"));
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "at /new");
  EXPECT_EQ(AttemptUrls(),
            (std::vector<std::string>{"https://payments:8443/old", "https://payments:8443/new"}));
}

TEST_P(RedirectTest, RelativeLocationsAreResolvedAgainstTheRequestUrl) {
  Serve(
      [](const ServerRequest& r) {
        if (r.target == "/a/b/c") return Reply::Status(302).Header("Location", "../d?x=1#top");
        if (r.target == "/a/d?x=1") return Reply::Status(307).Header("Location", "?page=2");
        if (r.target == "/a/d?page=2")
          return Reply::Status(308).Header("Location", "//payments:8443/e");
        return Reply::Ok("at " + r.target);
      },
      GetParam());
  auto client = MakeClient();
  auto response = client->Send(Request::Get("/a/b/c"));
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->body, "at /e");
  EXPECT_EQ(server->request_count(), 4u);
}

TEST_P(RedirectTest, TenRedirectsWithinTheOriginAreFollowed) {
  Serve(
      [](const ServerRequest& r) {
        int n = std::stoi(r.target.substr(1));
        if (n < 10) return Reply::Status(302).Header("Location", "/" + std::to_string(n + 1));
        return Reply::Ok("at " + r.target);
      },
      GetParam());
  auto client = MakeClient();
  auto response = client->Send(Request::Get("/0"));
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->body, "at /10");
  EXPECT_EQ(server->request_count(), 11u);
}

TEST_P(RedirectTest, ARedirectLoopFailsAsTooManyRedirectsAfterTheEleventh) {
  Serve([](const ServerRequest&) { return Reply::Status(302).Header("Location", "/loop"); },
        GetParam());
  auto client = MakeClient();
  auto response = client->Send(Request::Get("/loop"));
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().kind(), ErrorKind::kTooManyRedirects);
  EXPECT_EQ(response.error().message(),
            "payments:8443: more than 10 redirects within https://payments:8443");
  EXPECT_EQ(response.error().attempts(), 11);
  EXPECT_EQ(server->request_count(), 11u);
  EXPECT_EQ(client->breaker_state(), circuit::State::kClosed);
}

INSTANTIATE_TEST_SUITE_P(Protocols, RedirectTest,
                         ::testing::Values(Protocol::kHttp2, Protocol::kHttp11),
                         [](const auto& param_info) {
                           return param_info.param == Protocol::kHttp2 ? "http2" : "http1";
                         });

}  // namespace
}  // namespace outbound::http
