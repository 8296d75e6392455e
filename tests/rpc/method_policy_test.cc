// SPDX-License-Identifier: Apache-2.0
// Policy per method (rpc::Settings::methods) on the call core, in fake time
// on the kit's FakeTransport: a method's or a service's attempts, timeout,
// attempt timeout and classify replace the client's for its calls alone,
// a method's own policy wins over its service's, and every method shares
// the client's breaker.
#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "methods.h"
#include "outbound/rpc/client.h"
#include "outbound/testing/fake_grpc.h"
#include "outbound/testing/fake_transport.h"
#include "outbound/testing/fixed_random.h"
#include "outbound/testing/manual_clock.h"

namespace outbound::rpc {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kReport[] = "/reports.v1.Reports/Yearly";
constexpr char kQuery[] = "/search.v1.Search/Query";

class MethodPolicyTest : public ::testing::Test {
 protected:
  MethodPolicyTest()
      : transport_(clock_, [this](const testing::ServerRequest& r) { return Answer(r); }) {
    runtime_.clock = &clock_;
    runtime_.random = &random_;
    runtime_.transport = &transport_;
  }

  // OK with one empty message; any other code as a Trailers-Only answer;
  // a negative one never answers.
  static testing::Reply Grpc(int code) {
    if (code < 0) return testing::GrpcReply::Hang();
    if (code == 0) return testing::GrpcReply::Ok("");
    return testing::GrpcReply::TrailersOnly(static_cast<Code>(code));
  }

  // Each call's answers in turn, per method; the last one repeats.
  void Script(std::string method, std::vector<int> codes) {
    std::lock_guard lock(mu_);
    script_[std::move(method)] = std::move(codes);
  }

  testing::Reply Answer(const testing::ServerRequest& request) {
    std::lock_guard lock(mu_);
    seen_.push_back(request);
    arrived_.notify_all();
    std::vector<int>& codes = script_[request.target];
    if (codes.empty()) return Grpc(12);  // UNIMPLEMENTED
    int code = codes.front();
    if (codes.size() > 1) codes.erase(codes.begin());
    return Grpc(code);
  }

  // Waits until `n` calls have reached the server (a safety net of 10 s
  // real time, not a tolerance).
  bool WaitForSeen(std::size_t n) {
    std::unique_lock lock(mu_);
    return arrived_.wait_for(lock, seconds(10), [&] { return seen_.size() >= n; });
  }

  // The value of header `name` (lower case) of `request`, "" if absent.
  static std::string HeaderOf(const testing::ServerRequest& request, std::string_view name) {
    for (const auto& [key, value] : request.headers) {
      if (key == name) return value;
    }
    return "";
  }

  std::vector<testing::ServerRequest> Seen(std::string_view method) {
    std::lock_guard lock(mu_);
    std::vector<testing::ServerRequest> out;
    for (const auto& request : seen_) {
      if (request.target == method) out.push_back(request);
    }
    return out;
  }

  std::unique_ptr<Client> Make(Settings settings) {
    settings.addr = "carts:9090";
    auto client = Client::Create(runtime_, std::move(settings));
    EXPECT_TRUE(client) << client.error().message();
    return client ? std::move(*client) : nullptr;
  }

  static std::future<Reply> Start(Client& client, std::string_view method) {
    auto replied = std::make_shared<std::promise<Reply>>();
    client.CallAsync(method, "x", [replied](Reply reply, std::exception_ptr) {
      replied->set_value(std::move(reply));
    });
    return replied->get_future();
  }

  // Makes a call and moves the clock to each timer due within a second
  // (backoffs, short attempt timeouts) until it ends.
  Reply Drive(Client& client, std::string_view method) {
    auto reply = Start(client, method);
    while (reply.wait_for(milliseconds(1)) != std::future_status::ready) {
      std::optional<TimePoint> next = clock_.next_timer();
      if (next && *next <= clock_.Now() + seconds(1)) clock_.AdvanceTo(*next);
    }
    return reply.get();
  }

