// SPDX-License-Identifier: Apache-2.0
// The user's middleware in the client's call path, against the fake
// `payments` dependency, in fake time.
#include "outbound/http/middleware.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "client_test_support.h"
#include "outbound/version.h"

namespace outbound::http {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Reply;
using testing::ServerRequest;

// Writes "<name>>" on the way down and "<name><" on the way back.
class Journal {
 public:
  void Write(std::string line) {
    std::lock_guard lock(mu_);
    lines_.push_back(std::move(line));
  }
  std::vector<std::string> lines() {
    std::lock_guard lock(mu_);
    return lines_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
};

class LoggingCall final : public CallMiddleware {
 public:
  LoggingCall(std::string name, Journal& journal) : name_(std::move(name)), journal_(journal) {}
  std::optional<Result<Response>> OnRequest(OutgoingRequest&, const CallInfo&) override {
    journal_.Write(name_ + ">");
    return std::nullopt;
  }
  void OnResult(const OutgoingRequest&, Result<Response>& result, const CallInfo&) override {
    journal_.Write(name_ + "<" + std::to_string(result ? result->status : 0));
  }

 private:
  std::string name_;
  Journal& journal_;
};

class LoggingAttempt final : public AttemptMiddleware {
 public:
  LoggingAttempt(std::string name, Journal& journal) : name_(std::move(name)), journal_(journal) {}
  std::optional<Result<Response>> OnRequest(OutgoingRequest& request,
                                            const AttemptInfo& info) override {
    journal_.Write(name_ + ">" + std::to_string(info.attempt));
    request.SetHeader("X-" + name_, std::to_string(info.attempt));
    return std::nullopt;
  }
  void OnResult(const OutgoingRequest&, Result<Response>& result, const AttemptInfo&) override {
    journal_.Write(name_ + "<" + std::to_string(result ? result->status : 0));
  }

 private:
  std::string name_;
  Journal& journal_;
};

// Changes the request with `change` on each attempt.
class Changing final : public AttemptMiddleware {
 public:
  explicit Changing(std::function<void(OutgoingRequest&)> change) : change_(std::move(change)) {}
  std::optional<Result<Response>> OnRequest(OutgoingRequest& request, const AttemptInfo&) override {
    change_(request);
    return std::nullopt;
  }

 private:
  std::function<void(OutgoingRequest&)> change_;
};

class MiddlewareTest : public FakeTransportTestBase, public ::testing::Test {};

TEST_F(MiddlewareTest, CallMiddlewareWrapsTheCallOnceAndAttemptMiddlewareEveryAttemptInOrder) {
  std::atomic<int> calls{0};
  Serve([&](const ServerRequest&) { return Reply::Status(++calls == 1 ? 503 : 200); });
  Journal journal;
  Settings settings = PaymentsSettings();
  settings.call_middleware = {std::make_shared<LoggingCall>("A", journal),
                              std::make_shared<LoggingCall>("B", journal)};
  settings.attempt_middleware = {std::make_shared<LoggingAttempt>("C", journal),
                                 std::make_shared<LoggingAttempt>("D", journal)};
  auto client = MakeClient(std::move(settings));
  auto call = client->SendAsync(Request::Get("/charges/1"));
  AdvanceAfterAttempt(1, milliseconds(50));
  auto response = call.get();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(journal.lines(),
            (std::vector<std::string>{"A>", "B>", "C>1", "D>1", "D<503", "C<503", "C>2", "D>2",
                                      "D<200", "C<200", "B<200", "A<200"}));
  // What the attempt middleware added reached the wire, per attempt.
  auto requests = server->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].header("X-C"), "1");
  EXPECT_EQ(requests[0].header("X-D"), "1");
  EXPECT_EQ(requests[1].header("X-C"), "2");
}

