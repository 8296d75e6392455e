// SPDX-License-Identifier: Apache-2.0
// The fixtures of the client's tests: a client on a ManualClock, so every
// wait is free and exact, and a fake `payments` dependency, either over TLS
// with a CA made for the test, reached by name through a NetworkMap
// (ClientTestBase), or with no socket at all (FakeTransportTestBase).
#ifndef OUTBOUND_TESTS_HTTP_CLIENT_TEST_SUPPORT_H_
#define OUTBOUND_TESTS_HTTP_CLIENT_TEST_SUPPORT_H_

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "outbound/http/client.h"
#include "outbound/testing/fake_server.h"
#include "outbound/testing/fake_transport.h"
#include "outbound/testing/fixed_random.h"
#include "outbound/testing/manual_clock.h"
#include "outbound/testing/network_map.h"
#include "outbound/testing/test_ca.h"

namespace outbound::http {

// Jitter that always draws the same number, so waits are exact.
using testing::FixedRandom;

enum class Protocol { kHttp2, kHttp11 };

// A parameterised suite's case name: ".../http2" or ".../http1".
inline std::string ProtocolName(const ::testing::TestParamInfo<Protocol>& param) {
  return param.param == Protocol::kHttp2 ? "http2" : "http1";
}

// A handler that answers 200 with the request's target as the body.
inline testing::Reply Echo(const testing::ServerRequest& r) { return testing::Reply::Ok(r.target); }

// Every circuit::Counts failure opens the breaker: a test sees any failure
// the breaker counted as a transition.
inline Settings TripOnFirstFailure(Settings settings) {
  settings.breaker_policy.trip = [](const circuit::Counts& counts) {
    return counts.consecutive_failures >= 1;
  };
  return settings;
}

// "/<i>", a path per call (FakeServer's Reply::Ok(r.target) echoes it).
// Appended, not `"/" + std::to_string(i)`: GCC 12 at -O3 warns about that
// (a false -Wstringop-overflow), and warnings are errors.
inline std::string NumberedPath(int i) {
  std::string path = "/";
  path += std::to_string(i);
  return path;
}

// What both fixtures share: a client on a ManualClock with randomness
// that always draws one half, and the record of every attempt and breaker
// transition its clients make.
class ClientTestCommon {
 protected:
  std::unique_ptr<Client> MakeClient(Settings settings) {
    auto client = Client::Create(runtime, std::move(settings));
    EXPECT_TRUE(client) << client.error().message();
    return client ? std::move(*client) : nullptr;
  }

  // Blocks until `n` attempts have ended (a safety net of 10 s real time).
  bool WaitForAttempts(std::size_t n) {
    std::unique_lock lock(mu);
    return changed.wait_for(lock, std::chrono::seconds(10), [&] { return attempts.size() >= n; });
  }

  // After attempt `n` ended and the client began its wait (a backoff, a
  // Retry-After: a timer due within `d`), moves the clock by `d`. It waits
  // for that timer, not for a count of timers: another one (a dial's, a
  // connection's) could make up the count, and a wait scheduled after the
  // move would be due in the past and never fire. Not finding it within
  // 10 s of real time fails the test and moves the clock anyway.
  void AdvanceAfterAttempt(std::size_t n, Duration d) {
    ASSERT_TRUE(WaitForAttempts(n));
    EXPECT_TRUE(clock.WaitForTimerBy(clock.Now() + d)) << "no wait due within the step";
    clock.Advance(d);
  }

  // Sends `request` and waits for its result, moving the clock to each
  // backoff as it begins: a timer due within a second (these tests'
  // backoffs are 50 ms to a few hundred; an attempt's timeout, 5 s, and a
  // call's deadline, 10 s, are further off, so they never fire early
  // however slowly the call runs). A call not ended after 10 s of real
  // time (a safety net, not a tolerance) fails the test, and the clock
  // then moves past its deadline so that it ends.
  Result<Response> SendMovingToBackoffs(Client& client, Request request) {
    auto call = client.SendAsync(std::move(request));
    return MoveToBackoffs(call);
  }

  // The same for a call already sent.
  Result<Response> MoveToBackoffs(std::future<Result<Response>>& call) {
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (call.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready) {
      if (std::chrono::steady_clock::now() > give_up) {
        ADD_FAILURE() << "the call did not end";
        clock.Advance(std::chrono::hours(1));
        break;
      }
      std::optional<TimePoint> next = clock.next_timer();
      if (next && *next <= clock.Now() + std::chrono::seconds(1)) clock.AdvanceTo(*next);
    }
    return call.get();
  }

