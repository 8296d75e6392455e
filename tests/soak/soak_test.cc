// SPDX-License-Identifier: Apache-2.0
// The soak (issue 10): calls from 8 threads through one client against a
// Node http2 server (tests/peers/h2_server.js) that resets 10 % of its
// connections with streams open (the others end gracefully with GOAWAY after
// 50-150 streams), refuses 5 % of streams and answers 5 % 20 ms late. At
// the end: nothing crashed, no descriptor or thread was gained since the
// warm-up, the breaker is closed, the server saw at most 1.2 streams per
// call; over the second half of the long form, RSS stayed within ±5 %.
// Every failure's kind is counted and printed.
//
// The short form (20 000 calls) runs in every build; the long forms carry
// the ctest label `long`: 1 000 000 calls in the normal build, 100 000
// under the sanitizers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "../peers/peer_test_support.h"
#include "../testing/test_support.h"

namespace outbound::peers {
namespace {

constexpr int kThreads = 8;

long ResidentBytes() {
  long pages_total = 0, pages_resident = 0;
  std::ifstream("/proc/self/statm") >> pages_total >> pages_resident;
  return pages_resident * sysconf(_SC_PAGESIZE);
}

class SoakTest : public PeerTestBase, public ::testing::Test {
 protected:
  // Calls [from, to) from kThreads threads, each calling Send in a loop;
  // every `sample_every` calls (0: never), RSS is sampled.
  void Run(http::Client& client, int from, int to, int sample_every) {
    std::atomic<int> next{from};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        for (int i = next++; i < to; i = next++) {
          auto result = client.Send(http::Request::Get("/"));
          std::lock_guard lock(mu);
          report.Add(result);
          if (sample_every > 0 && (i - from) % sample_every == 0) {
            rss.emplace_back(i, ResidentBytes());
          }
        }
      });
    }
    for (auto& thread : threads) thread.join();
  }

  // `count()` once it has held still for 100 ms, or after 3 s: connections
  // and threads take a moment to go once their work is done.
  template <typename Count>
  static int Settled(Count count) {
    int last = count();
    for (int i = 0; i < 30; ++i) {
      SleepUntil(SystemClock(), SystemClock().Now() + std::chrono::milliseconds(100));
      int now = count();
      if (now == last) return now;
      last = now;
    }
    return last;
  }

  // This process's descriptors, not counting its connections to the peer
  // (a pool of changing size is no leak). Read from this side: the peer's
  // own count of open connections lags a connection either side has just
  // closed, and left a count one off under load.
  int DescriptorsBesideConnections() {
    return Settled([&] { return testing::OpenDescriptorsBesideConnectionsTo(peer->port()); });
  }
  static int Threads() {
    return Settled([] { return testing::Threads(); });
  }

  void Soak(int calls, bool check_rss) {
    StartPeer("h2_server.js",
              {"--lifetime=50:150", "--reset-percent=10", "--lose-how=reset", "--refuse-percent=5",
               "--delay-percent=5", "--delay-ms=20", "--seed=7"});
    auto client = MakeClient(PaymentsSettings());
    TimePoint start = SystemClock().Now();
    int warmup = std::max(calls / 20, 1000);
    Run(*client, 0, warmup, 0);
    int descriptors = DescriptorsBesideConnections();
    int threads = Threads();

    Run(*client, warmup, calls, check_rss ? calls / 100 : 0);
    nlohmann::json stats = peer->Stats();
    double seconds = std::chrono::duration<double>(SystemClock().Now() - start).count();
    std::string figures = report.Summary() + "; " + log->Summary() + "; server " + stats.dump() +
                          "; " + std::to_string(seconds) + " s";
    std::printf("soak: %s\n", figures.c_str());
    SCOPED_TRACE(figures);

    EXPECT_EQ(report.calls, calls);
    // Not the bound, a guard of this test's: a call fails only when
    // each of its attempts meets a fault, which is rare (today's client,
    // breaker aside: 14 of 20 000).
    EXPECT_LE(report.failed(), calls / 200);
    EXPECT_EQ(client->breaker_state(), circuit::State::kClosed);
    EXPECT_LE(stats["streams"].get<double>() / calls, 1.2);
    EXPECT_EQ(DescriptorsBesideConnections(), descriptors);
    EXPECT_EQ(Threads(), threads);
    if (check_rss) {
      std::sort(rss.begin(), rss.end());
      std::vector<long> second_half;
      for (const auto& [at, bytes] : rss) {
        if (at >= calls / 2) second_half.push_back(bytes);
      }
      ASSERT_FALSE(second_half.empty());
      auto [low, high] = std::minmax_element(second_half.begin(), second_half.end());
      double base = static_cast<double>(second_half.front());
      std::printf("soak: RSS over the second half %ld..%ld bytes, from %ld\n", *low, *high,
                  second_half.front());
      EXPECT_GE(static_cast<double>(*low), base * 0.95);
      EXPECT_LE(static_cast<double>(*high), base * 1.05);
    }
  }

  LoadReport report;
  std::vector<std::pair<int, long>> rss;  // (call index, bytes)
};

TEST_F(SoakTest, TwentyThousandCallsFromEightThreads) { Soak(20000, false); }

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

TEST_F(SoakTest, AMillionCallsFromEightThreadsLong) {
  if (kSanitized) GTEST_SKIP() << "the sanitizer builds run the 100 000-call form";
  Soak(1000000, true);
}

// Under ASan/LSan or TSan (issue 10): no report, nothing gained. RSS is not
// judged: ASan's quarantine holds freed memory on purpose.
TEST_F(SoakTest, AHundredThousandCallsUnderTheSanitizersLong) {
  if (!kSanitized) GTEST_SKIP() << "the normal build runs the million-call form";
  Soak(100000, false);
}

}  // namespace
}  // namespace outbound::peers
