// SPDX-License-Identifier: Apache-2.0
// The fixture of the balancing tests (balancing_test.cc,
// balancing_faults_test.cc): replicas of payments as the kit's FakeServers
// on loopback, behind one name on the kit's network, a client with
// Settings::balancing on a ManualClock, and calls driven in fake time.
#ifndef OUTBOUND_TESTS_HTTP_BALANCING_TEST_SUPPORT_H_
#define OUTBOUND_TESTS_HTTP_BALANCING_TEST_SUPPORT_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <memory>
#include <vector>

#include "client_test_support.h"

namespace outbound::http {

class BalancingTestBase : public ::testing::Test, public ClientTestBase {
 protected:
  BalancingTestBase() { runtime.random = &seeded; }

  // Starts a replica of payments answering with `handler`, offering the
  // `alpn` protocols (HTTP/2 first, by default).
  testing::FakeServer& StartReplica(testing::Handler handler,
                                    std::vector<std::string> alpn = {"h2", "http/1.1"}) {
    testing::ServerTls tls(ca.IssueServer({"payments"}));
    tls.alpn = std::move(alpn);
    auto started = testing::FakeServer::Start(
        {.tls = std::move(tls), .handler = std::move(handler), .clock = &clock});
    EXPECT_TRUE(started) << started.error().message();
    replicas.push_back(std::move(*started));
    return *replicas.back();
  }

  // payments:8443 leads to every one of `ports` on 127.0.0.1.
  void Name(const std::vector<std::uint16_t>& ports) {
    std::vector<Endpoint> endpoints;
    for (std::uint16_t port : ports) endpoints.push_back({"127.0.0.1", port});
    network.Set("payments", 8443, std::move(endpoints));
  }

  // Balanced, with backoffs short enough for Call to move the clock to
  // them and nothing else.
  Settings BalancedSettings() {
    Settings s = PaymentsSettings();
    s.balancing = Balancing{};
    s.backoff_base = std::chrono::milliseconds(10);
    s.backoff_max = std::chrono::milliseconds(20);
    s.timeout = std::chrono::hours(2);
    s.attempt_timeout = std::chrono::hours(1);
    return s;
  }

  // Makes `calls` GET calls, `in_flight` at a time, moving the clock to
  // each backoff a call waits on; the answers' statuses (0 for an error).
  std::vector<int> Call(Client& client, int calls, int in_flight = 8) {
    using std::chrono::milliseconds;
    std::vector<int> statuses;
    for (int next = 0; next < calls;) {
      std::vector<std::future<Result<Response>>> batch;
      for (int i = 0; i < in_flight && next < calls; ++i, ++next) {
        batch.push_back(client.SendAsync(Request::Get(NumberedPath(next))));
      }
      for (auto& f : batch) {
        while (f.wait_for(milliseconds(1)) != std::future_status::ready) {
          if (clock.WaitForTimerBy(clock.Now() + milliseconds(20), milliseconds(1))) {
            clock.AdvanceTo(*clock.next_timer());
          }
        }
        Result<Response> r = f.get();
        statuses.push_back(r ? r->status : 0);
      }
    }
    return statuses;
  }

  static int Count(const std::vector<int>& statuses, int status) {
    return static_cast<int>(std::count(statuses.begin(), statuses.end(), status));
  }

  int FailedAttempts() {
    int failed = 0;
    for (const AttemptRecord& a : Attempts()) failed += a.status == 200 ? 0 : 1;
    return failed;
  }

  testing::SeededRandom seeded{20261203};
  std::vector<std::unique_ptr<testing::FakeServer>> replicas;
};

}  // namespace outbound::http

#endif  // OUTBOUND_TESTS_HTTP_BALANCING_TEST_SUPPORT_H_