class Cache final : public CallMiddleware {
 public:
  std::optional<Result<Response>> OnRequest(OutgoingRequest& request, const CallInfo&) override {
    if (request.url() != "https://payments:8443/cached") return std::nullopt;
    Response response;
    response.status = 200;
    response.body = "from the cache";
    return response;
  }
};

TEST_F(MiddlewareTest, CallMiddlewareAnsweringFromItsCacheSendsNothing) {
  Serve([&](const ServerRequest&) { return Reply::Ok("from the server"); });
  Journal journal;
  Settings settings = PaymentsSettings();
  settings.call_middleware = {std::make_shared<LoggingCall>("A", journal),
                              std::make_shared<Cache>(),
                              std::make_shared<LoggingCall>("B", journal)};
  auto client = MakeClient(std::move(settings));
  auto cached = client->Send(Request::Get("/cached"));
  ASSERT_TRUE(cached) << cached.error().message();
  EXPECT_EQ(cached->body, "from the cache");
  EXPECT_EQ(cached->attempts, 0);
  EXPECT_EQ(server->request_count(), 0u);
  EXPECT_TRUE(Attempts().empty());
  // The middleware before the cache heard its answer; the one after never ran.
  EXPECT_THAT(journal.lines(), ElementsAre("A>", "A<200"));

  auto fresh = client->Send(Request::Get("/other"));
  ASSERT_TRUE(fresh);
  EXPECT_EQ(fresh->body, "from the server");
  EXPECT_EQ(server->request_count(), 1u);
}

