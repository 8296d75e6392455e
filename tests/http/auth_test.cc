// SPDX-License-Identifier: Apache-2.0
// Credentials held by the client: pinned to its origin, asked per attempt,
// refreshed once on a 401, and never written anywhere but the header.
#include "outbound/http/auth.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "client_test_support.h"
#include "outbound/testing/telemetry.h"

namespace outbound::http {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::Reply;
using testing::ServerRequest;

constexpr char kSecret[] = "S3CR3T-MARKER-91c2";

// Every text a value of `attributes` holds.
void AddTexts(const telemetry::Attributes& attributes, std::vector<std::string>& texts) {
  for (const auto& attribute : attributes) {
    texts.emplace_back(attribute.key.text());
    if (const auto* text = std::get_if<std::string>(&attribute.value)) texts.push_back(*text);
  }
}

class AuthTest : public FakeTransportTestBase, public ::testing::Test {
 protected:
  // The provider: records each ask, answers "<secret>-<n>" (n grows on
  // refresh).
  CredentialProvider Provider() {
    return [this](bool refresh) {
      std::lock_guard lock(asked_mu);
      asked.push_back(refresh);
      if (refresh) ++generation;
      return std::string(kSecret) + "-" + std::to_string(generation);
    };
  }
  std::vector<bool> Asked() {
    std::lock_guard lock(asked_mu);
    return asked;
  }

  std::mutex asked_mu;
  std::vector<bool> asked;
  int generation = 1;
};

TEST_F(AuthTest, TheProviderIsAskedForEveryAttemptOfTheOrigin) {
  std::atomic<int> calls{0};
  Serve([&](const ServerRequest&) { return Reply::Status(++calls == 1 ? 503 : 200); });
  Settings settings = PaymentsSettings();
  settings.attempt_middleware = {WithBearerToken(Provider())};
  auto client = MakeClient(std::move(settings));
  auto call = client->SendAsync(Request::Get("/charges/1"));
  AdvanceAfterAttempt(1, milliseconds(50));
  auto response = call.get();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_THAT(Asked(), ElementsAre(false, false));
  auto requests = server->requests();
  ASSERT_EQ(requests.size(), 2u);
  for (const auto& request : requests) {
    EXPECT_EQ(request.header("Authorization"), std::string("Bearer ") + kSecret + "-1");
  }
}

TEST_F(AuthTest, A401WithWwwAuthenticateIsRepeatedOnceWithAFreshCredential) {
  Serve([&](const ServerRequest& request) {
    if (request.header("Authorization").ends_with("-2")) return Reply::Ok("in");
    return Reply::Status(401).Header("WWW-Authenticate", "Bearer error=\"invalid_token\"");
  });
  Settings settings = PaymentsSettings();
  settings.attempt_middleware = {WithBearerToken(Provider())};
  auto client = MakeClient(std::move(settings));
  auto response = client->Send(Request::Get("/charges/1"));
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "in");
  EXPECT_THAT(Asked(), ElementsAre(false, true));
  EXPECT_EQ(server->request_count(), 2u);
}

TEST_F(AuthTest, ASecond401IsTheAnswerNeverALoop) {
  Serve([&](const ServerRequest&) {
    return Reply::Status(401).Header("WWW-Authenticate", "Bearer");
  });
  Settings settings = PaymentsSettings();
  settings.attempt_middleware = {WithBearerToken(Provider())};
  auto client = MakeClient(std::move(settings));
  auto response = client->Send(Request::Get("/charges/1"));
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 401);
  EXPECT_THAT(Asked(), ElementsAre(false, true));
  EXPECT_EQ(server->request_count(), 2u);
}

TEST_F(AuthTest, ARedirectWithinTheOriginCarriesTheCredentialAskedAgain) {
  Serve([&](const ServerRequest& request) {
    if (request.target == "/old") return Reply::Status(307).Header("Location", "/new");
    return Reply::Ok();
  });
  Settings settings = PaymentsSettings();
  settings.attempt_middleware = {WithBearerToken(Provider())};
  auto client = MakeClient(std::move(settings));
  auto response = client->Send(Request::Get("/old"));
  ASSERT_TRUE(response);
  EXPECT_EQ(response->redirects, 1);
  EXPECT_THAT(Asked(), ElementsAre(false, false));
  ASSERT_EQ(server->request_count(), 2u);
  EXPECT_EQ(server->requests()[1].target, "/new");
  EXPECT_EQ(server->requests()[1].header("Authorization"), std::string("Bearer ") + kSecret + "-1");
}

