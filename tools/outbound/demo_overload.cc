// SPDX-License-Identifier: Apache-2.0
// `outbound demo --scenario overload`: what adaptive concurrency is for,
// measured. Two embedded dependencies (the test kit's FakeServer over TLS,
// no network needed), alike, each with 8 workers at 50 ms: a request that
// arrives as the n-th in flight is answered after 50 ms * max(1, n / 8), so
// its capacity is 160 answers a second and more calls in flight add only
// latency. Each is called by one client at twice its capacity, an open
// load (callers do not wait for each other): a naive client (one attempt,
// a plain 1 s timeout, no limit) and outbound's (its defaults, plus
// adaptive concurrency). The naive client keeps sending; the dependency's
// queue and its latency grow until every answer comes after the caller
// gave up. Outbound's limit follows the latency, holds the dependency near
// its knee, and fails the rest at once. Measured, nothing fixed: goodput
// (answers within the timeout), latency, timeouts, rejections, and what
// the dependency held.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.h"
#include "common.h"
#include "demo_clients.h"
#include "outbound/http/client.h"
#include "outbound/testing/fake_server.h"
#include "outbound/testing/network_map.h"
#include "outbound/testing/test_ca.h"

namespace outbound::tool {
namespace overload_demo {
namespace {

using std::chrono::milliseconds;
using Seconds = std::chrono::duration<double>;

constexpr int kWorkers = 8;
constexpr Duration kBase = milliseconds(50);
constexpr double kCapacity = kWorkers / 0.050;  // answers a second
constexpr Duration kTimeout = std::chrono::seconds(1);

// One dependency: what it holds, and when (seconds since the start).
struct Dependency {
  std::mutex mu;
  std::vector<TimePoint> finishes;           // of the requests it holds
  std::vector<std::pair<double, int>> held;  // (arrival, in flight then)

