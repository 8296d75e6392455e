// SPDX-License-Identifier: Apache-2.0
//
// docs/failure-injection.md's blocks, compiled (scripts/check-doc-examples).
#include "outbound/context.h"
#include "outbound/http/settings.h"
#include "outbound/runtime.h"

namespace outbound::docs {

void FaultsSettingsExample(http::Settings& settings) {
  // [example faults-settings]
  settings.faults.enabled = true;            // off by default
  settings.faults.forward_scenario = false;  // the default: strip it
  // [end faults-settings]
}

bool FaultsRuntimeExample() {
  // [example faults-runtime]
  outbound::Runtime runtime{.inject_faults = true};
  // [end faults-runtime]
  return runtime.inject_faults;
}

Context FaultsScenarioExample() {
  // [example faults-scenario]
  Context ctx{
      .baggage = {{"outbound-fault", "http:payments:8443=abort,50%;http:ledger:443=delay:2s", ""}}};
  // [end faults-scenario]
  return ctx;
}

}  // namespace outbound::docs
