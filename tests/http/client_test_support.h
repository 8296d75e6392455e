// SPDX-License-Identifier: Apache-2.0
// The fixture of the client's tests: a fake `payments` dependency over TLS
// with a CA made for the test, reached by name through a NetworkMap, and a
// client on a ManualClock, so every wait is free and exact.
#ifndef OUTBOUND_TESTS_HTTP_CLIENT_TEST_SUPPORT_H_
#define OUTBOUND_TESTS_HTTP_CLIENT_TEST_SUPPORT_H_

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "outbound/http/client.h"
#include "outbound/testing/fake_server.h"
#include "outbound/testing/fixed_random.h"
#include "outbound/testing/manual_clock.h"
#include "outbound/testing/network_map.h"
#include "outbound/testing/test_ca.h"

namespace outbound::http {

// Jitter that always draws the same number, so waits are exact.
using testing::FixedRandom;

enum class Protocol { kHttp2, kHttp11 };

// "/<i>", a path per call (FakeServer's Reply::Ok(r.target) echoes it).
// Appended, not `"/" + std::to_string(i)`: GCC 12 at -O3 warns about that
// (a false -Wstringop-overflow), and warnings are errors.
inline std::string NumberedPath(int i) {
  std::string path = "/";
  path += std::to_string(i);
  return path;
}

class ClientTestBase {
 protected:
  // Serves `handler` as payments:8443, over HTTP/2 or HTTP/1.1 by ALPN.
  void Serve(testing::Handler handler, Protocol protocol = Protocol::kHttp2,
             testing::FakeServer::Options options = {}) {
    testing::ServerTls tls(ca.IssueServer({"payments"}));
    if (protocol == Protocol::kHttp11) tls.alpn = {"http/1.1"};
    options.tls = std::move(tls);
    options.handler = std::move(handler);
    options.clock = &clock;
    auto started = testing::FakeServer::Start(std::move(options));
    ASSERT_TRUE(started) << started.error().message();
    server = std::move(*started);
    network.Add("payments", 8443, "127.0.0.1", server->port());
  }

  // The defaults for https://payments:8443, trusting only the test's CA,
  // recording every attempt and breaker transition.
  Settings PaymentsSettings() {
    Settings s = DefaultSettings();
    s.base_url = "https://payments:8443";
    s.tls = TlsSettings{.root_pem = ca.pem()};
    s.observers.push_back(ObserveAttempts([this](const AttemptRecord& record) {
      {
        std::lock_guard lock(mu);
        attempts.push_back(record);
        // Views into the request, valid only during this call: not kept.
        attempts.back().method = attempts.back().url = {};
      }
      changed.notify_all();
    }));
    s.observers.push_back(ObserveTransitions([this](const circuit::Transition& t) {
      std::lock_guard lock(mu);
      transitions.push_back(t);
    }));
    return s;
  }

  std::unique_ptr<Client> MakeClient(Settings settings) {
    auto client = Client::Create(runtime, std::move(settings));
    EXPECT_TRUE(client) << client.error().message();
    return client ? std::move(*client) : nullptr;
  }
  std::unique_ptr<Client> MakeClient() { return MakeClient(PaymentsSettings()); }

  // Blocks until `n` attempts have ended (a safety net of 10 s real time).
  bool WaitForAttempts(std::size_t n) {
    std::unique_lock lock(mu);
    return changed.wait_for(lock, std::chrono::seconds(10), [&] { return attempts.size() >= n; });
  }

  // After attempt `n` ended and the client began waiting on the clock (the
  // call's deadline and the wait: two timers), moves the clock by `d`.
  void AdvanceAfterAttempt(std::size_t n, Duration d) {
    ASSERT_TRUE(WaitForAttempts(n));
    ASSERT_TRUE(clock.WaitForTimers(2));
    clock.Advance(d);
  }

  std::vector<AttemptRecord> Attempts() {
    std::lock_guard lock(mu);
    return attempts;
  }
  std::vector<circuit::Transition> Transitions() {
    std::lock_guard lock(mu);
    return transitions;
  }

  testing::TestCA ca;
  testing::ManualClock clock;
  testing::NetworkMap network;
  // Jitter of one half: the waits after attempts 1 and 2 are 50ms and 100ms.
  FixedRandom random{0.5};
  Runtime runtime{.clock = &clock, .network = &network, .random = &random};
  std::unique_ptr<testing::FakeServer> server;

  std::mutex mu;
  std::condition_variable changed;
  std::vector<AttemptRecord> attempts;
  std::vector<circuit::Transition> transitions;
};

}  // namespace outbound::http

#endif  // OUTBOUND_TESTS_HTTP_CLIENT_TEST_SUPPORT_H_
