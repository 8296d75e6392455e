// SPDX-License-Identifier: Apache-2.0
//
// The request API end to end, both protocols: builders and queries as the
// server receives them, the default User-Agent, a per-call timeout on the
// Runtime's clock, what a Response says about the call, the throwing
// constructor, and the kit's waits.
#include <gtest/gtest.h>

#include <future>
#include <string>

#include "client_test_support.h"
#include "outbound/http/client.h"
#include "outbound/http/json.h"
#include "outbound/version.h"

namespace outbound::http {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::Reply;
using testing::ServerRequest;

class RequestApiTest : public ClientTestBase, public ::testing::TestWithParam<Protocol> {
 protected:
  static bool Ready(std::future<Result<Response>>& call) {
    return call.wait_for(milliseconds(0)) == std::future_status::ready;
  }
  // The call's outcome; a call that never ends fails the test after 10 s
  // of real time (a safety net) instead of hanging it.
  static Result<Response> Outcome(std::future<Result<Response>>& call) {
    if (call.wait_for(seconds(10)) != std::future_status::ready) {
      ADD_FAILURE() << "the call did not end";
      return Fail(ErrorKind::kCancelled, "the call did not end");
    }
    return call.get();
  }
};

TEST_P(RequestApiTest, EveryBuilderReachesTheServerAsBuilt) {
  Serve([](const ServerRequest& r) { return Reply::Ok(r.method + " " + r.target); }, GetParam());
  auto client = MakeClient();
  Query query{{"q", "a b&c=d#e"}, {"city", "São Paulo"}, {"plus", "1+1"}, {"path", "/x?y"}};
  auto get = client->Send(Request::Get("/search").WithQuery(query));
  ASSERT_TRUE(get) << get.error().message();
  EXPECT_EQ(get->body,
            "GET /search?q=a%20b%26c%3Dd%23e&city=S%C3%A3o%20Paulo&plus=1%2B1&path=%2Fx%3Fy");
  EXPECT_EQ(client->Send(Request::Head("/h"))->status, 200);
  EXPECT_EQ(client->Send(Request::Delete("/charges/7"))->body, "DELETE /charges/7");
  EXPECT_EQ(client->Send(Request::Put("/charges/7", "put"))->body, "PUT /charges/7");
  EXPECT_EQ(client->Send(Request::Patch("/charges/7", Json({{"n", 1}})))->body, "PATCH /charges/7");
  EXPECT_EQ(client->Send(Request::Post("/charges", Json({{"amount", 5}})))->body, "POST /charges");

  auto requests = server->requests();
  ASSERT_EQ(requests.size(), 6u);
  EXPECT_EQ(requests[1].method, "HEAD");
  EXPECT_EQ(requests[3].body, "put");
  EXPECT_EQ(requests[4].body, R"({"n":1})");
  EXPECT_EQ(requests[4].header("content-type"), "application/json");
  EXPECT_EQ(requests[5].body, R"({"amount":5})");
  EXPECT_EQ(requests[5].header("content-type"), "application/json");
}

TEST_P(RequestApiTest, RequestsNameTheLibraryUnlessTheCallerNamesItself) {
  Serve([](const ServerRequest&) { return Reply::Ok(); }, GetParam());
  auto client = MakeClient();
  ASSERT_TRUE(client->Send(Request::Get("/")));
  ASSERT_TRUE(client->Send(Request::Get("/").Header("user-agent", "checkout/4.1")));
  auto requests = server->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].header("user-agent"), std::string("outbound/") + OUTBOUND_VERSION_STRING);
  EXPECT_EQ(requests[1].header("user-agent"), "checkout/4.1");
  int user_agents = 0;
  for (const auto& [name, value] : requests[1].headers) user_agents += name == "user-agent";
  EXPECT_EQ(user_agents, 1);
}

TEST_P(RequestApiTest, ARequestTimeoutEndsTheCallOnTheRuntimesClock) {
  Serve([](const ServerRequest&) { return Reply::Hang(); }, GetParam());
  auto client = MakeClient();  // Timeout 10s, AttemptTimeout 5s
  TimePoint start = clock.Now();
  auto call = client->SendAsync(Request{.url = "/slow", .timeout = milliseconds(300)});
  ASSERT_TRUE(server->WaitForRequests(1));
  ASSERT_TRUE(clock.WaitForTimerBy(start + milliseconds(300)));
  clock.Advance(milliseconds(299));
  EXPECT_FALSE(Ready(call));
  clock.Advance(milliseconds(1));
  Result<Response> result = Outcome(call);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind(), ErrorKind::kDeadline);
  EXPECT_EQ(result.error().attempts(), 1);
  EXPECT_EQ(clock.Now() - start, milliseconds(300));
}

TEST_P(RequestApiTest, TheEarliestOfTimeoutRequestTimeoutAndDeadlineWins) {
  Serve([](const ServerRequest&) { return Reply::Hang(); }, GetParam());
  Settings settings = PaymentsSettings();
  settings.timeout = seconds(1);
  settings.attempt_timeout = seconds(30);
  auto client = MakeClient(settings);

  // The caller's deadline, before the request's timeout.
  TimePoint start = clock.Now();
  auto early_deadline =
      client->SendAsync(Request::Get("/a")
                            .WithTimeout(milliseconds(300))
                            .WithContext({.deadline = start + milliseconds(200)}));
  ASSERT_TRUE(server->WaitForRequests(1));
  clock.Advance(milliseconds(200));
  EXPECT_EQ(Outcome(early_deadline).error().kind(), ErrorKind::kDeadline);

  // A request timeout longer than Settings::timeout: the client's wins.
  start = clock.Now();
  auto long_timeout = client->SendAsync(Request::Get("/b").WithTimeout(std::chrono::hours(1)));
  ASSERT_TRUE(server->WaitForRequests(2));
  clock.Advance(milliseconds(999));
  EXPECT_FALSE(Ready(long_timeout));
  clock.Advance(milliseconds(1));
  EXPECT_EQ(Outcome(long_timeout).error().kind(), ErrorKind::kDeadline);
  EXPECT_EQ(clock.Now() - start, seconds(1));
}

