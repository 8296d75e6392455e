// SPDX-License-Identifier: Apache-2.0
// Policy per route (Settings::routes) in fake time on the kit's transport:
// a route's attempts, timeout, attempt timeout and classify replace the
// client's for the calls under its path prefix, the longest prefix wins
// whole segments at a time, and every route shares the client's breaker
// and retry budget.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "../../src/http/routes.h"
#include "client_test_support.h"

namespace outbound::http {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;
using testing::Reply;
using testing::ServerRequest;

class RoutePolicyTest : public FakeTransportTestBase, public ::testing::Test {
 protected:
  // Short backoff, so a test moves the clock by a known step per retry.
  Settings RouteSettings() {
    Settings settings = PaymentsSettings();
    settings.backoff_base = milliseconds(10);
    settings.backoff_max = milliseconds(10);
    return settings;
  }

  // Runs a call that may retry to its end, letting each backoff pass. A
  // backoff is the only timer due within 10 ms; the loop follows the timers,
  // not the attempt records, because a short backoff can let the next
  // attempt end and its own backoff begin within the same Advance().
  Result<Response> SendRetrying(Client& client, Request request) {
    auto call = client.SendAsync(std::move(request));
    while (call.wait_for(milliseconds(0)) != std::future_status::ready) {
      if (clock.WaitForTimerBy(clock.Now() + milliseconds(10), milliseconds(1))) {
        clock.Advance(milliseconds(10));
      }
    }
    return call.get();
  }
};

TEST(RoutesTest, APrefixHoldsWholeSegmentsAndTheLongestWins) {
  EXPECT_TRUE(internal::UnderPrefix("/v1/reports", "/v1/reports"));
  EXPECT_TRUE(internal::UnderPrefix("/v1/reports/2026", "/v1/reports"));
  EXPECT_TRUE(internal::UnderPrefix("/v1/reports?year=2026", "/v1/reports"));
  EXPECT_FALSE(internal::UnderPrefix("/v1/reportsX", "/v1/reports"));
  EXPECT_FALSE(internal::UnderPrefix("/v1/report", "/v1/reports"));
  EXPECT_TRUE(internal::UnderPrefix("/pkg.Svc/Get", "/pkg.Svc/"));
  EXPECT_FALSE(internal::UnderPrefix("/pkg.Svc/GetAll", "/pkg.Svc/Get"));

  Settings settings = DefaultSettings();
  settings.routes = {{.path_prefix = "/v1", .max_attempts = 1},
                     {.path_prefix = "/v1/reports", .max_attempts = 2}};
  retry::Budget budget(settings.retry_budget);
  internal::Routes routes(settings, settings.attempt_timeout, budget);
  auto attempts = [&](std::string_view url) {
    return routes.For(url).retrier.policy().max_attempts;
  };
  EXPECT_EQ(attempts("/v1/reports/7"), 2);
  EXPECT_EQ(attempts("https://payments:8443/v1/reports?x=1"), 2);
  EXPECT_EQ(attempts("/v1/reportsX"), 1);
  EXPECT_EQ(attempts("/v1"), 1);
  EXPECT_EQ(attempts("/v2/reports"), 3);
  EXPECT_EQ(attempts("https://payments:8443"), 3);
}

TEST_F(RoutePolicyTest, ARoutesMaxAttemptsReplacesTheClientsForItsCallsAlone) {
  Serve([](const ServerRequest&) { return Reply::Status(503); });
  Settings settings = RouteSettings();
  settings.routes = {{.path_prefix = "/v1/reports", .max_attempts = 1}};
  auto client = MakeClient(settings);
  auto report = SendRetrying(*client, Request::Get("/v1/reports/2026"));
  ASSERT_TRUE(report) << report.error().message();
  EXPECT_EQ(report->status, 503);
  EXPECT_EQ(report->attempts, 1);
  auto charge = SendRetrying(*client, Request::Get("/v1/charges/7"));
  ASSERT_TRUE(charge) << charge.error().message();
  EXPECT_EQ(charge->attempts, 3);
  EXPECT_EQ(server->request_count(), 4u);
}

// A report may take 30 s where the client's calls have 1 s: the client's
// deadline ends the order call, the report goes on to its own.
TEST_F(RoutePolicyTest, ARoutesTimeoutBoundsItsCallsInPlaceOfTheClients) {
  Serve([](const ServerRequest&) { return Reply::Hang(); });
  Settings settings = RouteSettings();
  settings.timeout = seconds(1);
  settings.attempt_timeout = seconds(60);
  settings.max_attempts = 1;
  settings.routes = {{.path_prefix = "/exports", .timeout = seconds(30)}};
  auto client = MakeClient(settings);
  auto order = client->SendAsync(Request::Get("/orders/1"));
  auto report = client->SendAsync(Request::Get("/exports/2026.csv"));
  clock.Advance(seconds(1));
  auto ended = order.get();
  ASSERT_FALSE(ended);
  EXPECT_EQ(ended.error().kind(), ErrorKind::kDeadline);
  EXPECT_EQ(report.wait_for(milliseconds(50)), std::future_status::timeout);
  clock.Advance(seconds(28));
  EXPECT_EQ(report.wait_for(milliseconds(50)), std::future_status::timeout);
  clock.Advance(seconds(1));
  auto late = report.get();
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().kind(), ErrorKind::kDeadline) << late.error().message();
}

