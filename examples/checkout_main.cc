// SPDX-License-Identifier: Apache-2.0
//
// The checkout service's start-up: the payments client's settings from
// PAYMENTS_* variables (PAYMENTS_URL, PAYMENTS_TIMEOUT, PAYMENTS_CA_FILE...),
// every bad one reported at once (exit 78), then one call.
//
//   PAYMENTS_URL=https://payments:8443 PAYMENTS_CA_FILE=ca.pem checkout cus_7
#include <iostream>

#include "checkout.h"
#include "outbound/config/http_settings.h"
#include "outbound/http/client.h"

namespace http = outbound::http;
namespace config = outbound::config;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: checkout CUSTOMER\n";
    return 2;
  }
  // [example startup]
  config::Resolver env(config::ProcessEnvironment());
  http::Settings settings = config::ReadHttpSettings(env, "PAYMENTS_", http::DefaultSettings());
  if (auto read = env.Finish(); !read) {
    std::cerr << "checkout: " << read.error().message() << "\n";  // every bad variable, named
    return config::kExitConfig;
  }
  checkout::Checkout checkout(http::Client::CreateOrThrow(outbound::Runtime{}, settings));
  // [end startup]

  // [example errors]
  auto charges = checkout.Charges(argv[1], 10);
  if (!charges) {
    std::cerr << "checkout: " << outbound::ToString(charges.error().kind()) << ": "
              << charges.error().message() << "\n";
    switch (charges.error().kind()) {
      case outbound::ErrorKind::kRejected:  // payments keeps failing: the breaker is open
      case outbound::ErrorKind::kDeadline:  // no answer in time
        return 69;                          // EX_UNAVAILABLE
      default:
        return 1;
    }
  }
  for (const std::string& id : *charges) std::cout << id << "\n";
  // [end errors]
  return 0;
}
