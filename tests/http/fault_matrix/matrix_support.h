// SPDX-License-Identifier: Apache-2.0
// The fault matrix's fixture: a fake `payments:8443` over real TLS (h2 or
// HTTP/1.1 by ALPN) with a CA made for the test, a client of it on a
// ManualClock with jitter fixed at one half (so the waits after attempts 1
// and 2 are exactly 50 ms and 100 ms), and the checks every row makes:
//
//   - how the call ended: the error's kind, or the answer's status;
//   - the attempts the client made (on_attempt records) and the requests the
//     server received;
//   - the results the breaker counted as failures, and its state after;
//   - when the call ended on the client's clock, exactly; and, for a call
//     ended by its deadline, that the caller was answered within 50 ms of
//     real time of the clock reaching it (issue 10: "a call ends by its
//     deadline + 50 ms whatever its transport is doing");
//   - open descriptors and threads the same once the client and servers are
//     gone as before the row began.
//
// The matrix drives only http::Client and the test kit, never the transport
// underneath, so it judges any transport the same way.
#ifndef OUTBOUND_TESTS_HTTP_FAULT_MATRIX_MATRIX_SUPPORT_H_
#define OUTBOUND_TESTS_HTTP_FAULT_MATRIX_MATRIX_SUPPORT_H_

#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdlib>
#include <future>
#include <iterator>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "outbound/http/client.h"
#include "outbound/testing/fake_server.h"
#include "outbound/testing/fixed_random.h"
#include "outbound/testing/manual_clock.h"
#include "outbound/testing/network_map.h"
#include "outbound/testing/test_ca.h"

namespace outbound::http::matrix {

using namespace std::chrono_literals;
using testing::FakeServer;
using testing::Reply;
using testing::ServerRequest;

// Whether the build runs at speed. Under a sanitizer a flooded connection's
// frames are read tenfold slower, so the bound below says nothing there;
// a flood row still asserts everything else about its answer.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAtSpeed = false;
#else
inline constexpr bool kAtSpeed = true;
#endif
// How long a caller may wait, in real time, for a call whose deadline the
// clock has reached. Under a sanitizer, with another test on the other
// core, the loop thread can be that late on its own: 1 s there, still far
// below what a client that ignores its deadline would take (the row's
// server waits on the manual clock, so such a client hangs to the net).
inline constexpr std::chrono::milliseconds kAnswerBound{kAtSpeed ? 50 : 1000};
// Safety nets for a broken row, never tolerances: a row that passes waits
// for events, not for these. Generous: under TSan the kit's server takes
// seconds to write a header bomb.
inline constexpr std::chrono::seconds kSafetyNet{20};

// Frames a flooding server has written before a test moves the clock:
// thousands, so the client is well inside the flood.
inline constexpr std::size_t kFloodUnderWay = 20000;

enum class Protocol { kHttp2, kHttp11 };

inline std::string ProtocolName(const ::testing::TestParamInfo<Protocol>& info) {
  return info.param == Protocol::kHttp2 ? "http2" : "http1";
}

// Jitter that always draws the same number, so waits are exact.
using testing::FixedRandom;

// This process's open descriptors and threads, by number and id.
struct Resources {
  std::set<int> fds;
  std::set<int> threads;
};

inline std::set<int> ListEntries(const char* dir) {
  std::set<int> ids;
  if (DIR* d = opendir(dir)) {
    while (const dirent* entry = readdir(d)) {
      if (entry->d_name[0] != '.') ids.insert(std::atoi(entry->d_name));
    }
    closedir(d);
  }
  return ids;
}

inline Resources CountResources() {
  return {ListEntries("/proc/self/fd"), ListEntries("/proc/self/task")};
}

// What `now` holds that `before` did not.
inline std::set<int> Added(const std::set<int>& now, const std::set<int>& before) {
  std::set<int> added;
  std::set_difference(now.begin(), now.end(), before.begin(), before.end(),
                      std::inserter(added, added.end()));
  return added;
}

inline std::string Describe(const std::set<int>& ids) {
  std::string out;
  for (int id : ids) {
    if (!out.empty()) out += ' ';
    out += std::to_string(id);
  }
  return out;
}

// Waits until nothing the row opened (a descriptor or a thread not there
// before it) is left: a joined thread leaves /proc/self/task a moment after
// the join returns. Fails the row if something is still there at the safety
// net. What was there before and has gone since (a thread an earlier client
// joined just before the row began) is not the row's doing.
inline void ExpectNothingLeaked(const Resources& before) {
  auto give_up = std::chrono::steady_clock::now() + kSafetyNet;
  Resources now = CountResources();
  auto leftovers = [&] {
    return !Added(now.fds, before.fds).empty() || !Added(now.threads, before.threads).empty();
  };
  while (leftovers() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::yield();
    now = CountResources();
  }
  EXPECT_EQ(Describe(Added(now.fds, before.fds)), "") << "file descriptors the row left open";
  EXPECT_EQ(Describe(Added(now.threads, before.threads)), "") << "threads the row left running";
}

// How a row's call must end.
struct Want {
  // The call fails with this kind...
  std::optional<ErrorKind> error;
  // ...or is answered with this status.
  int status = 0;
  // Attempts the client made (on_attempt records; for an error, also
  // Error::attempts()).
  int attempts = 1;
  // Requests the server received (the `payments` server; -1: none runs).
  int server_saw = 1;
  // Results the breaker counted as failures.
  int breaker_failures = 0;
  circuit::State breaker = circuit::State::kClosed;
  // When the call ended, on the client's clock, from its start.
  Duration took{0};
};

class MatrixTest : public ::testing::Test {
 protected:
  void SetUp() override { before_ = CountResources(); }