// A search's attempt is cut at 100 ms and tried again; elsewhere the
// client's 5 s holds.
TEST_F(RoutePolicyTest, ARoutesAttemptTimeoutCutsItsAttemptsAlone) {
  std::atomic<int> searches{0};
  Serve([&](const ServerRequest& request) {
    if (request.target.starts_with("/orders")) return Reply::Hang();
    if (request.target.starts_with("/search") && searches++ == 0) return Reply::Hang();
    return Reply::Ok("found");
  });
  Settings settings = RouteSettings();
  settings.routes = {{.path_prefix = "/search", .attempt_timeout = milliseconds(100)}};
  auto client = MakeClient(settings);
  auto order = client->SendAsync(Request::Get("/orders/7"));
  auto search = client->SendAsync(Request::Get("/search?q=shoes"));
  ASSERT_TRUE(clock.WaitForTimerBy(clock.Now() + milliseconds(100)));
  ASSERT_FALSE(clock.WaitForTimerBy(clock.Now() + milliseconds(99), milliseconds(20)))
      << "the attempt timer is due before 100 ms";
  clock.Advance(milliseconds(100));
  AdvanceAfterAttempt(1, milliseconds(10));
  auto found = search.get();
  ASSERT_TRUE(found) << found.error().message();
  EXPECT_EQ(found->attempts, 2);
  EXPECT_EQ(Attempts().front().error, ErrorKind::kDeadline);
  EXPECT_THAT(Attempts().front().error_message, HasSubstr("attempt timeout (100ms)"));
  // The order's attempt has the client's 5 s: still waiting.
  EXPECT_EQ(order.wait_for(milliseconds(50)), std::future_status::timeout);
  EXPECT_EQ(server->request_count(), 3u);
}

// A lock service answers 409 while another holder lets go: retried on its
// route, returned as it is elsewhere.
TEST_F(RoutePolicyTest, ARoutesClassifyJudgesItsAnswersAlone) {
  std::atomic<int> answers{0};
  Serve([&](const ServerRequest&) {
    return answers++ % 2 == 0 ? Reply::Status(409) : Reply::Ok("held");
  });
  Settings settings = RouteSettings();
  settings.routes = {
      {.path_prefix = "/locks", .classify = [](const Result<Response>& result) {
         if (result && result->status == 409) {
           return Classification{retry::Outcome::kRetry, {}, circuit::Outcome::kSuccess};
         }
         return DefaultClassify(result);
       }}};
  auto client = MakeClient(settings);
  auto lock = SendRetrying(*client, Request::Put("/locks/a", "me"));
  ASSERT_TRUE(lock) << lock.error().message();
  EXPECT_EQ(lock->status, 200);
  EXPECT_EQ(lock->attempts, 2);
  auto other = SendRetrying(*client, Request::Put("/orders/a", "me"));
  ASSERT_TRUE(other) << other.error().message();
  EXPECT_EQ(other->status, 409);
  EXPECT_EQ(other->attempts, 1);
}

// Routes are inside one client: a route's failures open the breaker that
// every call to the dependency goes through.
TEST_F(RoutePolicyTest, EveryRouteSharesTheClientsBreaker) {
  Serve([](const ServerRequest&) { return Reply::Status(503); });
  Settings settings = RouteSettings();
  settings.breaker_policy.trip = [](const circuit::Counts& counts) {
    return counts.consecutive_failures >= 1;
  };
  settings.routes = {{.path_prefix = "/v1/reports", .max_attempts = 1}};
  auto client = MakeClient(settings);
  ASSERT_TRUE(SendRetrying(*client, Request::Get("/v1/reports/1")));
  auto rejected = client->Send(Request::Get("/v1/charges/1"));
  ASSERT_FALSE(rejected);
  EXPECT_EQ(rejected.error().kind(), ErrorKind::kRejected) << rejected.error().message();
  EXPECT_EQ(server->request_count(), 1u) << "the charge was sent";
}