TEST_F(MiddlewareTest, AHeaderAMiddlewareAddsIsCheckedAsTheCallersAndRefusedBeforeSending) {
  Serve([&](const ServerRequest&) { return Reply::Ok(); });
  Settings settings = PaymentsSettings();
  settings.attempt_middleware = {
      std::make_shared<Changing>([](OutgoingRequest& r) { r.SetHeader("X-Split", "a\r\nb: c"); })};
  auto client = MakeClient(std::move(settings));
  auto refused = client->Send(Request::Get("/"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind(), ErrorKind::kInvalidRequest);
  EXPECT_THAT(refused.error().message(), HasSubstr("middleware"));
  EXPECT_EQ(server->request_count(), 0u);
  auto records = Attempts();
  ASSERT_EQ(records.size(), 1u);  // not retried
  EXPECT_EQ(records[0].decision, retry::DecisionKind::kStopped);
}

// The library's User-Agent goes only where nobody named one: a middleware
// that names one replaces it, on the wire as in what later layers see.
TEST_F(MiddlewareTest, AUserAgentAMiddlewareSetsReplacesTheLibrarysOwn) {
  Serve([&](const ServerRequest&) { return Reply::Ok(); });
  Settings settings = PaymentsSettings();
  settings.attempt_middleware = {std::make_shared<Changing>([](OutgoingRequest& r) {
    if (r.url().ends_with("/named")) r.SetHeader("User-Agent", "checkout/4.1");
  })};
  auto client = MakeClient(std::move(settings));
  ASSERT_TRUE(client->Send(Request::Get("/named")));
  ASSERT_TRUE(client->Send(Request::Get("/plain")));
  auto requests = server->requests();
  ASSERT_EQ(requests.size(), 2u);
  for (const auto& request : requests) {
    int user_agents = 0;
    for (const auto& [name, value] : request.headers) user_agents += name == "user-agent";
    EXPECT_EQ(user_agents, 1) << request.target;
  }
  EXPECT_EQ(requests[0].header("user-agent"), "checkout/4.1");
  EXPECT_EQ(requests[1].header("user-agent"), std::string("outbound/") + OUTBOUND_VERSION_STRING);
}

TEST_F(MiddlewareTest, ACallMiddlewareCannotSetHost) {
  Serve([&](const ServerRequest&) { return Reply::Ok(); });
  class SetsHost final : public CallMiddleware {
    std::optional<Result<Response>> OnRequest(OutgoingRequest& r, const CallInfo&) override {
      r.SetHeader("Host", "evil");
      return std::nullopt;
    }
  };
  Settings settings = PaymentsSettings();
  settings.call_middleware = {std::make_shared<SetsHost>()};
  auto client = MakeClient(std::move(settings));
  auto refused = client->Send(Request::Get("/"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind(), ErrorKind::kInvalidRequest);
  EXPECT_EQ(server->request_count(), 0u);
}

TEST_F(MiddlewareTest, AnAttemptMiddlewareCannotSendToAnotherOriginButMayChangeThePath) {
  Serve([&](const ServerRequest&) { return Reply::Ok(); });
  Settings settings = PaymentsSettings();
  settings.attempt_middleware = {std::make_shared<Changing>([](OutgoingRequest& r) {
    r.SetUrl(r.url().ends_with("/away") ? "https://ledger:8443/away" : "/v2/charges");
  })};
  auto client = MakeClient(std::move(settings));
  auto refused = client->Send(Request::Get("/away"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind(), ErrorKind::kOriginRefused);
  EXPECT_EQ(server->request_count(), 0u);

  auto moved = client->Send(Request::Get("/charges"));
  ASSERT_TRUE(moved) << moved.error().message();
  ASSERT_EQ(server->request_count(), 1u);
  EXPECT_EQ(server->requests()[0].target, "/v2/charges");
}

// Classify sees the request each attempt sent, as the attempt middleware
// left it: a DELETE's 404 counts as done, a GET's as the RFC table says.
TEST_F(MiddlewareTest, ClassifySeesTheRequestTheAttemptSent) {
  Serve([&](const ServerRequest&) { return Reply::Status(404); });
  std::mutex seen_mu;
  std::vector<std::string> seen;
  Settings settings = PaymentsSettings();
  settings.attempt_middleware = {std::make_shared<Changing>(
      [](OutgoingRequest& r) { r.SetHeader("X-Signed", std::string(r.method())); })};
  settings.classify = [&](const SentRequest& sent, const Result<Response>& result) {
    {
      std::lock_guard lock(seen_mu);
      seen.push_back(std::string(sent.method) + " " + std::string(sent.url) + " " +
                     std::string(FindHeader(sent.headers, "X-Signed")));
    }
    if (sent.method == "DELETE" && result && result->status == 404) {
      return Classification{retry::Outcome::kSuccess, {}, circuit::Outcome::kSuccess};
    }
    return Classification{retry::Outcome::kStop, {}, circuit::Outcome::kFailure};
  };
  auto client = MakeClient(std::move(settings));
  ASSERT_TRUE(client->Send(Request::Delete("/charges/1")));
  ASSERT_TRUE(client->Send(Request::Get("/charges/2")));
  std::lock_guard lock(seen_mu);
  EXPECT_THAT(seen, ElementsAre("DELETE https://payments:8443/charges/1 DELETE",
                                "GET https://payments:8443/charges/2 GET"));
  EXPECT_EQ(Attempts().size(), 2u);
}

TEST_F(MiddlewareTest, AnAttemptMiddlewaresOwnAnswerIsClassifiedAndRetried) {
  Serve([&](const ServerRequest&) { return Reply::Ok(); });
  class Overloaded final : public AttemptMiddleware {
    std::optional<Result<Response>> OnRequest(OutgoingRequest&, const AttemptInfo& info) override {
      if (info.attempt > 1) return std::nullopt;
      Response response;
      response.status = 503;
      return response;
    }
  };
  Settings settings = PaymentsSettings();
  settings.attempt_middleware = {std::make_shared<Overloaded>()};
  auto client = MakeClient(std::move(settings));
  auto call = client->SendAsync(Request::Get("/"));
  AdvanceAfterAttempt(1, milliseconds(50));
  auto response = call.get();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(server->request_count(), 1u);
  auto records = Attempts();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].status, 503);
  EXPECT_EQ(records[0].decision, retry::DecisionKind::kAgain);
}

// A failure it answers with is the attempt's result as much as an answer:
// classified, and so retried (a GET's transport error).
TEST_F(MiddlewareTest, AnAttemptMiddlewaresOwnFailureIsClassifiedAndRetried) {
  Serve([&](const ServerRequest&) { return Reply::Ok(); });
  class KmsDown final : public AttemptMiddleware {
    std::optional<Result<Response>> OnRequest(OutgoingRequest&, const AttemptInfo& info) override {
      if (info.attempt > 1) return std::nullopt;
      return Result<Response>(Fail(ErrorKind::kTransport, "the signing service is down"));
    }
  };
  Settings settings = PaymentsSettings();
  settings.attempt_middleware = {std::make_shared<KmsDown>()};
  auto client = MakeClient(std::move(settings));
  auto call = client->SendAsync(Request::Get("/"));
  AdvanceAfterAttempt(1, milliseconds(50));
  auto response = call.get();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(server->request_count(), 1u);
  auto records = Attempts();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].error, ErrorKind::kTransport);
  EXPECT_EQ(records[0].decision, retry::DecisionKind::kAgain);
}