  Duration Arrive(TimePoint now, double at) {
    std::lock_guard lock(mu);
    std::erase_if(finishes, [&](TimePoint t) { return t <= now; });
    int in_flight = static_cast<int>(finishes.size()) + 1;
    held.emplace_back(at, in_flight);
    auto delay = std::chrono::duration_cast<Duration>(
        kBase * std::max(1.0, static_cast<double>(in_flight) / kWorkers));
    finishes.push_back(now + delay);
    return delay;
  }
};

struct Call {
  double at = 0;
  double ms = 0;
  bool ok = false;
  bool rejected = false;
};

struct Side {
  std::string name;
  std::unique_ptr<http::Client> client;
  Dependency dependency;
  std::mutex mu;
  std::vector<Call> calls;
  std::atomic<int> in_flight{0};
};

double Quantile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  auto index = static_cast<std::size_t>(std::ceil(p * static_cast<double>(values.size()))) - 1;
  return values[std::min(index, values.size() - 1)];
}

nlohmann::json Summarize(Side& side, double from, double to) {
  std::lock_guard lock(side.mu);
  int calls = 0, ok = 0, rejected = 0, failed = 0;
  std::vector<double> ok_ms;
  for (const Call& c : side.calls) {
    if (c.at < from || c.at >= to) continue;
    ++calls;
    if (c.ok) {
      ++ok;
      ok_ms.push_back(c.ms);
    } else if (c.rejected) {
      ++rejected;
    } else {
      ++failed;
    }
  }
  int held_max = 0;
  {
    std::lock_guard held_lock(side.dependency.mu);
    for (const auto& [at, n] : side.dependency.held) {
      if (at >= from && at < to) held_max = std::max(held_max, n);
    }
  }
  double goodput = ok / (to - from);
  return {
      {"calls", calls},
      {"answered_in_time", ok},
      {"rejected_at_once", rejected},
      {"timed_out_or_failed", failed},
      {"goodput_per_second", goodput},
      {"goodput_of_capacity", goodput / kCapacity},
      {"p50_ms", ok_ms.empty() ? nlohmann::json(nullptr) : nlohmann::json(Quantile(ok_ms, 0.5))},
      {"p99_ms", ok_ms.empty() ? nlohmann::json(nullptr) : nlohmann::json(Quantile(ok_ms, 0.99))},
      {"dependency_held_max", held_max}};
}

// Answers in time, by the second they came in: the picture's line.
std::vector<int> GoodputBySecond(Side& side, int seconds) {
  std::vector<int> out(static_cast<std::size_t>(seconds));
  std::lock_guard lock(side.mu);
  for (const Call& c : side.calls) {
    auto s = static_cast<std::size_t>(c.at + c.ms / 1000);  // when it was answered
    if (c.ok && s < out.size()) ++out[s];
  }
  return out;
}

std::vector<int> HeldBySecond(Side& side, int seconds) {
  std::vector<int> out(static_cast<std::size_t>(seconds));
  std::lock_guard lock(side.dependency.mu);
  for (const auto& [at, n] : side.dependency.held) {
    auto s = static_cast<std::size_t>(at);
    if (s < out.size()) out[s] = std::max(out[s], n);
  }
  return out;
}

// Two panels, naive above outbound's: goodput a second (green) against
// the dependency's capacity (dashed), and the most it held (grey, on its
// own scale, log-free: clipped at 8 times the knee).
std::string Svg(const std::vector<int>& naive_good, const std::vector<int>& naive_held,
                const std::vector<int>& ours_good, const std::vector<int>& ours_held) {
  const int width = 720, panel = 180, left = 60, top = 30;
  const double seconds = static_cast<double>(naive_good.size());
  const double good_max = kCapacity * 1.5, held_max = kWorkers * 8.0;
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\""
      << top + 2 * (panel + 40) << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  auto x = [&](double s) { return left + (width - left - 20) * s / seconds; };
  auto draw = [&](const std::string& title, const std::vector<int>& good,
                  const std::vector<int>& held, int row) {
    int y0 = top + row * (panel + 40);
    auto y = [&](double v, double max) { return y0 + panel - panel * std::min(v, max) / max; };
    svg << "<text x=\"" << left << "\" y=\"" << y0 - 8 << "\">" << title << "</text>\n";
    svg << "<rect x=\"" << left << "\" y=\"" << y0 << "\" width=\"" << width - left - 20
        << "\" height=\"" << panel << "\" fill=\"none\" stroke=\"#999\"/>\n";
    svg << "<line x1=\"" << left << "\" x2=\"" << width - 20 << "\" y1=\"" << y(kCapacity, good_max)
        << "\" y2=\"" << y(kCapacity, good_max)
        << "\" stroke=\"#2a7\" stroke-dasharray=\"4 3\"/>\n";
    svg << "<text x=\"4\" y=\"" << y(kCapacity, good_max) + 4
        << "\" fill=\"#2a7\">capacity</text>\n";
    auto line = [&](const std::vector<int>& v, double max, const char* colour) {
      svg << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"2\" points=\"";
      for (std::size_t i = 0; i < v.size(); ++i) {
        svg << x(static_cast<double>(i) + 0.5) << "," << y(v[i], max) << " ";
      }
      svg << "\"/>\n";
    };
    line(held, held_max, "#bbb");
    line(good, good_max, "#2a7");
  };
  draw("naive: answers in time a second (green), most calls the dependency held (grey, 0 to " +
           std::to_string(kWorkers * 8) + ")",
       naive_good, naive_held, 0);
  draw("outbound, adaptive concurrency: the same", ours_good, ours_held, 1);
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace

int Run(double run_seconds, const std::string& svg_path, const std::string& json_path) {
  Clock& clock = SystemClock();
  Side naive, ours;
  naive.name = "naive";
  ours.name = "outbound";
  testing::TestCA ca;
  TimePoint start = clock.Now();
  auto serve = [&](Side& side) {
    return [&side, &clock, start](const testing::ServerRequest&) {
      TimePoint now = clock.Now();
      Duration delay = side.dependency.Arrive(now, Seconds(now - start).count());
      return testing::Reply::Ok("{\"charge\":\"ok\"}").DelayHeaders(delay);
    };
  };
  auto naive_server = testing::FakeServer::Start(
      {.tls = testing::ServerTls(ca.IssueServer({"naive-payments"})), .handler = serve(naive)});
  auto our_server = testing::FakeServer::Start(
      {.tls = testing::ServerTls(ca.IssueServer({"payments"})), .handler = serve(ours)});
  if (!naive_server || !our_server) {
    std::cerr << "outbound demo: cannot start the dependencies\n";
    return 1;
  }
  testing::NetworkMap network;
  network.Add("naive-payments", 8443, "127.0.0.1", (*naive_server)->port());
  network.Add("payments", 8443, "127.0.0.1", (*our_server)->port());
  Runtime runtime;
  runtime.network = &network;

  http::Settings naive_settings = DemoDependency("naive-payments", ca);
  naive_settings.timeout = kTimeout;
  http::Settings our_settings = DemoDependency("payments", ca);
  our_settings.timeout = kTimeout;
  our_settings.adaptive_concurrency = http::AdaptiveConcurrency{.initial_limit = 4};
  auto clients = MakeDemoClients(runtime, NaiveSettings(naive_settings), our_settings);
  if (clients == nullptr) return 1;
  naive.client = std::move(clients->naive);
  ours.client = std::move(clients->outbound);

  auto send = [&](Side& side, double at) {
    ++side.in_flight;
    TimePoint sent = clock.Now();
    side.client->SendAsync(
        http::Request::Get("/charges/42"),
        [&side, &clock, at, sent](Result<http::Response> result, std::exception_ptr) {
          Call call;
          call.at = at;
          call.ms = Seconds(clock.Now() - sent).count() * 1000;
          call.ok = result && result->status == 200;
          call.rejected = !result && result.error().kind() == ErrorKind::kRejected;
          {
            std::lock_guard lock(side.mu);
            side.calls.push_back(call);
          }
          --side.in_flight;
        });
  };
  // Twice the capacity, to each: the same instants on both sides.
  const double rate = 2 * kCapacity;
  const Duration interval = std::chrono::duration_cast<Duration>(Seconds(1.0 / rate));
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
      std::string status = "[overload] " + std::to_string(last_report) + "s  naive in flight " +
                           std::to_string(naive.in_flight.load()) + " | outbound in flight " +
                           std::to_string(ours.in_flight.load());
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

  // The first third settles (outbound's limit finds the knee, the naive
  // client's queue builds); the rest is measured.
  double from = run_seconds / 3;
  nlohmann::json report;
  report["scenario"] = "overload";
  report["seconds"] = run_seconds;
  report["measured_from_seconds"] = from;
  report["dependency"] = {{"workers", kWorkers},
                          {"unloaded_ms", Seconds(kBase).count() * 1000},
                          {"capacity_per_second", kCapacity}};
  report["offered_per_second"] = rate;
  report["timeout_ms"] = Seconds(kTimeout).count() * 1000;
  report["clients"]["naive"] = Summarize(naive, from, run_seconds);
  report["clients"]["outbound"] = Summarize(ours, from, run_seconds);
  auto seconds = static_cast<int>(std::ceil(run_seconds));
  report["clients"]["naive"]["goodput_by_second"] = GoodputBySecond(naive, seconds);
  report["clients"]["outbound"]["goodput_by_second"] = GoodputBySecond(ours, seconds);

  const auto& nj = report["clients"]["naive"];
  const auto& oj = report["clients"]["outbound"];
  auto text = [](const nlohmann::json& v, int digits, const std::string& unit) {
    if (v.is_null()) return std::string("–");
    std::ostringstream out;
    out << std::fixed << std::setprecision(digits) << v.get<double>() << unit;
    return out.str();
  };
  // Padded by characters, not bytes: "–" is three bytes of UTF-8.
  auto row = [](const std::string& label, const std::string& a, const std::string& b) {
    PrintDemoRow(label, a, b, 46);
  };
  std::cout << "\nAn overloaded dependency: " << kWorkers << " workers at "
            << Seconds(kBase).count() * 1000 << " ms (capacity " << kCapacity << "/s), offered "
            << rate << "/s by each client, timeout " << Seconds(kTimeout).count() * 1000
            << " ms; measured after " << from << " s\n\n";
  row("", "naive", "outbound");
  row("answers in time a second", text(nj["goodput_per_second"], 0, ""),
      text(oj["goodput_per_second"], 0, ""));
  row("  of the dependency's capacity", text(nj["goodput_of_capacity"].get<double>() * 100, 0, "%"),
      text(oj["goodput_of_capacity"].get<double>() * 100, 0, "%"));
  row("latency of those, p50", text(nj["p50_ms"], 0, " ms"), text(oj["p50_ms"], 0, " ms"));
  row("latency of those, p99", text(nj["p99_ms"], 0, " ms"), text(oj["p99_ms"], 0, " ms"));
  row("  unloaded latency", text(Seconds(kBase).count() * 1000, 0, " ms"),
      text(Seconds(kBase).count() * 1000, 0, " ms"));
  row("calls timed out or failed", text(nj["timed_out_or_failed"], 0, ""),
      text(oj["timed_out_or_failed"], 0, ""));
  row("calls rejected at once (nothing sent)", text(nj["rejected_at_once"], 0, ""),
      text(oj["rejected_at_once"], 0, ""));
  row("most calls the dependency held", text(nj["dependency_held_max"], 0, ""),
      text(oj["dependency_held_max"], 0, ""));

  return WriteDemoFiles(svg_path,
                        Svg(GoodputBySecond(naive, seconds), HeldBySecond(naive, seconds),
                            GoodputBySecond(ours, seconds), HeldBySecond(ours, seconds)),
                        json_path, report);
}

}  // namespace overload_demo
}  // namespace outbound::tool
