// SPDX-License-Identifier: Apache-2.0
#include "demo_clients.h"

#include <iostream>
#include <utility>

namespace outbound::tool {

http::Settings DemoDependency(const std::string& host, const testing::TestCA& ca) {
  http::Settings s = http::DefaultSettings();
  s.base_url = "https://" + host + ":8443";
  s.tls = http::TlsSettings{.root_pem = ca.pem()};
  return s;
}

http::Settings NaiveSettings(http::Settings base) {
  base.max_attempts = 1;
  base.attempt_timeout = base.timeout;
  base.breaker_policy.trip = [](const circuit::Counts&) { return false; };
  return base;
}

std::unique_ptr<DemoClients> MakeDemoClients(const Runtime& runtime,
                                             const http::Settings& naive,
                                             const http::Settings& outbound) {
  auto made_naive = http::Client::Create(runtime, naive);
  auto made_outbound = http::Client::Create(runtime, outbound);
  if (!made_naive || !made_outbound) {
    std::cerr << "outbound demo: "
              << (made_naive ? made_outbound : made_naive).error().message() << "\n";
    return nullptr;
  }
  auto clients = std::make_unique<DemoClients>();
  clients->naive = std::move(*made_naive);
  clients->outbound = std::move(*made_outbound);
  return clients;
}

}  // namespace outbound::tool
