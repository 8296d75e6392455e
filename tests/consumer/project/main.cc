// SPDX-License-Identifier: Apache-2.0
// A program outside the project, built against the installed outbound.
#include <cstdio>

#include "outbound/circuit/breaker.h"
#include "outbound/retry/budget.h"
#include "outbound/testing/manual_clock.h"

int main() {
  outbound::testing::ManualClock clock;
  outbound::circuit::Breaker breaker(outbound::circuit::Config{},
                                     outbound::circuit::DefaultPolicy());
  auto ticket = breaker.Allow(clock.Now());
  if (!ticket) return 1;
  ticket->Settle(outbound::circuit::Outcome::kSuccess, clock.Now());
  outbound::retry::Budget budget(outbound::retry::BudgetConfig{});
  if (!budget.AllowRetry()) return 1;
  std::puts("consumer: built and ran against the installed outbound");
  return 0;
}