  void TearDown() override {
    client.reset();
    server.reset();
    other.reset();
    ExpectNothingLeaked(before_);
  }

  // The protocol payments speaks; rows parameterised on it set it.
  Protocol protocol = Protocol::kHttp2;
  bool h2() const { return protocol == Protocol::kHttp2; }

  // TLS for payments (or `certificate`), offering only this row's protocol.
  testing::ServerTls Tls(std::optional<testing::Certificate> certificate = std::nullopt) {
    testing::ServerTls tls(certificate ? *certificate : ca.IssueServer({"payments"}));
    tls.alpn = {h2() ? "h2" : "http/1.1"};
    return tls;
  }

  // Serves `handler` as payments:8443.
  void Serve(testing::Handler handler, FakeServer::Options options = {}) {
    if (!options.tls) options.tls = Tls();
    options.handler = std::move(handler);
    options.clock = &clock;
    auto started = FakeServer::Start(std::move(options));
    ASSERT_TRUE(started) << started.error().message();
    server = std::move(*started);
    network.Add("payments", 8443, "127.0.0.1", server->port());
  }

  // The defaults for https://payments:8443, trusting only the test's CA,
  // recording every attempt and what the breaker counted. The breaker opens
  // as by default, and stays open for an hour of the clock, so a row that
  // opens it reads kOpen after its waits.
  Settings PaymentsSettings() {
    Settings s = DefaultSettings();
    s.base_url = "https://payments:8443";
    s.tls = TlsSettings{.root_pem = ca.pem()};
    s.observers.push_back(ObserveAttempts([this](const AttemptRecord& record) {
      {
        std::lock_guard lock(mu_);
        attempts_.push_back(record);
        attempts_.back().method = attempts_.back().url = {};  // views: not kept
      }
      changed_.notify_all();
    }));
    s.breaker.open_for = std::chrono::hours(1);
    auto trip = s.breaker_policy.trip;
    s.breaker_policy.trip = [this, trip](const circuit::Counts& counts) {
      breaker_failures_ = counts.failures;  // the closed state's count, window of 20
      return trip(counts);
    };
    return s;
  }

