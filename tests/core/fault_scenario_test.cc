// SPDX-License-Identifier: Apache-2.0
// Reading a failure-injection scenario (docs/failure-injection.md), as the
// HTTP and the gRPC client both do.
#include "outbound/internal/fault_scenario.h"

#include <gtest/gtest.h>

namespace outbound::internal {
namespace {

TEST(FaultScenarioTest, ThePointIsComparedWithoutRegardToCase) {
  for (const char* scenario :
       {"http:payments:8443=abort", "HTTP:PAYMENTS:8443=abort", "Http:Payments:8443=abort"}) {
    auto fault = ParseFaultScenario(scenario, "http:payments:8443");
    ASSERT_TRUE(fault) << scenario;
    ASSERT_TRUE(*fault) << scenario;
    EXPECT_EQ((*fault)->kind, InjectedFault::Kind::kAbort) << scenario;
  }
  auto grpc = ParseFaultScenario("GRPC:Carts:9090=status:503", "grpc:carts:9090");
  ASSERT_TRUE(grpc);
  ASSERT_TRUE(*grpc);
  EXPECT_EQ((*grpc)->status, 503);

  // In capitals, another point is still another point.
  auto other = ParseFaultScenario("HTTP:LEDGER:443=abort", "http:payments:8443");
  ASSERT_TRUE(other);
  EXPECT_FALSE(*other);
}

TEST(FaultScenarioTest, TheFirstRuleForAPointWinsWhateverItsCase) {
  auto fault = ParseFaultScenario("HTTP:payments:8443=delay:2s; http:payments:8443=abort",
                                  "http:payments:8443");
  ASSERT_TRUE(fault);
  ASSERT_TRUE(*fault);
  EXPECT_EQ((*fault)->kind, InjectedFault::Kind::kDelay);
  EXPECT_EQ((*fault)->delay, std::chrono::seconds(2));
}

TEST(FaultScenarioTest, AnythingButHttpOrGrpcIsMalformedInAnyCase) {
  for (const char* scenario : {"https:payments:8443=abort", "HTTPS:payments:8443=abort",
                               "payments:8443=abort", "HTTP=abort", "http:payments:8443=ABORT"}) {
    EXPECT_FALSE(ParseFaultScenario(scenario, "http:payments:8443")) << scenario;
  }
}

}  // namespace
}  // namespace outbound::internal
