// SPDX-License-Identifier: Apache-2.0
// Adaptive concurrency against a dependency nobody here wrote: Node 20's
// own http2 server whose answers take longer the more requests it holds
// (tests/peers/loaded_h2_server.js: 8 workers at 50 ms; past 8 in flight a
// request waits its turn). Callers that always want more than it can take
// must find its knee on their own: the limit stays below 16 in flight, the
// point past which its answers take more than twice its unloaded latency,
// while it is kept busy. Real time: the peer's timers are Node's.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <vector>

#include "outbound/testing/telemetry.h"
#include "peer_test_support.h"

namespace outbound::peers {
namespace {

using http::Request;
using std::chrono::milliseconds;
using RealClock = std::chrono::steady_clock;

constexpr int kWorkers = 8;
constexpr int kBaseMs = 50;

// `callers` callers, each wanting one call in flight at all times: an
// answered caller calls again at once; a rejected one waits for the next
// answer (so a rejection costs no spinning), then calls again.
class Callers {
 public:
  Callers(http::Client& client, int callers) : client_(client), callers_(callers) {}

  void Start() {
    for (int i = 0; i < callers_; ++i) Send();
  }

  // Waits until `answers` answers have come in all (a bound of `limit`).
  bool WaitForAnswers(std::size_t answers, std::chrono::seconds limit) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, limit, [&] { return latencies_.size() >= answers; });
  }

  // No new calls; waits for those in flight to end.
  bool Stop() {
    std::unique_lock lock(mu_);
    stopped_ = true;
    return changed_.wait_for(lock, std::chrono::seconds(30), [&] { return active_ == 0; });
  }

  // The latencies of the answers after the first `skip`.
  std::vector<Duration> LatenciesAfter(std::size_t skip) {
    std::lock_guard lock(mu_);
    return {latencies_.begin() + static_cast<std::ptrdiff_t>(std::min(skip, latencies_.size())),
            latencies_.end()};
  }
  int rejected() {
    std::lock_guard lock(mu_);
    return rejected_;
  }

 private:
  void Send() {
    {
      std::lock_guard lock(mu_);
      if (stopped_) return;
      ++active_;
    }
    Launch();
  }

  // One call, counted in active_ already: Stop waits for it, so `this`
  // outlives its callback.
  void Launch() {
    RealClock::time_point start = RealClock::now();
    client_.SendAsync(Request::Get("/"),
                      [this, start](Result<http::Response> result, std::exception_ptr) {
                        bool rejected = !result && result.error().kind() == ErrorKind::kRejected;
                        int resend = 0;
                        {
                          std::lock_guard lock(mu_);
                          --active_;
                          if (rejected) {
                            ++rejected_;
                            ++parked_;
                          } else {
                            if (result) latencies_.push_back(RealClock::now() - start);
                            resend = 1;  // itself, and one caller that waited for this answer
                            if (parked_ > 0) {
                              --parked_;
                              ++resend;
                            }
                          }
                          // Counted before the lock goes, so Stop never sees
                          // 0 while a call is about to start; notified under
                          // it, so a Stop that returns finds nothing touching
                          // this object.
                          if (stopped_) resend = 0;
                          active_ += resend;
                          changed_.notify_all();
                        }
                        for (int i = 0; i < resend; ++i) Launch();
                      });
  }

  http::Client& client_;
  const int callers_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<Duration> latencies_;
  int active_ = 0;
  int parked_ = 0;
  int rejected_ = 0;
  bool stopped_ = false;
};

Duration Quantile(std::vector<Duration> values, double p) {
  std::sort(values.begin(), values.end());
  return values.at(static_cast<std::size_t>(p * static_cast<double>(values.size() - 1)));
}

class NodeAdaptiveTest : public PeerTestBase, public ::testing::Test {
 protected:
  NodeAdaptiveTest() { runtime.telemetry = recorded.telemetry(); }
  testing::InMemoryTelemetry recorded{DefaultRandom()};
};

TEST_F(NodeAdaptiveTest, TheLimitStaysBelowWhereItsAnswersTakeTwiceTheUnloadedLatency) {
  StartPeer("loaded_h2_server.js",
            {"--base-ms=" + std::to_string(kBaseMs), "--workers=" + std::to_string(kWorkers)});
  http::Settings settings = PaymentsSettings();
  settings.observers.clear();
  settings.adaptive_concurrency = http::AdaptiveConcurrency{.initial_limit = 4};
  auto client = MakeClient(std::move(settings));
  ASSERT_TRUE(client);

  // Its unloaded latency, as this client sees it: one call at a time.
  std::vector<Duration> alone;
  for (int i = 0; i < 5; ++i) {
    RealClock::time_point start = RealClock::now();
    ASSERT_TRUE(client->Send(Request::Get("/")));
    alone.push_back(RealClock::now() - start);
  }
  Duration unloaded = Quantile(alone, 0.5);

  // Six times its knee of callers: 300 answers to settle (about 2 s at its
  // capacity, 160 a second), then 600 measured.
  Callers callers(*client, 6 * kWorkers);
  callers.Start();
  ASSERT_TRUE(callers.WaitForAnswers(300, std::chrono::seconds(60)));
  peer->Command("reset");
  ASSERT_TRUE(callers.WaitForAnswers(900, std::chrono::seconds(60)));
  nlohmann::json stats = peer->Stats();
  double limit = recorded.Value("outbound.concurrency.limit");
  std::vector<Duration> measured = callers.LatenciesAfter(300);
  ASSERT_TRUE(callers.Stop());

  auto ms = [](Duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  std::string figures = "unloaded " + std::to_string(ms(unloaded)) + " ms; loaded p50 " +
                        std::to_string(ms(Quantile(measured, 0.5))) + " ms, p90 " +
                        std::to_string(ms(Quantile(measured, 0.9))) + " ms, p99 " +
                        std::to_string(ms(Quantile(measured, 0.99))) + " ms; limit " +
                        std::to_string(limit) + "; rejected " + std::to_string(callers.rejected()) +
                        "; server " + stats.dump();
  std::printf("%s\n", figures.c_str());
  SCOPED_TRACE(figures);
  // Below the point of twice the unloaded latency (2 * workers in
  // flight), and at or above the knee less the headroom's noise: busy.
  // The server's own count bounds its latency exactly; the client's p90
  // says the same as this client sees it. Its p99 is not asserted: the
  // slowest 1% carries the host's scheduling (two cores shared with Node,
  // a sanitizer build), not the limit (once 128 ms with 12 in flight).
  EXPECT_LT(stats["max_in_flight"].get<int>(), 2 * kWorkers);
  EXPECT_LT(limit, 2 * kWorkers);
  EXPECT_GE(limit, kWorkers / 2);
  EXPECT_LE(Quantile(measured, 0.9), 2 * unloaded);
  EXPECT_GT(callers.rejected(), 0);
}

}  // namespace
}  // namespace outbound::peers