  void StartClient(Settings settings) {
    auto made = Client::Create(runtime, std::move(settings));
    ASSERT_TRUE(made) << made.error().message();
    client = std::move(*made);
  }
  void StartClient() { StartClient(PaymentsSettings()); }

  // Starts the row's call; its clock time is the row's zero.
  void Begin(Request request) {
    start_ = clock.Now();
    settled_ = std::chrono::steady_clock::now();
    attempts_before_ = AttemptCount();
    call_ = client->SendAsync(std::move(request));
  }

  bool CallDone() { return call_.wait_for(0s) == std::future_status::ready; }

  // Waits (kSafetyNet of real time at most) for a timer due `after` the
  // call began, exactly: for one wait when others, nearer, stand beside it.
  bool WaitForTimerAt(Duration after) {
    auto give_up = std::chrono::steady_clock::now() + kSafetyNet;
    while (std::chrono::steady_clock::now() < give_up) {
      std::vector<TimePoint> pending = clock.timers();
      if (std::find(pending.begin(), pending.end(), start_ + after) != pending.end()) return true;
      std::this_thread::sleep_for(1ms);
    }
    return false;
  }

  // Waits for the client to begin a wait of `d` (a timer due by Now() + d),
  // then moves the clock by `d`. Returns early if the call has ended
  // instead: the row's expectations then say what went wrong.
  void WaitThenAdvance(Duration d) {
    TimePoint by = clock.Now() + d;
    auto give_up = std::chrono::steady_clock::now() + kSafetyNet;
    while (!clock.WaitForTimerBy(by, 2ms)) {
      if (CallDone()) return;
      if (std::chrono::steady_clock::now() > give_up) {
        ADD_FAILURE() << "the client never began a wait of " << ToMs(d) << " ms";
        return;
      }
    }
    clock.Advance(d);
    settled_ = std::chrono::steady_clock::now();
  }

  // Waits until the server has received `n` requests in all: a hung
  // attempt's timeout must not be reached before its request is on the wire.
  void WaitForRequests(std::size_t n) {
    ASSERT_TRUE(
        server->WaitFor([n](const FakeServer& s) { return s.request_count() >= n; }, kSafetyNet))
        << "the server never received request " << n;
  }

  // Moves the clock to the call's deadline (`timeout` from its start).
  void AdvanceToDeadline(Duration timeout = std::chrono::seconds(10)) {
    clock.AdvanceTo(start_ + timeout);
    settled_ = std::chrono::steady_clock::now();
  }

  // Waits for the call to end. If it has not within the safety net, the row
  // has failed; the clock is then pushed past any deadline so the client can
  // be torn down.
  Result<Response> End() {
    if (call_.wait_for(kSafetyNet) != std::future_status::ready) {
      ADD_FAILURE() << "the call did not end; moving the clock on by an hour to end it";
      clock.Advance(std::chrono::hours(1));
      if (call_.wait_for(kSafetyNet * 6) != std::future_status::ready) {
        ADD_FAILURE() << "the call did not end even then";
        std::abort();  // a hung client cannot be torn down
      }
    }
    answered_after_ = std::chrono::steady_clock::now() - settled_;
    took_ = clock.Now() - start_;
    return call_.get();
  }

  // Ends the call and checks it against `want`.
  Result<Response> ExpectEnds(const Want& want) {
    Result<Response> result = End();
    Expect(result, want);
    return result;
  }

