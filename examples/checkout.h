// SPDX-License-Identifier: Apache-2.0
//
// A service's code that calls its payments dependency through outbound:
// the example the README and docs/http-client.md quote. The client is
// built once (in main, or in a test with the kit) and handed in as an
// http::Sender, so a unit test can hand in a testing::ScriptedClient.
#ifndef OUTBOUND_EXAMPLES_CHECKOUT_H_
#define OUTBOUND_EXAMPLES_CHECKOUT_H_

#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "outbound/error.h"
#include "outbound/http/sender.h"

namespace checkout {

class Checkout {
 public:
  explicit Checkout(std::unique_ptr<outbound::http::Sender> payments)
      : payments_(std::move(payments)) {}

  // Charges a customer; returns the charge's id. `key` identifies this
  // charge across retries (and across restarts of the caller).
  outbound::Result<std::string> Charge(std::string_view customer, int amount_cents,
                                       std::string_view key);

  // The ids of a customer's latest charges.
  outbound::Result<std::vector<std::string>> Charges(std::string_view customer, int limit);

  // Sets a charge's description.
  outbound::Result<void> Describe(std::string_view charge_id, std::string_view description);

  // Cancels a charge; a charge already gone counts as cancelled.
  outbound::Result<void> Cancel(std::string_view charge_id);

  // Writes every charge of a month ("2026-11") to `out` as CSV, as the
  // dependency sends it: however large, it is never held whole.
  outbound::Result<void> Export(std::string_view month, std::ostream& out);

  // Sends the file at `path` as evidence for a disputed charge, read as it
  // goes: however large, it is never held whole.
  outbound::Result<void> SubmitEvidence(std::string_view dispute_id, const std::string& path);

 private:
  std::unique_ptr<outbound::http::Sender> payments_;
};

}  // namespace checkout

#endif  // OUTBOUND_EXAMPLES_CHECKOUT_H_
