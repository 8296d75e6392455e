// SPDX-License-Identifier: Apache-2.0
// Failure injection on the gRPC client (SPEC §10, docs/failure-injection.md):
// a scenario in a call's baggage naming "grpc:backend:9090" aborts, answers
// or delays its attempts, and the fault is real to every layer — retried
// as classify says, counted by the breaker, waited on the Runtime's clock —
// against a real grpc++ server that sees only what was really sent.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "echo_server.h"
#include "outbound/rpc/client.h"

namespace outbound::rpc {
namespace {

Context WithScenario(std::string scenario) {
  Context context;
  context.baggage = {{"tenant", "acme", ""}, {"outbound-fault", std::move(scenario), ""}};
  return context;
}

Settings FaultsOn() {
  Settings settings = DefaultSettings();
  settings.faults.enabled = true;
  return settings;
}

class RpcFaultInjection : public RpcClient {};

TEST_F(RpcFaultInjection, AnAbortIsUnavailableRetriedCountedAndNeverSent) {
  EchoServer server(Echoing());
  auto client = Make(server, FaultsOn());
  Status status = Say(*client, "x", WithScenario("grpc:backend:9090=abort"));
  EXPECT_EQ(status.code, Code::kUnavailable);
  EXPECT_NE(status.message.find("injected fault"), std::string::npos) << status.message;
  EXPECT_FALSE(status.rejected);
  EXPECT_EQ(server.calls(), 0);
  EXPECT_EQ(client->breaker().counts(clock_.Now()).failures, 3) << "each attempt a failure";
}

// "status:503,retry-after:2" is UNAVAILABLE with a 2 s pushback: waited in
// fake time, as a server's would be.
TEST_F(RpcFaultInjection, AStatusIsTheCodeGrpcGivesItAndItsRetryAfterIsPushback) {
  EchoServer server(Echoing());
  Settings settings = FaultsOn();
  settings.max_attempts = 2;
  auto client = Make(server, settings);
  TimePoint start = clock_.Now();
  Status status = Say(*client, "x", WithScenario("grpc:backend:9090=status:503,retry-after:2"));
  EXPECT_EQ(status.code, Code::kUnavailable);
  EXPECT_EQ(clock_.Now() - start, std::chrono::seconds(2));
  EXPECT_EQ(server.calls(), 0);

  // UNIMPLEMENTED (gRPC's code for 404) is not retried by DefaultClassify.
  Status missing = Say(*client, "x", WithScenario("grpc:backend:9090=status:404"));
  EXPECT_EQ(missing.code, Code::kUnimplemented);
  EXPECT_EQ(server.calls(), 0);
}

// The injected code is the wire's own mapping (CodeForHttpStatus), the one a
// real answer without grpc-status gets: 431 is INTERNAL in gRPC's table.
TEST_F(RpcFaultInjection, AStatusTakesTheWiresMappingOfHttpToGrpcCodes) {
  EchoServer server(Echoing());
  auto client = Make(server, FaultsOn());
  Status status = Say(*client, "x", WithScenario("grpc:backend:9090=status:431"));
  EXPECT_EQ(status.code, Code::kInternal);
  EXPECT_EQ(status.message, "injected fault: HTTP status 431");
  Status other = Say(*client, "x", WithScenario("grpc:backend:9090=status:418"));
  EXPECT_EQ(other.code, Code::kUnknown);
  EXPECT_EQ(server.calls(), 0);
}

TEST_F(RpcFaultInjection, ADelayIsWaitedOnTheClockThenTheAttemptIsSent) {
  EchoServer server(Echoing());
  auto client = Make(server, FaultsOn());
  TimePoint start = clock_.Now();
  Status status = Say(*client, "late", WithScenario("grpc:backend:9090=delay:2s"));
  EXPECT_TRUE(status.ok()) << status.message;
  EXPECT_EQ(reply_.text(), "echo: late");
  EXPECT_EQ(clock_.Now() - start, std::chrono::seconds(2));
  EXPECT_EQ(server.calls(), 1);

  // Longer than the call's Timeout: the deadline ends it, nothing is sent.
  Settings short_timeout = FaultsOn();
  short_timeout.timeout = std::chrono::seconds(1);
  auto hurried = Make(server, short_timeout);
  Status expired = Say(*hurried, "x", WithScenario("grpc:backend:9090=delay:5s"));
  EXPECT_EQ(expired.code, Code::kDeadlineExceeded) << expired.message;
  EXPECT_EQ(server.calls(), 1);
}

TEST_F(RpcFaultInjection, OnlyItsOwnPointWithFaultsOnIsAffected) {
  EchoServer server(Echoing());
  auto off = Make(server);  // faults off: the baggage is not read
  EXPECT_TRUE(Say(*off, "a", WithScenario("grpc:backend:9090=abort")).ok());
  auto on = Make(server, FaultsOn());
  EXPECT_TRUE(Say(*on, "b", WithScenario("grpc:other:9090=abort")).ok());
  EXPECT_TRUE(Say(*on, "c", WithScenario("http:backend:9090=abort")).ok());
  EXPECT_TRUE(Say(*on, "d", WithScenario("grpc:backend:9090=explode")).ok());  // malformed
  EXPECT_EQ(server.calls(), 4);

  // The Runtime can turn faults on for every client built on it.
  runtime_.inject_faults = true;
  auto everywhere = Make(server);
  EXPECT_EQ(Say(*everywhere, "e", WithScenario("grpc:backend:9090=abort")).code,
            Code::kUnavailable);
  EXPECT_EQ(server.calls(), 4);
}

// Each call's `baggage` metadata as the server received it ("" for none).
class BaggageRecorder {
 public:
  Handler handler() {
    return [this](int, grpc::ServerContext* context, const EchoRequest& request, EchoReply* reply) {
      auto found = context->client_metadata().find("baggage");
      std::lock_guard lock(mu_);
      received_.emplace_back(found == context->client_metadata().end()
                                 ? ""
                                 : std::string(found->second.data(), found->second.size()));
      return Ok(reply, request);
    };
  }
  std::vector<std::string> received() {
    std::lock_guard lock(mu_);
    return received_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> received_;
};

TEST_F(RpcFaultInjection, TheScenarioIsStrippedFromTheBaggageSentUnlessForwarded) {
  BaggageRecorder recorder;
  EchoServer server(recorder.handler());
  auto stripping = Make(server, FaultsOn());
  EXPECT_TRUE(Say(*stripping, "x", WithScenario("grpc:other:9090=abort")).ok());
  Settings forwarding = FaultsOn();
  forwarding.faults.forward_scenario = true;
  auto forwarder = Make(server, forwarding);
  EXPECT_TRUE(Say(*forwarder, "y", WithScenario("grpc:other:9090=abort")).ok());
  std::vector<std::string> baggage = recorder.received();
  ASSERT_EQ(baggage.size(), 2u);
  EXPECT_EQ(baggage[0], "tenant=acme");
  EXPECT_NE(baggage[1].find("outbound-fault="), std::string::npos) << baggage[1];
}

// With faults off the baggage is not read, so nothing is stripped from it
// either (as the HTTP client does): the dependency gets it whole, the
// scenario included, whether or not it names this client.
TEST_F(RpcFaultInjection, WithFaultsOffTheBaggageIsSentWhole) {
  BaggageRecorder recorder;
  EchoServer server(recorder.handler());
  auto off = Make(server);
  EXPECT_TRUE(Say(*off, "x", WithScenario("grpc:other:9090=abort")).ok());
  EXPECT_TRUE(Say(*off, "y", WithScenario("grpc:backend:9090=abort")).ok());
  std::vector<std::string> baggage = recorder.received();
  ASSERT_EQ(baggage.size(), 2u);
  EXPECT_EQ(baggage[0], "tenant=acme,outbound-fault=grpc:other:9090=abort");
  EXPECT_EQ(baggage[1], "tenant=acme,outbound-fault=grpc:backend:9090=abort");
}

}  // namespace
}  // namespace outbound::rpc