// Every route's retries spend the client's one budget: a route that spent
// it leaves none for the others.
TEST_F(RoutePolicyTest, EveryRouteSpendsTheClientsOneRetryBudget) {
  Serve([](const ServerRequest&) { return Reply::Status(503); });
  Settings settings = RouteSettings();
  // 3 tokens, a retry allowed above 1.5; each failure takes one.
  settings.retry_budget =
      retry::BudgetConfig{.max_tokens = 3, .token_ratio = 0.1, .min_retries_per_second = 0};
  settings.routes = {{.path_prefix = "/a", .max_attempts = 5}};
  auto client = MakeClient(settings);
  auto a = SendRetrying(*client, Request::Get("/a/1"));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->attempts, 2) << "the budget stopped the route's third attempt";
  auto b = SendRetrying(*client, Request::Get("/b/1"));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->attempts, 1) << "the route spent the budget this call would retry on";
}

// A redirect keeps the call's route: the export's one attempt holds for
// where it was sent on to.
TEST_F(RoutePolicyTest, ARedirectKeepsTheCallsRoute) {
  Serve([](const ServerRequest& request) {
    if (request.target == "/exports/a") return Reply::Status(307).Header("Location", "/other/a");
    return Reply::Status(503);
  });
  Settings settings = RouteSettings();
  settings.routes = {{.path_prefix = "/exports", .max_attempts = 1}};
  auto client = MakeClient(settings);
  auto moved = SendRetrying(*client, Request::Get("/exports/a"));
  ASSERT_TRUE(moved) << moved.error().message();
  EXPECT_EQ(moved->status, 503);
  EXPECT_EQ(server->request_count(), 2u) << "the 307, then /other/a once";
}

TEST_F(RoutePolicyTest, ABadRouteIsRefusedNamingIt) {
  auto refused = [&](RoutePolicy route) {
    Settings settings = RouteSettings();
    settings.routes = {{.path_prefix = "/ok"}, std::move(route)};
    auto made = Client::Create(runtime, std::move(settings));
    return made ? std::string() : made.error().message();
  };
  EXPECT_THAT(refused({.path_prefix = "reports"}),
              HasSubstr("Settings.routes[1].path_prefix: must start with '/'"));
  EXPECT_THAT(refused({.path_prefix = "/ok"}), HasSubstr("Settings.routes[1].path_prefix"));
  EXPECT_THAT(refused({.path_prefix = "/search?q"}),
              HasSubstr("Settings.routes[1].path_prefix: a path has no query"));
  EXPECT_THAT(refused({.path_prefix = "/r", .timeout = seconds(0)}),
              HasSubstr("Settings.routes[1].timeout"));
  EXPECT_THAT(refused({.path_prefix = "/r", .attempt_timeout = seconds(-1)}),
              HasSubstr("Settings.routes[1].attempt_timeout"));
  EXPECT_THAT(refused({.path_prefix = "/r", .max_attempts = 0}),
              HasSubstr("Settings.routes[1].max_attempts"));
  EXPECT_EQ(refused({.path_prefix = "/r", .max_attempts = 1}), "");
}

// Every wrong field of every route is named, once each, as every other
// wrong setting is: one start-up refusal says all there is to fix.
TEST_F(RoutePolicyTest, EveryBadRouteFieldIsNamedInOneRefusal) {
  std::vector<RoutePolicy> routes = {
      {.path_prefix = "/ok"},
      {.path_prefix = "v1", .timeout = seconds(0)},
      {.path_prefix = "/ok", .max_attempts = 0},
  };
  auto checked = CheckRoutes(routes);
  ASSERT_FALSE(checked);
  EXPECT_EQ(checked.error().message(),
            "[1].path_prefix: must start with '/' (\"v1\"); [1].timeout: must be positive; "
            "[2].path_prefix: \"/ok\" is [0]'s already; [2].max_attempts: must be 1 or more");
  Settings settings = RouteSettings();
  settings.routes = routes;
  settings.max_attempts = 0;
  auto made = Client::Create(runtime, std::move(settings));
  ASSERT_FALSE(made);
  const std::string& message = made.error().message();
  for (const char* named :
       {"Settings.max_attempts", "Settings.routes[1].path_prefix", "Settings.routes[1].timeout",
        "Settings.routes[2].path_prefix", "Settings.routes[2].max_attempts"}) {
    EXPECT_THAT(message, HasSubstr(named));
  }
}

}  // namespace
}  // namespace outbound::http