  void Expect(const Result<Response>& result, const Want& want) {
    if (want.error) {
      EXPECT_FALSE(result) << "answered " << result->status << " with a body of "
                           << result->body.size() << " bytes";
      if (!result) {
        EXPECT_EQ(ToString(result.error().kind()), ToString(*want.error))
            << result.error().message();
        if (want.error != ErrorKind::kTooManyRedirects) {
          EXPECT_EQ(result.error().attempts(), want.attempts) << "Error::attempts()";
        }
      }
    } else {
      EXPECT_TRUE(result) << ToString(result.error().kind()) << ": " << result.error().message();
      if (result) {
        EXPECT_EQ(result->status, want.status);
      }
    }
    EXPECT_EQ(AttemptCount() - attempts_before_, want.attempts)
        << "attempts seen by the observer: " << DescribeAttempts();
    if (want.server_saw >= 0) {
      EXPECT_EQ(server ? static_cast<int>(server->request_count()) : 0, want.server_saw)
          << "requests the server received";
    }
    EXPECT_EQ(breaker_failures_.load(), want.breaker_failures) << "failures the breaker counted";
    EXPECT_EQ(client->breaker_state(), want.breaker) << "the breaker's state after";
    EXPECT_EQ(ToMs(took_), ToMs(want.took)) << "ms on the client's clock from start to end";
    if (want.error == ErrorKind::kDeadline) {
      EXPECT_LE(answered_after_, kAnswerBound) << "real time from the deadline to the answer";
    }
  }

  // Attempt records so far.
  // "503; transport: <message>; ..." for a failure message.
  std::string DescribeAttempts() {
    std::string text;
    for (const AttemptRecord& record : Attempts()) {
      if (!text.empty()) text += "; ";
      text += record.error ? std::string(ToString(*record.error)) + ": " + record.error_message
                           : std::to_string(record.status);
    }
    return text;
  }

  std::vector<AttemptRecord> Attempts() {
    std::lock_guard lock(mu_);
    return attempts_;
  }
  int AttemptCount() {
    std::lock_guard lock(mu_);
    return static_cast<int>(attempts_.size());
  }
  int BreakerFailures() const { return breaker_failures_.load(); }
  // Real time from the row's last move of the clock (or its start) to the
  // answer, once End() has returned.
  std::chrono::steady_clock::duration answered_after() const { return answered_after_; }

  // Drives calls whose waits are backoffs (at most 100 ms with this jitter):
  // whenever the client waits on such a timer, the clock moves to it. Ends
  // when `done()` holds.
  template <typename Done>
  bool DriveBackoffs(Done done) {
    auto give_up = std::chrono::steady_clock::now() + kSafetyNet * 6;
    while (!done()) {
      if (clock.WaitForTimerBy(clock.Now() + 100ms, 1ms)) {
        clock.AdvanceTo(*clock.next_timer());
      }
      if (std::chrono::steady_clock::now() > give_up) return false;
    }
    return true;
  }

  static long long ToMs(Duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  }

  testing::TestCA ca;
  testing::ManualClock clock;
  testing::NetworkMap network;
  FixedRandom random{0.5};
  Runtime runtime{.clock = &clock, .network = &network, .random = &random};
  std::unique_ptr<FakeServer> server;  // payments:8443
  std::unique_ptr<FakeServer> other;   // another origin, for redirects
  std::unique_ptr<Client> client;

 private:
  Resources before_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<AttemptRecord> attempts_;
  std::atomic<int> breaker_failures_{0};
  int attempts_before_ = 0;
  TimePoint start_;
  std::future<Result<Response>> call_;
  std::chrono::steady_clock::time_point settled_;
  std::chrono::steady_clock::duration answered_after_{};
  Duration took_{0};
};

// A row run over HTTP/2 and HTTP/1.1 alike.
class BothProtocols : public MatrixTest, public ::testing::WithParamInterface<Protocol> {
 protected:
  void SetUp() override {
    protocol = GetParam();
    MatrixTest::SetUp();
  }
};

#define OUTBOUND_MATRIX_BOTH_PROTOCOLS(Fixture) \
  INSTANTIATE_TEST_SUITE_P(Protocols, Fixture,  \
                           ::testing::Values(Protocol::kHttp2, Protocol::kHttp11), ProtocolName)

}  // namespace outbound::http::matrix

#endif  // OUTBOUND_TESTS_HTTP_FAULT_MATRIX_MATRIX_SUPPORT_H_
