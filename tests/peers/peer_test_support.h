// SPDX-License-Identifier: Apache-2.0
// What the peer, isolation and soak tests share: a client of `payments:8443`
// on the real clock, reaching a Node peer (or the kit's FakeServer) through a
// NetworkMap; a record of every attempt; and a load driver that keeps a
// number of calls in flight and tallies how each ended.
//
// These tests run on SystemClock: the peers are real processes with real
// timers. Only the isolation test measures time; the others count.
#ifndef OUTBOUND_TESTS_PEERS_PEER_TEST_SUPPORT_H_
#define OUTBOUND_TESTS_PEERS_PEER_TEST_SUPPORT_H_

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "node_peer.h"
#include "outbound/http/client.h"
#include "outbound/testing/network_map.h"
#include "outbound/testing/test_ca.h"

namespace outbound::peers {

// Waits until `done` holds or `limit` of real time has passed: a safety
// net for a peer that misbehaves, not a tolerance. False if it ran out.
template <typename Done>
bool WaitUntil(Done done, std::chrono::seconds limit = std::chrono::seconds(10)) {
  auto give_up = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// This process's peak resident set so far, in KiB.
inline long PeakResidentKib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// How a set of calls ended.
struct LoadReport {
  int calls = 0;                // ended
  int ok = 0;                   // ended with 200
  std::map<int, int> statuses;  // the other statuses
  std::map<ErrorKind, int> errors;
  std::map<ErrorKind, std::string> first_message;

  int failed() const { return calls - ok; }

  void Add(const Result<http::Response>& result) {
    ++calls;
    if (result && result->status == 200) {
      ++ok;
    } else if (result) {
      ++statuses[result->status];
    } else {
      if (errors[result.error().kind()]++ == 0) {
        first_message[result.error().kind()] = result.error().message();
      }
    }
  }

  // "3000 calls, 2990 ok; kRejected x10 (the circuit breaker is open...)".
  std::string Summary() const {
    std::ostringstream out;
    out << calls << " calls, " << ok << " ok";
    for (const auto& [status, n] : statuses) out << "; status " << status << " x" << n;
    for (const auto& [kind, n] : errors) {
      out << "; " << ToString(kind) << " x" << n << " (first: " << first_message.at(kind) << ")";
    }
    return out.str();
  }
};

// Runs `calls` calls made by `make(i)`, keeping `in_flight` of them in
// flight with the callback form of SendAsync, and waits for them all (at
// most `limit` of real time; the report then counts fewer calls). The
// callbacks only count, and a new call is started from this thread, never
// from a callback, so a callback run inside SendAsync cannot recurse.
inline LoadReport RunInFlight(http::Client& client, int calls, int in_flight,
                              const std::function<http::Request(int)>& make,
                              std::chrono::seconds limit = std::chrono::seconds(60)) {
  struct State {
    std::mutex mu;
    std::condition_variable changed;
    int running = 0;
    LoadReport report;
  };
  auto state = std::make_shared<State>();
  TimePoint give_up = SystemClock().Now() + limit;
  std::unique_lock lock(state->mu);
  for (int started = 0; started < calls;) {
    if (!state->changed.wait_for(lock, give_up - SystemClock().Now(),
                                 [&] { return state->running < in_flight; })) {
      break;
    }
    ++state->running;
    ++started;
    lock.unlock();
    client.SendAsync(make(started - 1), [state](Result<http::Response> result, std::exception_ptr) {
      std::lock_guard done(state->mu);
      state->report.Add(result);
      --state->running;
      state->changed.notify_all();
    });
    lock.lock();
  }
  state->changed.wait_for(lock, give_up - SystemClock().Now(), [&] { return state->running == 0; });
  return state->report;
}

// Every attempt as the client's on_attempt saw it.
class AttemptLog {
 public:
  void Add(const http::AttemptRecord& record) {
    std::lock_guard lock(mu_);
    ++attempts_;
    if (record.error) ++errors_[*record.error];
  }
  int attempts() const {
    std::lock_guard lock(mu_);
    return attempts_;
  }
  std::string Summary() const {
    std::lock_guard lock(mu_);
    std::ostringstream out;
    out << attempts_ << " attempts";
    for (const auto& [kind, n] : errors_) out << "; " << ToString(kind) << " x" << n;
    return out.str();
  }

 private:
  mutable std::mutex mu_;
  int attempts_ = 0;
  std::map<ErrorKind, int> errors_;
};

// A test's name for its parameter, a peer's option value ("window-update"
// becomes "window_update": gtest names take no dashes).
inline std::string PeerParamName(const ::testing::TestParamInfo<const char*>& param) {
  std::string name = param.param;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

// A breaker that never opens: to count what the transport and the retry
// layer alone send.
inline circuit::Policy NeverTrips() {
  return circuit::Policy{
      .trip = [](const circuit::Counts&) { return false; },
      .probe = [](const circuit::Counts&) { return circuit::ProbeVerdict::kClose; }};
}

// Opens on the second failure in the window: one lost connection must cost
// at most one.
inline circuit::Policy TripsOnTwoFailures() {
  return circuit::Policy{
      .trip = [](const circuit::Counts& counts) { return counts.failures >= 2; },
      .probe = [](const circuit::Counts&) { return circuit::ProbeVerdict::kClose; }};
}

// A client of https://payments:8443 and the Node peer behind that name.
class PeerTestBase {
 protected:
  // Starts `script` with the certificate for `payments` and `args`, and
  // routes payments:8443 to it.
  NodePeer& StartPeer(const std::string& script, std::vector<std::string> args = {}) {
    peer = std::make_unique<NodePeer>(script, files.Args(std::move(args)));
    network.Add("payments", 8443, "127.0.0.1", peer->port());
    return *peer;
  }

  // The defaults for https://payments:8443 trusting only the test's CA,
  // every attempt logged and every breaker transition kept.
  http::Settings PaymentsSettings() {
    http::Settings s = http::DefaultSettings();
    s.base_url = "https://payments:8443";
    s.tls = http::TlsSettings{.root_pem = ca.pem()};
    s.observers.push_back(http::ObserveAttempts(
        [log = log](const http::AttemptRecord& record) { log->Add(record); }));
    s.observers.push_back(http::ObserveTransitions([this](const circuit::Transition& t) {
      std::lock_guard lock(mu);
      transitions.push_back(t);
    }));
    return s;
  }

  std::unique_ptr<http::Client> MakeClient(http::Settings settings) {
    auto client = http::Client::Create(runtime, std::move(settings));
    EXPECT_TRUE(client) << client.error().message();
    return client ? std::move(*client) : nullptr;
  }

  std::vector<circuit::Transition> Transitions() {
    std::lock_guard lock(mu);
    return transitions;
  }

  testing::TestCA ca;
  PeerFiles files{ca.IssueServer({"payments"})};
  testing::NetworkMap network;
  Runtime runtime{.network = &network};  // the system clock
  std::unique_ptr<NodePeer> peer;
  std::shared_ptr<AttemptLog> log = std::make_shared<AttemptLog>();

  std::mutex mu;
  std::vector<circuit::Transition> transitions;
};

}  // namespace outbound::peers

#endif  // OUTBOUND_TESTS_PEERS_PEER_TEST_SUPPORT_H_