// Its own refusal (a local quota) is no failure of the dependency's: the
// call ends with it, nothing retried or counted.
TEST_F(MiddlewareTest, AnAttemptMiddlewaresOwnRefusalEndsTheCallUncounted) {
  Serve([&](const ServerRequest&) { return Reply::Ok(); });
  class Quota final : public AttemptMiddleware {
    std::optional<Result<Response>> OnRequest(OutgoingRequest&, const AttemptInfo&) override {
      return Result<Response>(Fail(ErrorKind::kRejected, "over this process's quota"));
    }
  };
  Settings settings = PaymentsSettings();
  settings.attempt_middleware = {std::make_shared<Quota>()};
  settings.breaker_policy.trip = [](const circuit::Counts& c) { return c.failures >= 1; };
  auto client = MakeClient(std::move(settings));
  auto response = client->Send(Request::Get("/"));
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().kind(), ErrorKind::kRejected);
  EXPECT_EQ(response.error().message(), "payments:8443: over this process's quota");
  EXPECT_EQ(Attempts().size(), 1u);
  EXPECT_EQ(client->breaker_state(), circuit::State::kClosed);
  EXPECT_EQ(server->request_count(), 0u);
}

TEST_F(MiddlewareTest, AMiddlewareThatThrowsEndsTheCallAndTheCallerGetsTheException) {
  Serve([&](const ServerRequest&) { return Reply::Ok(); });
  class Throws final : public AttemptMiddleware {
    std::optional<Result<Response>> OnRequest(OutgoingRequest&, const AttemptInfo&) override {
      throw std::runtime_error("signer broke");
    }
  };
  Settings settings = PaymentsSettings();
  settings.attempt_middleware = {std::make_shared<Throws>()};
  auto client = MakeClient(std::move(settings));
  EXPECT_THROW((void)client->Send(Request::Get("/")), std::runtime_error);
  EXPECT_EQ(server->request_count(), 0u);
  EXPECT_EQ(Attempts().size(), 1u);  // not retried
}

TEST_F(MiddlewareTest, NullMiddlewareIsASettingsError) {
  Settings settings = PaymentsSettings();
  settings.call_middleware.push_back(nullptr);
  settings.attempt_middleware.push_back(nullptr);
  auto client = Client::Create(runtime, std::move(settings));
  ASSERT_FALSE(client);
  EXPECT_EQ(client.error().kind(), ErrorKind::kInvalidSettings);
  EXPECT_THAT(client.error().message(), HasSubstr("Settings.call_middleware[0] is null"));
  EXPECT_THAT(client.error().message(), HasSubstr("Settings.attempt_middleware[0] is null"));
}

}  // namespace
}  // namespace outbound::http