  testing::ManualClock clock_;
  testing::FixedRandom random_{0.0};
  std::mutex mu_;
  std::condition_variable arrived_;
  std::map<std::string, std::vector<int>, std::less<>> script_;  // guarded by mu_
  std::vector<testing::ServerRequest> seen_;                     // guarded by mu_
  testing::FakeTransport transport_;
  Runtime runtime_;
};

TEST_F(MethodPolicyTest, AServicesMaxAttemptsReplacesTheClientsForItsMethodsAlone) {
  Script(kReport, {14});  // UNAVAILABLE, retryable
  Script(kGet, {14});
  Settings settings = DefaultSettings();
  settings.methods = {{.method = "/reports.v1.Reports/", .max_attempts = 1}};
  auto client = Make(settings);
  Reply report = Drive(*client, kReport);
  EXPECT_EQ(report.status.code, Code::kUnavailable);
  EXPECT_EQ(report.attempts, 1);
  Reply get = Drive(*client, kGet);
  EXPECT_EQ(get.status.code, Code::kUnavailable);
  EXPECT_EQ(get.attempts, 3);
}

// A call middleware's changed request is checked again as a new one; the
// method's idempotency (any method not in non_idempotent_methods) stays
// with it, so an UNAVAILABLE is still retried.
TEST_F(MethodPolicyTest, ACallMiddlewaresRequestKeepsItsMethodsIdempotency) {
  class AddsMetadata final : public http::CallMiddleware {
    std::optional<Result<http::Response>> OnRequest(http::OutgoingRequest& request,
                                                    const http::CallInfo&) override {
      request.SetHeader("x-tenant", "blue");
      return std::nullopt;
    }
  };
  Script(kGet, {14, 0});  // UNAVAILABLE, then OK
  Settings settings = DefaultSettings();
  settings.call_middleware = {std::make_shared<AddsMetadata>()};
  auto client = Make(settings);
  Reply get = Drive(*client, kGet);
  EXPECT_TRUE(get.status.ok()) << get.status.message;
  EXPECT_EQ(get.attempts, 2);
  auto seen = Seen(kGet);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(HeaderOf(seen[1], "x-tenant"), "blue");
}

// A method's own policy wins over its service's.
TEST_F(MethodPolicyTest, AMethodsOwnPolicyWinsOverItsServices) {
  Script(kReport, {14});
  Script("/reports.v1.Reports/Daily", {14});
  Settings settings = DefaultSettings();
  settings.methods = {{.method = "/reports.v1.Reports/", .max_attempts = 1},
                      {.method = kReport, .max_attempts = 2}};
  auto client = Make(settings);
  EXPECT_EQ(Drive(*client, kReport).attempts, 2);
  EXPECT_EQ(Drive(*client, "/reports.v1.Reports/Daily").attempts, 1);
}

// A yearly report may take 30 s where the client's calls have 1 s; the
// server is told so in grpc-timeout.
TEST_F(MethodPolicyTest, AMethodsTimeoutBoundsItsCallsAndIsWhatTheServerIsTold) {
  Script(kReport, {-1});
  Script(kGet, {-1});
  Settings settings = DefaultSettings();
  settings.timeout = seconds(1);
  settings.methods = {{.method = kReport, .timeout = seconds(30)}};
  auto client = Make(settings);
  auto get = Start(*client, kGet);
  auto report = Start(*client, kReport);
  ASSERT_TRUE(WaitForSeen(2));
  EXPECT_EQ(HeaderOf(Seen(kGet).at(0), "grpc-timeout"), "1000000u");
  EXPECT_EQ(HeaderOf(Seen(kReport).at(0), "grpc-timeout"), "30000000u");
  clock_.Advance(seconds(1));
  EXPECT_EQ(get.get().status.code, Code::kDeadlineExceeded);
  EXPECT_EQ(report.wait_for(milliseconds(50)), std::future_status::timeout);
  clock_.Advance(seconds(29));
  EXPECT_EQ(report.get().status.code, Code::kDeadlineExceeded);
}

// A client without an attempt timeout, a method with one: its attempts
// are cut at 200 ms (the server told so) and sent again; the others have
// the call's whole time.
TEST_F(MethodPolicyTest, AMethodsAttemptTimeoutCutsItsAttemptsOnAClientWithout) {
  Script(kQuery, {-1, 0});
  Settings settings = DefaultSettings();
  settings.methods = {{.method = kQuery, .attempt_timeout = milliseconds(200)}};
  auto client = Make(settings);
  Reply query = Drive(*client, kQuery);
  EXPECT_TRUE(query.status.ok()) << query.status.message;
  EXPECT_EQ(query.attempts, 2);
  ASSERT_EQ(Seen(kQuery).size(), 2u);
  EXPECT_EQ(HeaderOf(Seen(kQuery)[0], "grpc-timeout"), "200000u");

  Script(kGet, {0});
  Reply get = Drive(*client, kGet);
  EXPECT_TRUE(get.status.ok());
  EXPECT_EQ(HeaderOf(Seen(kGet).at(0), "grpc-timeout"), "10000000u");
}

// A client with an attempt timeout: a method without one of its own has
// the client's, one with a longer one has that.
TEST_F(MethodPolicyTest, AMethodWithoutAnAttemptTimeoutHasTheClientsAndOneWithItsOwnHasThat) {
  Script(kGet, {0});
  Script(kReport, {0});
  Settings settings = DefaultSettings();
  settings.attempt_timeout = milliseconds(100);
  settings.methods = {{.method = kReport, .attempt_timeout = seconds(1)},
                      {.method = "/cart.v1.Carts/", .max_attempts = 2}};
  auto client = Make(settings);
  EXPECT_TRUE(Drive(*client, kGet).status.ok());
  EXPECT_TRUE(Drive(*client, kReport).status.ok());
  EXPECT_EQ(HeaderOf(Seen(kGet).at(0), "grpc-timeout"), "100000u");
  EXPECT_EQ(HeaderOf(Seen(kReport).at(0), "grpc-timeout"), "1000000u");
}

// A method whose NOT_FOUND means "not yet": retried on its policy's
// classify, final elsewhere.
TEST_F(MethodPolicyTest, AMethodsClassifyJudgesItsAnswersAlone) {
  Script(kQuery, {5, 0});  // NOT_FOUND, then OK
  Script(kGet, {5, 0});
  Settings settings = DefaultSettings();
  settings.methods = {
      {.method = kQuery,
       .classify = [](std::string_view method, const Status& status, const Trailers& trailers) {
         if (status.code == Code::kNotFound) {
           return Classification{retry::Outcome::kRetry};
         }
         return DefaultClassify(method, status, trailers);
       }}};
  auto client = Make(settings);
  Reply query = Drive(*client, kQuery);
  EXPECT_TRUE(query.status.ok()) << query.status.message;
  EXPECT_EQ(query.attempts, 2);
  Reply get = Drive(*client, kGet);
  EXPECT_EQ(get.status.code, Code::kNotFound);
  EXPECT_EQ(get.attempts, 1);
}

TEST_F(MethodPolicyTest, EveryMethodSharesTheClientsBreaker) {
  Script(kReport, {14});
  Script(kGet, {0});
  Settings settings = DefaultSettings();
  settings.breaker_policy.trip = [](const circuit::Counts& counts) {
    return counts.consecutive_failures >= 1;
  };
  settings.methods = {{.method = "/reports.v1.Reports/", .max_attempts = 1}};
  auto client = Make(settings);
  EXPECT_EQ(Drive(*client, kReport).status.code, Code::kUnavailable);
  Reply get = Drive(*client, kGet);
  EXPECT_EQ(get.status.code, Code::kUnavailable);
  EXPECT_TRUE(get.status.rejected) << get.status.message;
  EXPECT_TRUE(Seen(kGet).empty());
}

TEST_F(MethodPolicyTest, ABadPolicyIsRefusedNamingIt) {
  Settings settings = DefaultSettings();
  settings.addr = "carts:9090";
  settings.methods = {{.method = kQuery}, {.method = "search.v1.Search/Query"}};
  auto refused = Client::Create(runtime_, settings);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find(
                "Settings.methods[1].method: \"search.v1.Search/Query\" is neither a method's"),
            std::string::npos)
      << refused.error().message();
  for (const char* wrong : {"/", "/search.v1.Search/Query/", "/a/b/c"}) {
    settings.methods = {{.method = wrong}};
    EXPECT_FALSE(Client::Create(runtime_, settings)) << wrong;
  }
  settings.methods = {{.method = "/search.v1.Search/"}, {.method = "/search.v1.Search/"}};
  refused = Client::Create(runtime_, settings);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("Settings.methods[1].method"), std::string::npos)
      << refused.error().message();
  settings.methods = {{.method = kQuery, .max_attempts = 0}};
  refused = Client::Create(runtime_, settings);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("Settings.methods[0].max_attempts"), std::string::npos)
      << refused.error().message();
}

// Every wrong field of every policy is named once: a bad name is not
// named again as a route's prefix.
TEST_F(MethodPolicyTest, EveryBadPolicyFieldIsNamedInOneRefusal) {
  auto checked = CheckMethods({{.method = "search", .max_attempts = 0},
                               {.method = kQuery},
                               {.method = kQuery, .timeout = seconds(-1)}});
  ASSERT_FALSE(checked);
  EXPECT_EQ(checked.error().message(),
            "[0].method: \"search\" is neither a method's full name (\"/pkg.Service/Method\") "
            "nor a service's (\"/pkg.Service/\"); [0].max_attempts: must be 1 or more; "
            "[2].method: \"" +
                std::string(kQuery) + "\" is [1]'s already; [2].timeout: must be positive");
}

}  // namespace
}  // namespace outbound::rpc