TEST_P(RequestApiTest, ATimeoutOfZeroSendsNothing) {
  Serve([](const ServerRequest&) { return Reply::Ok(); }, GetParam());
  auto client = MakeClient();
  auto result = client->Send(Request::Get("/").WithTimeout(milliseconds(0)));
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind(), ErrorKind::kDeadline);
  EXPECT_EQ(result.error().attempts(), 0);
  EXPECT_EQ(server->request_count(), 0u);
}

TEST_P(RequestApiTest, AResponseSaysItsAttemptsRedirectsAndProtocol) {
  std::atomic<int> calls{0};
  Serve(
      [&](const ServerRequest& r) {
        if (r.target == "/old") return Reply::Status(302).Header("Location", "/new");
        if (++calls == 1) return Reply::Status(503).Header("Retry-After", "1");
        return Reply::Ok("moved");
      },
      GetParam());
  auto client = MakeClient();
  TimePoint start = clock.Now();
  auto call = client->SendAsync(Request::Get("/old"));
  ASSERT_TRUE(server->WaitForRequests(2));                // the redirect, then /new's 503
  ASSERT_TRUE(clock.WaitForTimerBy(start + seconds(1)));  // the wait before /new's second attempt
  clock.Advance(seconds(1));
  Result<Response> response = Outcome(call);
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->body, "moved");
  EXPECT_EQ(response->attempts, 3);
  EXPECT_EQ(response->redirects, 1);
  EXPECT_EQ(response->version, GetParam() == Protocol::kHttp2 ? "2" : "1.1");
  EXPECT_TRUE(response->successful());
}

TEST_P(RequestApiTest, A503ThatOutlastsTheRetriesIsAResponseAndRequire2xxMakesItAnError) {
  Serve([](const ServerRequest&) { return Reply::Status(503).Header("Retry-After", "0"); },
        GetParam());
  Settings settings = PaymentsSettings();
  settings.max_attempts = 2;
  auto client = MakeClient(settings);
  auto call = client->SendAsync(Request::Get("/"));
  ASSERT_TRUE(server->WaitForRequests(1));
  ASSERT_TRUE(clock.WaitForTimerBy(clock.Now() + milliseconds(50)));  // backoff: 0.5 x 100ms
  clock.Advance(milliseconds(50));
  Result<Response> response = Outcome(call);
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 503);
  EXPECT_EQ(response->attempts, 2);
  auto required = Require2xx(std::move(response));
  ASSERT_FALSE(required);
  EXPECT_EQ(required.error().kind(), ErrorKind::kHttpStatus);
  EXPECT_EQ(required.error().attempts(), 2);
}

TEST_P(RequestApiTest, WaitUntilIdleReturnsOnceEveryCallIsAnswered) {
  Serve([](const ServerRequest&) { return Reply::Hang(); }, GetParam());
  auto client = MakeClient();
  EXPECT_TRUE(client->WaitUntilIdle(milliseconds(0)));
  auto call = client->SendAsync(Request::Get("/").WithTimeout(seconds(1)));
  ASSERT_TRUE(server->WaitForRequests(1));
  EXPECT_FALSE(client->WaitUntilIdle(milliseconds(20)));
  clock.Advance(seconds(1));
  EXPECT_TRUE(client->WaitUntilIdle());
  EXPECT_TRUE(Ready(call));
}

INSTANTIATE_TEST_SUITE_P(Protocols, RequestApiTest,
                         ::testing::Values(Protocol::kHttp2, Protocol::kHttp11),
                         [](const auto& param_info) {
                           return param_info.param == Protocol::kHttp2 ? "http2" : "http1";
                         });

TEST(CreateOrThrowTest, ThrowsAnExceptionCarryingEveryBadField) {
  Settings settings = DefaultSettings();
  settings.base_url = "https://payments:8443";
  settings.max_attempts = 0;
  try {
    (void)Client::CreateOrThrow(Runtime{}, settings);
    FAIL() << "no exception";
  } catch (const Exception& e) {
    EXPECT_EQ(e.error().kind(), ErrorKind::kInvalidSettings);
    EXPECT_NE(std::string(e.what()).find("Settings.tls"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Settings.max_attempts"), std::string::npos) << e.what();
  }
  settings.max_attempts = 3;
  settings.base_url = "http://payments:8080";
  EXPECT_NE(Client::CreateOrThrow(Runtime{}, settings), nullptr);
}

TEST(FixedRandomTest, DrawsItsValuesInTurn) {
  testing::FixedRandom one(0.25);
  EXPECT_EQ(one.Uniform(), 0.25);
  EXPECT_EQ(one.Uniform(), 0.25);
  testing::FixedRandom cycle{0.0, 0.5, 0.75};
  EXPECT_EQ(cycle.Uniform(), 0.0);
  EXPECT_EQ(cycle.Uniform(), 0.5);
  EXPECT_EQ(cycle.Uniform(), 0.75);
  EXPECT_EQ(cycle.Uniform(), 0.0);
}

}  // namespace
}  // namespace outbound::http
