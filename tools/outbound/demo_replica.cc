// SPDX-License-Identifier: Apache-2.0
// `outbound demo --scenario replica-dies`: what balancing with outlier
// detection is for, measured. Each client calls a dependency of three
// replicas behind one name (the test kit's FakeServers over TLS on
// loopback, no network needed), each answering in 5 to 15 ms, at 200 calls
// a second, an open load. A third of the way into the run one replica of
// each dependency dies: its connections drop with calls on them and every
// later dial is refused. The naive client spreads its calls over the three
// replicas the same way, but sends each call once and never sets a
// replica aside; outbound's sends a failed call again to another replica
// and ejects the dead one. Measured, nothing fixed: each side's calls, the
// ones that failed (before and after the death), the attempts it sent and
// the ejections it made.
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <vector>

#include "commands.h"
#include "common.h"
#include "demo_clients.h"
#include "outbound/http/client.h"
#include "outbound/testing/fake_server.h"
#include "outbound/testing/network_map.h"
#include "outbound/testing/test_ca.h"

namespace outbound::tool {
namespace replica_demo {
namespace {

using std::chrono::milliseconds;
using Seconds = std::chrono::duration<double>;

constexpr int kReplicas = 3;
constexpr double kRate = 200;  // calls a second, from each client
constexpr Duration kTimeout = std::chrono::seconds(2);

struct Call {
  double at = 0;
  bool ok = false;
};

struct Side {
  std::string host;
  std::unique_ptr<http::Client> client;
  std::vector<std::unique_ptr<testing::FakeServer>> replicas;
  std::mutex mu;
  std::vector<Call> calls;
  std::atomic<int> in_flight{0};
  std::atomic<int> attempts{0};
};

nlohmann::json Summarize(Side& side, double died_at) {
  std::lock_guard lock(side.mu);
  int ok = 0, failed_before = 0, failed_after = 0;
  for (const Call& c : side.calls) {
    ok += c.ok ? 1 : 0;
    if (!c.ok) ++(c.at < died_at ? failed_before : failed_after);
  }
  auto calls = static_cast<int>(side.calls.size());
  return {{"calls", calls},
          {"answered", ok},
          {"failed", calls - ok},
          {"failed_before_the_death", failed_before},
          {"failed_after_the_death", failed_after},
          {"success_share", calls == 0 ? 0.0 : static_cast<double>(ok) / calls},
          {"attempts", side.attempts.load()}};
}

// Two panels, naive above outbound's: the share of each second's calls
// that were answered, with the moment the replica died marked.
std::string Svg(Side& naive, Side& ours, double run_seconds, double died_at) {
  const int width = 720, panel = 160, left = 60, top = 30;
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\""
      << top + 2 * (panel + 40) << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  auto x = [&](double s) { return left + (width - left - 20) * s / run_seconds; };
  auto draw = [&](const std::string& title, Side& side, int row) {
    int y0 = top + row * (panel + 40);
    auto y = [&](double share) { return y0 + panel - panel * share; };
    svg << "<text x=\"" << left << "\" y=\"" << y0 - 8 << "\">" << title << "</text>\n";
    svg << "<rect x=\"" << left << "\" y=\"" << y0 << "\" width=\"" << width - left - 20
        << "\" height=\"" << panel << "\" fill=\"none\" stroke=\"#999\"/>\n";
    svg << "<line x1=\"" << x(died_at) << "\" x2=\"" << x(died_at) << "\" y1=\"" << y0 << "\" y2=\""
        << y0 + panel << "\" stroke=\"#c33\" stroke-dasharray=\"4 3\"/>\n";
    svg << "<text x=\"" << x(died_at) + 4 << "\" y=\"" << y0 + 14
        << "\" fill=\"#c33\">a replica dies</text>\n";
    std::vector<int> sent(static_cast<std::size_t>(run_seconds) + 1, 0);
    std::vector<int> answered(sent.size(), 0);
    {
      std::lock_guard lock(side.mu);
      for (const Call& c : side.calls) {
        auto second = std::min(static_cast<std::size_t>(c.at), sent.size() - 1);
        ++sent[second];
        answered[second] += c.ok ? 1 : 0;
      }
    }
    svg << "<polyline fill=\"none\" stroke=\"#2a7\" stroke-width=\"2\" points=\"";
    for (std::size_t s = 0; s < sent.size(); ++s) {
      if (sent[s] == 0) continue;
      double share = static_cast<double>(answered[s]) / sent[s];
      svg << x(static_cast<double>(s) + 0.5) << "," << y(share) << " ";
    }
    svg << "\"/>\n";
  };
  draw("naive: the share of each second's calls answered (0 to 100 %)", naive, 0);
  draw("outbound, balancing with outlier detection: the same", ours, 1);
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace

int Run(double run_seconds, const std::string& svg_path, const std::string& json_path) {
  Clock& clock = SystemClock();
  testing::TestCA ca;
  Side naive, ours;
  naive.host = "naive-carts";
  ours.host = "carts";
  testing::NetworkMap network;
  std::mt19937 draw(20261203);
  std::mutex draw_mu;
  auto handler = [&](const testing::ServerRequest&) {
    std::lock_guard lock(draw_mu);
    auto ms = std::uniform_int_distribution<int>(5, 15)(draw);
    return testing::Reply::Ok("{\"cart\":[]}").DelayHeaders(milliseconds(ms));
  };
  for (Side* side : {&naive, &ours}) {
    std::vector<Endpoint> endpoints;
    for (int i = 0; i < kReplicas; ++i) {
      auto started = testing::FakeServer::Start(
          {.tls = testing::ServerTls(ca.IssueServer({side->host})), .handler = handler});
      if (!started) {
        std::cerr << "outbound demo: cannot start the dependencies\n";
        return 1;
      }
      endpoints.push_back({"127.0.0.1", (*started)->port()});
      side->replicas.push_back(std::move(*started));
    }
    network.Set(side->host, 8443, endpoints);
  }
  Runtime runtime;
  runtime.network = &network;

  // Both spread their calls over the replicas; only outbound's sends a
  // failed call again, elsewhere, and sets a failing replica aside.
  http::Settings naive_settings = NaiveSettings(DemoDependency(naive.host, ca));
  naive_settings.timeout = kTimeout;
  naive_settings.balancing = http::Balancing{};
  naive_settings.balancing->outlier_detection.consecutive_failures = 0;
  http::Settings our_settings = DemoDependency(ours.host, ca);
  our_settings.timeout = kTimeout;
  our_settings.balancing = http::Balancing{};
  for (Side* side : {&naive, &ours}) {
    http::Settings& s = side == &naive ? naive_settings : our_settings;
    s.observers.push_back(
        http::ObserveAttempts([side](const http::AttemptRecord&) { ++side->attempts; }));
  }
  auto clients = MakeDemoClients(runtime, naive_settings, our_settings);
  if (clients == nullptr) return 1;
  naive.client = std::move(clients->naive);
  ours.client = std::move(clients->outbound);

  TimePoint start = clock.Now();
  auto send = [&](Side& side, double at) {
    ++side.in_flight;
    side.client->SendAsync(http::Request::Get("/carts/42"),
                           [&side, at](Result<http::Response> result, std::exception_ptr) {
                             Call call{at, result && result->status == 200};
                             {
                               std::lock_guard lock(side.mu);
                               side.calls.push_back(call);
                             }
                             --side.in_flight;
                           });
  };
  const double died_at = run_seconds / 3;
  bool died = false;
  const Duration interval = std::chrono::duration_cast<Duration>(Seconds(1.0 / kRate));
  bool tty = isatty(STDOUT_FILENO) != 0;
  int last_report = -1;
  for (std::size_t n = 0;; ++n) {
    TimePoint when = start + interval * static_cast<Duration::rep>(n);
    double at = Seconds(when - start).count();
    if (at >= run_seconds) break;
    SleepUntil(clock, when);
    if (!died && at >= died_at) {
      died = true;
      naive.replicas[1]->Stop();
      ours.replicas[1]->Stop();
    }
    send(naive, at);
    send(ours, at);
    if (static_cast<int>(at) != last_report) {
      last_report = static_cast<int>(at);
      std::string status = "[replica-dies] " + std::to_string(last_report) + "s" +
                           (died ? "  one replica of three is dead" : "");
      std::cout << (tty ? "\r\033[K" : "") << status << (tty ? "" : "\n") << std::flush;
    }
  }
  while (naive.in_flight > 0 || ours.in_flight > 0) {
    SleepUntil(clock, clock.Now() + milliseconds(20));
  }
  if (tty) std::cout << "\n";
  naive.client.reset();
  ours.client.reset();
  for (Side* side : {&naive, &ours}) {
    for (auto& replica : side->replicas) replica->Stop();
  }

  nlohmann::json report;
  report["scenario"] = "replica-dies";
  report["seconds"] = run_seconds;
  report["replicas"] = kReplicas;
  report["died_at_seconds"] = died_at;
  report["offered_per_second"] = kRate;
  report["clients"]["naive"] = Summarize(naive, died_at);
  report["clients"]["outbound"] = Summarize(ours, died_at);

  const auto& nj = report["clients"]["naive"];
  const auto& oj = report["clients"]["outbound"];
  auto number = [](const nlohmann::json& v) {
    std::ostringstream out;
    out << std::fixed << std::setprecision(0) << v.get<double>();
    return out.str();
  };
  auto percent = [](const nlohmann::json& v) {
    std::ostringstream out;
    out << std::fixed << std::setprecision(2) << v.get<double>() * 100 << "%";
    return out.str();
  };
  auto row = [](const std::string& label, const std::string& a, const std::string& b) {
    PrintDemoRow(label, a, b, 40);
  };
  std::cout << "\nOne replica of three dies after " << std::fixed << std::setprecision(0) << died_at
            << " s; " << kRate << " calls a second from each client\n\n";
  row("", "naive", "outbound");
  row("calls", number(nj["calls"]), number(oj["calls"]));
  row("answered", percent(nj["success_share"]), percent(oj["success_share"]));
  row("failed after the replica died", number(nj["failed_after_the_death"]),
      number(oj["failed_after_the_death"]));
  row("attempts sent", number(nj["attempts"]), number(oj["attempts"]));

  return WriteDemoFiles(svg_path, Svg(naive, ours, run_seconds, died_at), json_path, report);
}

}  // namespace replica_demo
}  // namespace outbound::tool