TEST_F(AuthTest, A401WithoutWwwAuthenticateIsNotRepeated) {
  Serve([&](const ServerRequest&) { return Reply::Status(401); });
  Settings settings = PaymentsSettings();
  settings.attempt_middleware = {WithBearerToken(Provider())};
  auto client = MakeClient(std::move(settings));
  auto response = client->Send(Request::Get("/"));
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 401);
  EXPECT_THAT(Asked(), ElementsAre(false));
  EXPECT_EQ(server->request_count(), 1u);
}

TEST_F(AuthTest, BasicAuthIsEncodedAndAFixedCredentialIsNotRepeated) {
  Serve([&](const ServerRequest&) {
    return Reply::Status(401).Header("WWW-Authenticate", "Basic realm=\"x\"");
  });
  Settings settings = PaymentsSettings();
  settings.attempt_middleware = {WithBasicAuth("Aladdin", "open sesame")};
  auto client = MakeClient(std::move(settings));
  auto response = client->Send(Request::Get("/"));
  ASSERT_TRUE(response);
  EXPECT_EQ(server->request_count(), 1u);
  EXPECT_EQ(server->requests()[0].header("Authorization"), "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
}

TEST_F(AuthTest, ACredentialNeverReachesARedirectElsewhereAnErrorARecordASpanOrALog) {
  testing::InMemoryTelemetry telemetry;
  runtime.telemetry = telemetry.telemetry();
  std::atomic<int> calls{0};
  Serve([&](const ServerRequest& request) {
    if (request.target == "/away") {
      return Reply::Status(302).Header("Location", "https://evil:8443/steal");
    }
    if (request.target == "/slow") return Reply::Hang();
    return Reply::Status(++calls == 1 ? 503 : 200);
  });
  Settings settings = PaymentsSettings();
  settings.attempt_middleware = {WithBearerToken(Provider())};
  settings.request_logging = true;
  std::vector<std::string> texts;
  std::mutex texts_mu;
  settings.observers.push_back(ObserveAttempts([&](const AttemptRecord& record) {
    std::lock_guard lock(texts_mu);
    texts.push_back(std::string(record.method));
    texts.push_back(std::string(record.url));
    texts.push_back(record.error_message);
  }));
  auto client = MakeClient(std::move(settings));

  // A redirect to another origin comes back as the 3xx: nothing followed.
  auto away = client->Send(Request::Get("/away"));
  ASSERT_TRUE(away);
  EXPECT_EQ(away->status, 302);
  // A retried one, and one that fails, so errors and every record exist.
  auto call = client->SendAsync(Request::Get("/retried"));
  AdvanceAfterAttempt(2, milliseconds(50));
  ASSERT_TRUE(call.get());
  auto slow = client->SendAsync(Request::Get("/slow").WithTimeout(milliseconds(1500)));
  ASSERT_TRUE(clock.WaitForTimers(2));
  clock.Advance(milliseconds(1500));
  auto failed = slow.get();
  ASSERT_FALSE(failed);
  texts.push_back(failed.error().message());

  for (const auto& span : telemetry.Spans()) {
    texts.push_back(span.name);
    texts.push_back(span.status_description);
    AddTexts(span.attributes, texts);
    for (const auto& event : span.events) AddTexts(event.attributes, texts);
  }
  for (const auto& log : telemetry.Logs()) {
    texts.push_back(log.body);
    AddTexts(log.attributes, texts);
  }
  EXPECT_FALSE(telemetry.Spans().empty());
  int completed = 0;
  int failed_logs = 0;
  for (const auto& log : telemetry.Logs()) {
    completed += log.body == "HTTP request completed";
    failed_logs += log.body == "HTTP request failed";
  }
  EXPECT_EQ(completed, 3);  // the 302, the 503 and the 200
  EXPECT_EQ(failed_logs, 1);
  for (const auto& text : texts) EXPECT_THAT(text, Not(HasSubstr(kSecret)));
  // The server did see it: the marker is what the test greps for.
  for (const auto& request : server->requests()) {
    EXPECT_THAT(request.header("Authorization"), HasSubstr(kSecret));
    EXPECT_NE(request.target, "/steal");
  }
}

}  // namespace
}  // namespace outbound::http
