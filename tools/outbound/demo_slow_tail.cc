// SPDX-License-Identifier: Apache-2.0
// `outbound demo --scenario slow-tail`: what hedging is for, measured. Two
// embedded dependencies (the test kit's FakeServer over TLS, no network
// needed), alike: each answers in 40 to 60 ms, except one request in a
// hundred (every hundredth it receives), which takes 1 s. Each is called
// at 100 calls a second, an open load, by one client: a naive one (one
// attempt, a plain timeout) and outbound's with hedging on (the 98th
// percentile of the latency it observed, 75 ms until it has seen 100
// answers; at most 5 % extra attempts). The naive client's slow calls take
// the whole second; outbound's get a hedge that answers first. Measured,
// nothing fixed: each side's latency percentiles, its calls slower than
// three times the dependency's median, and the extra attempts it sent.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "commands.h"
#include "common.h"
#include "demo_clients.h"
#include "outbound/http/client.h"
#include "outbound/testing/fake_server.h"
#include "outbound/testing/network_map.h"
#include "outbound/testing/test_ca.h"

namespace outbound::tool {
namespace slow_tail_demo {
namespace {

using std::chrono::milliseconds;
using Seconds = std::chrono::duration<double>;

constexpr Duration kFastest = milliseconds(40);
constexpr Duration kSpread = milliseconds(20);
constexpr Duration kSlow = std::chrono::seconds(1);
constexpr int kSlowEvery = 100;  // one answer in this many is slow
constexpr double kRate = 100;    // calls a second, from each client
constexpr Duration kTimeout = std::chrono::seconds(3);

// One dependency: the delay it gives each request it receives.
struct Dependency {
  std::mutex mu;
  std::mt19937 draw{20261203};  // the same draws on both sides
  int received = 0;
  std::vector<double> delays_ms;