  std::vector<AttemptRecord> Attempts() {
    std::lock_guard lock(mu);
    return attempts;
  }
  std::vector<circuit::Transition> Transitions() {
    std::lock_guard lock(mu);
    return transitions;
  }

  // The defaults for https://payments:8443 with `tls`, recording every
  // attempt and breaker transition.
  Settings PaymentsSettings(TlsSettings tls) {
    Settings s = DefaultSettings();
    s.base_url = "https://payments:8443";
    s.tls = std::move(tls);
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

  testing::ManualClock clock;
  // Jitter of one half: the waits after attempts 1 and 2 are 50ms and 100ms.
  FixedRandom random{0.5};
  // The fixture below adds how the client reaches payments.
  Runtime runtime{.clock = &clock, .random = &random};

  std::mutex mu;
  std::condition_variable changed;
  std::vector<AttemptRecord> attempts;
  std::vector<circuit::Transition> transitions;
};

// A fake `payments` on a socket: a FakeServer over TLS, for what needs bytes
// on a wire (TLS, HTTP/1.1 or HTTP/2 framing, a connection's behaviour).
class ClientTestBase : public ClientTestCommon {
 protected:
  ClientTestBase() { runtime.network = &network; }

  // Serves `handler` as payments:8443, over HTTP/2 or HTTP/1.1 by ALPN,
  // with a certificate for payments unless `options` has TLS of its own.
  void Serve(testing::Handler handler, Protocol protocol = Protocol::kHttp2,
             testing::FakeServer::Options options = {}) {
    if (!options.tls) {
      testing::ServerTls tls(ca.IssueServer({"payments"}));
      if (protocol == Protocol::kHttp11) tls.alpn = {"http/1.1"};
      options.tls = std::move(tls);
    }
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
    return ClientTestCommon::PaymentsSettings(TlsSettings{.root_pem = ca.pem()});
  }

  using ClientTestCommon::MakeClient;
  std::unique_ptr<Client> MakeClient() { return MakeClient(PaymentsSettings()); }

  testing::TestCA ca;
  testing::NetworkMap network;
  std::unique_ptr<testing::FakeServer> server;
};

// A fake `payments` with no socket: a FakeTransport answers each attempt
// on the thread that sends it (or that advances the clock past a delay),
// for a test of the layers above the transport (retries, the breaker,
// redirects, middleware, rate limits, fault injection). The clients keep
// https://payments:8443 as their origin; nothing is dialled or verified.
class FakeTransportTestBase : public ClientTestCommon {
 protected:
  FakeTransportTestBase() { runtime.transport = server.get(); }

  // Answers every attempt from now on with `handler`.
  void Serve(testing::Handler handler) {
    std::lock_guard lock(handler_mu_);
    handler_ = std::move(handler);
  }

  // The defaults for https://payments:8443 (TLS settings, so the origin is
  // https, but no certificate: nothing is verified), recording every
  // attempt and breaker transition.
  Settings PaymentsSettings() { return ClientTestCommon::PaymentsSettings(TlsSettings{}); }

  using ClientTestCommon::MakeClient;
  std::unique_ptr<Client> MakeClient() { return MakeClient(PaymentsSettings()); }

  // What payments was asked (request_count(), requests()), as a
  // FakeServer's `server` answers it. It outlives every client of a test.
  std::unique_ptr<testing::FakeTransport> server = std::make_unique<testing::FakeTransport>(
      clock, [this](const testing::ServerRequest& request) { return Answer(request); });

 private:
  testing::Reply Answer(const testing::ServerRequest& request) {
    testing::Handler handler;
    {
      std::lock_guard lock(handler_mu_);
      handler = handler_;
    }
    if (!handler) {
      ADD_FAILURE() << "an attempt reached payments before the test called Serve";
      return testing::Reply::Status(500);
    }
    return handler(request);
  }

  std::mutex handler_mu_;
  testing::Handler handler_;  // guarded by handler_mu_
};

}  // namespace outbound::http

#endif  // OUTBOUND_TESTS_HTTP_CLIENT_TEST_SUPPORT_H_
