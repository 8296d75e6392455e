// SPDX-License-Identifier: Apache-2.0
// Under an outage the retry budget holds: every request is answered 503 and
// many callers keep calling; the dependency's load per call is counted with
// the default budget and with a budget too large to run out in the run.
// The breaker is turned off here, so only the budget limits retries.
//
//   outage_bench [--calls N] [--callers C]    prints one JSON line
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "outbound/http/client.h"
#include "outbound/testing/fake_server.h"
#include "outbound/testing/network_map.h"
#include "outbound/testing/test_ca.h"

namespace {

using namespace outbound;

// Attempts the dependency received per call, for `calls` calls made by
// `callers` callers at once, through a client with `budget`.
double AttemptsPerCall(const retry::BudgetConfig& budget, int calls, int callers) {
  testing::TestCA ca;
  std::atomic<int> received{0};
  auto server = testing::FakeServer::Start({.tls = testing::ServerTls(ca.IssueServer({"payments"})),
                                            .handler = [&](const testing::ServerRequest&) {
                                              ++received;
                                              return testing::Reply::Status(503, "down");
                                            }});
  testing::NetworkMap network;
  network.Add("payments", 8443, "127.0.0.1", (*server)->port());
  http::Settings settings = http::DefaultSettings();
  settings.base_url = "https://payments:8443";
  settings.tls = http::TlsSettings{.root_pem = ca.pem()};
  settings.retry_budget = budget;
  settings.backoff_base = std::chrono::milliseconds(1);
  settings.backoff_max = std::chrono::milliseconds(10);
  settings.breaker_policy.trip = [](const circuit::Counts&) { return false; };
  Runtime runtime;
  runtime.network = &network;
  auto client = std::move(*http::Client::Create(runtime, settings));

  std::mutex mu;
  std::condition_variable done;
  int started = 0, finished = 0;
  std::function<void()> one = [&] {
    client->SendAsync(http::Request::Get("/charges"),
                      [&](Result<http::Response>, std::exception_ptr) {
                        bool again = false, last = false;
                        {
                          std::lock_guard lock(mu);
                          last = ++finished == calls;
                          if (started < calls) {
                            ++started;
                            again = true;
                          }
                        }
                        if (again) one();
                        if (last) done.notify_all();
                      });
  };
  {
    std::lock_guard lock(mu);
    started = std::min(callers, calls);
  }
  for (int i = 0; i < std::min(callers, calls); ++i) one();
  std::unique_lock lock(mu);
  done.wait(lock, [&] { return finished == calls; });
  return static_cast<double>(received.load()) / calls;
}

}  // namespace

int main(int argc, char** argv) {
  int calls = 150, callers = 50;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--calls") calls = std::atoi(argv[i + 1]);
    if (a == "--callers") callers = std::atoi(argv[i + 1]);
  }
  // 1000 tokens, a retry allowed above 500: every attempt takes one, so
  // for calls <= 166 the budget never refuses and each call makes all 3.
  retry::BudgetConfig unlimited{.max_tokens = retry::kTokenLimit, .token_ratio = 1};
  nlohmann::json report = {
      {"calls", calls},
      {"callers", callers},
      {"attempts_per_call_default_budget", AttemptsPerCall(retry::BudgetConfig{}, calls, callers)},
      {"attempts_per_call_unlimited_budget", AttemptsPerCall(unlimited, calls, callers)}};
  std::cout << report.dump() << "\n";
  return 0;
}