  Duration Arrive() {
    std::lock_guard lock(mu);
    ++received;
    Duration delay =
        received % kSlowEvery == kSlowEvery / 2
            ? kSlow
            : kFastest + std::chrono::duration_cast<Duration>(
                             kSpread * std::uniform_real_distribution<double>(0, 1)(draw));
    delays_ms.push_back(Seconds(delay).count() * 1000);
    return delay;
  }
};

struct Call {
  double at = 0;
  double ms = 0;
  bool ok = false;
};

struct Side {
  std::unique_ptr<http::Client> client;
  Dependency dependency;
  std::mutex mu;
  std::vector<Call> calls;
  std::atomic<int> in_flight{0};
  std::atomic<int> hedges{0};
  std::atomic<int> hedges_won{0};
};

double Quantile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  auto index = static_cast<std::size_t>(std::ceil(p * static_cast<double>(values.size()))) - 1;
  return values[std::min(index, values.size() - 1)];
}

nlohmann::json Summarize(Side& side, double slow_ms) {
  std::lock_guard lock(side.mu);
  int ok = 0, slow = 0;
  std::vector<double> ms;
  for (const Call& c : side.calls) {
    ok += c.ok ? 1 : 0;
    slow += c.ms > slow_ms ? 1 : 0;
    ms.push_back(c.ms);
  }
  int received;
  {
    std::lock_guard dependency_lock(side.dependency.mu);
    received = side.dependency.received;
  }
  auto calls = static_cast<int>(side.calls.size());
  int extra = received - calls;
  return {{"calls", calls},
          {"answered", ok},
          {"p50_ms", Quantile(ms, 0.5)},
          {"p99_ms", Quantile(ms, 0.99)},
          {"p999_ms", Quantile(ms, 0.999)},
          {"max_ms", Quantile(ms, 1.0)},
          {"slower_than_3x_p50", slow},
          {"attempts", received},
          {"extra_attempts", extra},
          {"extra_attempts_share", calls == 0 ? 0.0 : static_cast<double>(extra) / calls},
          {"hedges", side.hedges.load()},
          {"hedges_won", side.hedges_won.load()}};
}

// Two panels, naive above outbound's: each call's latency (a dot at the
// second it was sent), against three times the dependency's median
// (dashed), on a scale clipped at 1.2 s.
std::string Svg(Side& naive, Side& ours, double run_seconds, double limit_ms) {
  const int width = 720, panel = 180, left = 60, top = 30;
  const double max_ms = Seconds(kSlow).count() * 1200;
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\""
      << top + 2 * (panel + 40) << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  auto x = [&](double s) { return left + (width - left - 20) * s / run_seconds; };
  auto draw = [&](const std::string& title, Side& side, int row) {
    int y0 = top + row * (panel + 40);
    auto y = [&](double v) { return y0 + panel - panel * std::min(v, max_ms) / max_ms; };
    svg << "<text x=\"" << left << "\" y=\"" << y0 - 8 << "\">" << title << "</text>\n";
    svg << "<rect x=\"" << left << "\" y=\"" << y0 << "\" width=\"" << width - left - 20
        << "\" height=\"" << panel << "\" fill=\"none\" stroke=\"#999\"/>\n";
    svg << "<line x1=\"" << left << "\" x2=\"" << width - 20 << "\" y1=\"" << y(limit_ms)
        << "\" y2=\"" << y(limit_ms) << "\" stroke=\"#2a7\" stroke-dasharray=\"4 3\"/>\n";
    svg << "<text x=\"4\" y=\"" << y(limit_ms) + 4 << "\" fill=\"#2a7\">3× p50</text>\n";
    std::lock_guard lock(side.mu);
    for (const Call& c : side.calls) {
      svg << "<circle cx=\"" << x(c.at) << "\" cy=\"" << y(c.ms) << "\" r=\"1.5\" fill=\""
          << (c.ms > limit_ms ? "#c33" : "#2a7") << "\"/>\n";
    }
  };
  draw("naive: each call's latency (0 to 1.2 s; red: over 3× the dependency's median)", naive, 0);
  draw("outbound, hedging: the same", ours, 1);
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace

int Run(double run_seconds, const std::string& svg_path, const std::string& json_path) {
  Clock& clock = SystemClock();
  Side naive, ours;
  testing::TestCA ca;
  auto serve = [](Side& side) {
    return [&side](const testing::ServerRequest&) {
      return testing::Reply::Ok("{\"cart\":[]}").DelayHeaders(side.dependency.Arrive());
    };
  };
  auto naive_server = testing::FakeServer::Start(
      {.tls = testing::ServerTls(ca.IssueServer({"naive-carts"})), .handler = serve(naive)});
  auto our_server = testing::FakeServer::Start(
      {.tls = testing::ServerTls(ca.IssueServer({"carts"})), .handler = serve(ours)});
  if (!naive_server || !our_server) {
    std::cerr << "outbound demo: cannot start the dependencies\n";
    return 1;
  }
  testing::NetworkMap network;
  network.Add("naive-carts", 8443, "127.0.0.1", (*naive_server)->port());
  network.Add("carts", 8443, "127.0.0.1", (*our_server)->port());
  Runtime runtime;
  runtime.network = &network;

  http::Settings naive_settings = DemoDependency("naive-carts", ca);
  naive_settings.timeout = kTimeout;
  http::Settings our_settings = DemoDependency("carts", ca);
  our_settings.timeout = kTimeout;
  our_settings.hedging =
      http::Hedging{.delay = milliseconds(75), .percentile = 0.98, .max_extra_share = 0.05};
  our_settings.observers.push_back(http::ObserveAttempts([&ours](const http::AttemptRecord& r) {
    if (r.hedge) ++ours.hedges;
    if (r.hedge && r.reason.kind == retry::ReasonKind::kSuccess) ++ours.hedges_won;
  }));
  auto clients = MakeDemoClients(runtime, NaiveSettings(naive_settings), our_settings);
  if (clients == nullptr) return 1;
  naive.client = std::move(clients->naive);
  ours.client = std::move(clients->outbound);

  TimePoint start = clock.Now();
  auto send = [&](Side& side, double at) {
    ++side.in_flight;
    TimePoint sent = clock.Now();
    side.client->SendAsync(http::Request::Get("/carts/42"), [&side, &clock, at, sent](
                                                                Result<http::Response> result,
                                                                std::exception_ptr) {
      Call call{at, Seconds(clock.Now() - sent).count() * 1000, result && result->status == 200};
      {
        std::lock_guard lock(side.mu);
        side.calls.push_back(call);
      }
      --side.in_flight;
    });
  };
  const Duration interval = std::chrono::duration_cast<Duration>(Seconds(1.0 / kRate));
  bool tty = isatty(STDOUT_FILENO) != 0;
  int last_report = -1;
  for (std::size_t n = 0;; ++n) {
    TimePoint when = start + interval * static_cast<Duration::rep>(n);
    double at = Seconds(when - start).count();
    if (at >= run_seconds) break;
    SleepUntil(clock, when);
    send(naive, at);
    send(ours, at);
    if (static_cast<int>(at) != last_report) {
      last_report = static_cast<int>(at);
      std::string status = "[slow-tail] " + std::to_string(last_report) + "s  outbound hedges " +
                           std::to_string(ours.hedges.load());
      std::cout << (tty ? "\r\033[K" : "") << status << (tty ? "" : "\n") << std::flush;
    }
  }
  while (naive.in_flight > 0 || ours.in_flight > 0) {
    SleepUntil(clock, clock.Now() + milliseconds(20));
  }
  if (tty) std::cout << "\n";
  naive.client.reset();
  ours.client.reset();
  (*naive_server)->Stop();
  (*our_server)->Stop();

  double dependency_p50;
  {
    std::lock_guard lock(naive.dependency.mu);
    dependency_p50 = Quantile(naive.dependency.delays_ms, 0.5);
  }
  const double limit_ms = 3 * dependency_p50;
  nlohmann::json report;
  report["scenario"] = "slow-tail";
  report["seconds"] = run_seconds;
  report["dependency"] = {
      {"fast_ms", {Seconds(kFastest).count() * 1000, Seconds(kFastest + kSpread).count() * 1000}},
      {"slow_ms", Seconds(kSlow).count() * 1000},
      {"slow_share", 1.0 / kSlowEvery},
      {"p50_ms", dependency_p50}};
  report["offered_per_second"] = kRate;
  report["clients"]["naive"] = Summarize(naive, limit_ms);
  report["clients"]["outbound"] = Summarize(ours, limit_ms);

  const auto& nj = report["clients"]["naive"];
  const auto& oj = report["clients"]["outbound"];
  auto text = [](double v, int digits, const std::string& unit) {
    std::ostringstream out;
    out << std::fixed << std::setprecision(digits) << v << unit;
    return out.str();
  };
  auto row = [](const std::string& label, const std::string& a, const std::string& b) {
    PrintDemoRow(label, a, b);
  };
  auto ms = [&](const nlohmann::json& v) { return text(v.get<double>(), 0, " ms"); };
  std::cout << "\nA slow tail: answers in " << Seconds(kFastest).count() * 1000 << " to "
            << Seconds(kFastest + kSpread).count() * 1000 << " ms (median "
            << text(dependency_p50, 0, " ms") << "), one in " << kSlowEvery << " in "
            << Seconds(kSlow).count() * 1000 << " ms; " << kRate
            << " calls a second from each client\n\n";
  row("", "naive", "outbound");
  row("calls", text(nj["calls"].get<double>(), 0, ""), text(oj["calls"].get<double>(), 0, ""));
  row("latency p50", ms(nj["p50_ms"]), ms(oj["p50_ms"]));
  row("latency p99", ms(nj["p99_ms"]), ms(oj["p99_ms"]));
  row("latency p99.9", ms(nj["p999_ms"]), ms(oj["p999_ms"]));
  row("latency max", ms(nj["max_ms"]), ms(oj["max_ms"]));
  row("calls over 3x the dependency's median", text(nj["slower_than_3x_p50"].get<double>(), 0, ""),
      text(oj["slower_than_3x_p50"].get<double>(), 0, ""));
  row("extra attempts (hedges)", text(nj["extra_attempts"].get<double>(), 0, ""),
      text(oj["extra_attempts"].get<double>(), 0, ""));
  row("  of the calls", text(nj["extra_attempts_share"].get<double>() * 100, 1, "%"),
      text(oj["extra_attempts_share"].get<double>() * 100, 1, "%"));
  row("hedges that answered first", "–", text(oj["hedges_won"].get<double>(), 0, ""));

  return WriteDemoFiles(svg_path, Svg(naive, ours, run_seconds, limit_ms), json_path, report);
}

}  // namespace slow_tail_demo
}  // namespace outbound::tool
