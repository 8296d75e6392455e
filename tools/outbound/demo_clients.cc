// SPDX-License-Identifier: Apache-2.0
#include "demo_clients.h"

#include <fstream>
#include <iostream>
#include <utility>

#include "common.h"

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

std::unique_ptr<DemoClients> MakeDemoClients(const Runtime& runtime, const http::Settings& naive,
                                             const http::Settings& outbound) {
  auto made_naive = http::Client::Create(runtime, naive);
  auto made_outbound = http::Client::Create(runtime, outbound);
  if (!made_naive || !made_outbound) {
    std::cerr << "outbound demo: " << (made_naive ? made_outbound : made_naive).error().message()
              << "\n";
    return nullptr;
  }
  auto clients = std::make_unique<DemoClients>();
  clients->naive = std::move(*made_naive);
  clients->outbound = std::move(*made_outbound);
  return clients;
}

void PrintDemoRow(const std::string& label, const std::string& naive, const std::string& outbound,
                  std::size_t label_width) {
  auto pad = [](const std::string& cell, std::size_t width) {
    std::size_t chars = 0;
    for (char c : cell) chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
    return cell + std::string(width > chars ? width - chars : 0, ' ');
  };
  std::cout << "  " << pad(label, label_width) << pad(naive, 16) << outbound << "\n";
}

int WriteDemoFiles(const std::string& svg_path, const std::string& svg,
                   const std::string& json_path, const nlohmann::json& report) {
  std::cout << "\n";
  if (!WriteFileOrSay(svg_path, svg)) return kExitWriteError;
  std::cout << "wrote " << svg_path << "\n";
  if (json_path.empty()) return kExitOk;
  if (!WriteFileOrSay(json_path, report.dump(2) + "\n")) return kExitWriteError;
  std::cout << "wrote " << json_path << "\n";
  return kExitOk;
}

}  // namespace outbound::tool
