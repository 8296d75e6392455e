// SPDX-License-Identifier: Apache-2.0
// `outbound demo`: what a circuit breaker is for, measured. An embedded
// flaky dependency (the test kit's FakeServer, over TLS with its own TestCA,
// no network needed) is called by two services side by side, each with a
// fixed number of slots (its workers) serving the same steady mix of
// requests: half need the dependency, half do not. One service calls the
// dependency through a naive client (one attempt, no breaker, a plain
// timeout), the other through outbound's client. The dependency follows a
// script:
//
//   healthy 20% | 503 storm 20%: 1 request in 10 answered 503, Retry-After: 1
//   (one backend of ten is down) | hanging 40%: no answer at all, longer than
//   any timeout | healthy again 20%
//
// A request that finds every slot busy is turned away at once, as a server
// whose workers are all taken would. Everything is measured, nothing fixed:
// per phase, the requests each service served (both kinds), how long its
// callers waited on failed calls, the attempts the dependency received per
// call, the slots in use, the breaker's transitions and the retry
// decisions. --seconds compresses the script, the clients' durations, the
// services' own work and the gap between requests together, so a short run
// tells the same story as the default 30 s one.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "commands.h"
#include "common.h"
#include "demo_clients.h"
#include "outbound/config/resolver.h"
#include "outbound/http/client.h"
#include "outbound/testing/fake_server.h"
#include "outbound/testing/network_map.h"
#include "outbound/testing/test_ca.h"

namespace outbound::tool {
namespace {

using std::chrono::duration;
using std::chrono::milliseconds;
using Seconds = duration<double>;

constexpr const char* kDemoHelp =
    R"(usage: outbound demo [--seconds N] [--rps R] [--svg FILE] [--json FILE] [--fault SCENARIO]
       outbound demo --scenario overload [--seconds N] [--svg FILE] [--json FILE]
       outbound demo --scenario slow-tail [--seconds N] [--svg FILE] [--json FILE]
       outbound demo --scenario replica-dies [--seconds N] [--svg FILE] [--json FILE]

Starts an embedded dependency on loopback (TLS, a certificate from a CA made
for this run) that is healthy, then answers one request in ten with 503 and
Retry-After: 1, then hangs, then is healthy again. Two services, each with 64
slots, serve the same steady stream of requests, half of which call the
dependency: one through a naive client (one attempt, no breaker, the same
overall timeout), one through outbound's client (its defaults, plus the
breaker's slow-call rule at 250 ms). A request that finds every slot busy is
turned away. Prints a live progress line, then a side-by-side table, and
writes an SVG timeline. In the table, "–" is a figure with nothing to measure
(a phase in which a service made no call, a run with no failed call); the
dependency calls a service made are split into those the breaker failed at
once, sending nothing, and those that reached the dependency, whose success
is the dependency's own; the settings each client had are printed after it.

With --scenario overload: an overloaded dependency instead (8 workers at
50 ms: its latency grows with the calls it holds past 8; capacity 160 a
second), called at twice its capacity by a naive client (one attempt, a 1 s
timeout, no limit) and by outbound's with adaptive concurrency on. Prints a
side-by-side table of what the last two thirds of the run measured (answers
in time a second against the capacity, their p50 and p99 against the
unloaded latency, timeouts, rejections, the most calls the dependency held)
and writes an SVG of each side's answers in time, second by second.

With --scenario slow-tail: a dependency that answers in 40 to 60 ms but
takes 1 s for one answer in a hundred, called at 100 calls a second by a
naive client and by outbound's with hedging on (a second attempt once the
first has waited the 98th percentile of the latency seen; at most 5 % extra
attempts). Prints each side's latency p50, p99, p99.9 and max, its calls
slower than 3 times the dependency's median, and the extra attempts it
sent, and writes an SVG of each call's latency.

With --scenario replica-dies: a dependency of three replicas behind one
name, called at 200 calls a second by a naive client (its calls spread
over the replicas, each sent once) and by outbound's with balancing on; a
third of the way in, one replica dies. Prints each side's calls answered,
those that failed after the death, and the attempts sent, and writes an
SVG of the share of each second's calls answered.

options:
  --scenario S  outage (the default: the script above), overload, slow-tail
                or replica-dies
  --seconds N   length of the run (default 30); the script, the clients'
                durations and the services' own work are scaled by N/30, and
                the request rate by 30/N, so short runs show the same story
  --rps R       requests per second to each service, half of them calling
                the dependency (default 200 at 30 s, scaled as above)
  --svg FILE    where to write the timeline (default outbound-demo.svg)
  --json FILE   where to write the raw series and summary
  --fault SCENARIO
                also inject failures into both services' calls to the
                dependency, whose point is http:payments:8443, e.g.
                'http:payments:8443=abort,20%' (docs/failure-injection.md)
)";

// Each service's capacity: requests it serves at once.
constexpr int kSlots = 64;
// How long a request that does not need the dependency takes, at 30 s.
constexpr Duration kOwnWork = milliseconds(10);
// The slow-call rule outbound's client is given, at 30 s: a healthy answer
// here takes a few milliseconds, so a quarter second without headers is a
// hang, not a slow day.
constexpr Duration kSlowCall = milliseconds(250);

enum Phase { kHealthy, kStorm, kHanging, kRecovered };
constexpr const char* kPhaseNames[] = {"healthy", "503 storm", "hanging", "healthy again"};
// Where each phase starts, as a fraction of the run.
constexpr double kPhaseStart[] = {0.0, 0.2, 0.4, 0.8};

Phase PhaseAt(double fraction) {
  for (int p = 3; p >= 0; --p) {
    if (fraction >= kPhaseStart[p]) return static_cast<Phase>(p);
  }
  return kHealthy;
}

// One request to a service, as its caller saw it.
struct RequestRecord {
  std::size_t id = 0;  // the request's place in the load, the same on both sides
  double at = 0;       // arrival, seconds since the run began
  double ended = 0;    // when its caller had the answer
  bool needs_dependency = false;
  bool admitted = false;  // a slot was free
  bool ok = false;        // served: admitted and, if it called the dependency, that call worked
  std::optional<ErrorKind> error;
};

// What one service did, as seen by its callers and by the dependency.
struct Side {
  std::string name;
  std::unique_ptr<http::Client> client;
  std::mutex mu;
  std::vector<RequestRecord> requests;
  std::atomic<int> slots{0};                         // in use
  std::atomic<int> in_flight{0};                     // dependency calls not yet answered
  std::deque<TimePoint> own_work_ends;               // requests without the dependency, in order
  std::vector<double> attempt_times;                 // when the dependency got each attempt
  std::vector<char> reached;                         // by id: an attempt of the call arrived
  std::vector<std::pair<double, int>> slot_samples;  // (time, slots in use)
  std::map<std::string, int> decisions;
  std::vector<std::pair<double, circuit::Transition>> transitions;
};

// Where there is nothing to measure (no call, no failure, no sample), a
// figure is null in the JSON and "–" in the table, never a made-up 0.
nlohmann::json Percentile(std::vector<double> values, double p) {
  if (values.empty()) return nullptr;
  std::sort(values.begin(), values.end());
  auto index = static_cast<std::size_t>(std::ceil(p * static_cast<double>(values.size()))) - 1;
  return values[std::min(index, values.size() - 1)];
}

nlohmann::json Ratio(double a, int b) {
  return b > 0 ? nlohmann::json(a / b) : nlohmann::json(nullptr);
}

// The requests that arrived in [from, to) seconds, the attempts that reached
// the dependency then, and the slots in use then.
nlohmann::json Summarize(const Side& side, double from, double to) {
  int other = 0, other_served = 0, dependency = 0, dependency_served = 0, calls = 0, calls_ok = 0,
      turned_away = 0, rejected = 0, attempts = 0, reached = 0, reached_ok = 0, unsent = 0;
  std::vector<double> failure_ms, call_ms;
  double waited_on_failures = 0;
  for (const RequestRecord& r : side.requests) {
    if (r.at < from || r.at >= to) continue;
    turned_away += r.admitted ? 0 : 1;
    if (!r.needs_dependency) {
      ++other;
      other_served += r.ok ? 1 : 0;
      continue;
    }
    ++dependency;
    dependency_served += r.ok ? 1 : 0;
    if (!r.admitted) continue;
    ++calls;
    calls_ok += r.ok ? 1 : 0;
    rejected += r.error == ErrorKind::kRejected ? 1 : 0;
    // Reached: the dependency got an attempt of the call. A call the
    // breaker failed before sending anything never did.
    bool got_there = r.id < side.reached.size() && side.reached[r.id] != 0;
    reached += got_there ? 1 : 0;
    reached_ok += got_there && r.ok ? 1 : 0;
    unsent += !got_there && r.error == ErrorKind::kRejected ? 1 : 0;
    double ms = (r.ended - r.at) * 1000;
    call_ms.push_back(ms);
    if (!r.ok) {
      failure_ms.push_back(ms);
      waited_on_failures += ms / 1000;
    }
  }
  for (double t : side.attempt_times) attempts += t >= from && t < to ? 1 : 0;
  double slot_sum = 0;
  int slot_count = 0, slot_max = 0;
  for (const auto& [t, n] : side.slot_samples) {
    if (t < from || t >= to) continue;
    slot_sum += n;
    ++slot_count;
    slot_max = std::max(slot_max, n);
  }
  return {{"other_requests", other},
          {"other_served", Ratio(other_served, other)},
          {"dependency_requests", dependency},
          {"dependency_served", Ratio(dependency_served, dependency)},
          {"calls", calls},
          {"call_success_rate", Ratio(calls_ok, calls)},
          {"turned_away", turned_away},
          {"rejected_by_breaker", rejected},
          {"failed_by_breaker_unsent", unsent},
          {"calls_reached_dependency", reached},
          {"reached_success_rate", Ratio(reached_ok, reached)},
          {"failed_calls", static_cast<int>(failure_ms.size())},
          {"time_to_fail_p50_ms", Percentile(failure_ms, 0.50)},
          {"time_to_fail_p99_ms", Percentile(failure_ms, 0.99)},
          {"caller_seconds_waited_on_failures", waited_on_failures},
          {"call_p50_ms", Percentile(call_ms, 0.50)},
          {"call_p99_ms", Percentile(call_ms, 0.99)},
          {"attempts_at_dependency", attempts},
          {"attempts_per_call", Ratio(attempts, calls)},
          {"attempts_per_second", attempts / std::max(1e-9, to - from)},
          {"slots_mean", Ratio(slot_sum, slot_count)},
          {"slots_max", slot_max}};
}

// What the table prints where there is nothing to measure.
constexpr const char* kNothing = "\u2013";  // "–"

std::string Percent(double x) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << x * 100 << "%";
  return out.str();
}
std::string Fixed(double x, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << x;
  return out.str();
}
std::string Millis(double ms) {
  if (ms >= 1000) return Fixed(ms / 1000, 1) + " s";
  return Fixed(ms, ms < 10 ? 1 : 0) + " ms";
}
// A figure of the JSON as `format` writes it, or "–" when it is null.
template <typename Format>
std::string OrNothing(const nlohmann::json& v, Format format) {
  return v.is_null() ? std::string(kNothing) : format(v.get<double>());
}

// `text` and spaces after it up to `width` columns (a UTF-8 character
// taking one), as std::setw would pad ASCII.
std::string Pad(const std::string& text, std::size_t width) {
  std::size_t columns = 0;
  for (char c : text) columns += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return text + std::string(width > columns ? width - columns : 0, ' ');
}

// The timeline, in 60 buckets per run length. For each service: requests
// arriving, requests served and dependency calls succeeded (by when they
// ended), attempts arriving at the dependency, and slots in use; the
// phases as bands; where the dependency healed and where the breaker closed;
// the breaker's state as a band drawn from its transitions.
std::string Svg(const Side& naive, const Side& resilient, double run_seconds, double end_seconds,
                int rps, double healed_at, std::optional<double> closed_at) {
  const double bucket = run_seconds / 60;
  const auto buckets = static_cast<std::size_t>(std::ceil(end_seconds / bucket));
  const int width = 1000, panel = 220, left = 90, right = 60, top = 40;
  const double plot_width = width - left - right;
  auto x_of = [&](double t) { return left + t / end_seconds * plot_width; };
  const double y_max = rps * 1.2;
  std::ostringstream svg;
  svg << R"(<svg xmlns="http://www.w3.org/2000/svg" width=")" << width << R"(" height=")"
      << top + 2 * panel + 130 << R"(" font-family="sans-serif" font-size="12">)"
      << "\n";
  svg << R"(<rect width="100%" height="100%" fill="white"/>)"
      << "\n";
  svg << R"(<text x=")" << left << R"(" y="24" font-size="15" font-weight="bold">)"
      << "outbound demo: two services with " << kSlots << " slots each, " << rps
      << " requests/s, half calling one flaky dependency, " << Fixed(run_seconds, 0)
      << " s</text>\n";
  const char* phase_fill[] = {"#eef7ee", "#fdf0e0", "#fbe3e3", "#eef7ee"};
  for (int p = 0; p < 4; ++p) {
    double x0 = x_of(kPhaseStart[p] * run_seconds);
    double x1 = x_of((p < 3 ? kPhaseStart[p + 1] : 1.0) * run_seconds);
    svg << R"(<rect x=")" << x0 << R"(" y=")" << top << R"(" width=")" << x1 - x0 << R"(" height=")"
        << 2 * panel << R"(" fill=")" << phase_fill[p] << R"("/>)"
        << R"(<text x=")" << x0 + 4 << R"(" y=")" << top + 14 << R"(" fill="#555">)"
        << kPhaseNames[p] << "</text>\n";
  }
  if (end_seconds > run_seconds) {
    svg << R"(<text x=")" << x_of(run_seconds) + 4 << R"(" y=")" << top + 14
        << R"(" fill="#555">no new requests</text>)"
        << "\n";
  }
  // A dashed vertical line at `t`, labelled to its left or right.
  auto marker = [&](double t, const char* color, const std::string& label, double y0, double y1,
                    bool label_left) {
    svg << R"(<line x1=")" << x_of(t) << R"(" y1=")" << y0 << R"(" x2=")" << x_of(t) << R"(" y2=")"
        << y1 << R"(" stroke=")" << color << R"(" stroke-width="1.5" stroke-dasharray="4 3"/>)"
        << R"(<text x=")" << x_of(t) + (label_left ? -4 : 4) << R"(" y=")" << y0 + 10
        << R"(" fill=")" << color << R"(" text-anchor=")" << (label_left ? "end" : "start")
        << R"(">)" << label << "</text>\n";
  };
  auto panel_of = [&](const Side& side, int row) {
    double base = top + (row + 1) * panel - 10;
    double height = panel - 40;
    std::vector<double> arriving(buckets), served(buckets), succeeded(buckets), sent(buckets),
        slots(buckets), samples(buckets);
    auto add = [&](std::vector<double>& series, double t, double v) {
      auto b = static_cast<std::size_t>(t / bucket);
      if (b < series.size()) series[b] += v;
    };
    for (const RequestRecord& r : side.requests) {
      add(arriving, r.at, 1 / bucket);
      if (r.ok) add(served, r.ended, 1 / bucket);
      if (r.ok && r.needs_dependency) add(succeeded, r.ended, 1 / bucket);
    }
    for (double t : side.attempt_times) add(sent, t, 1 / bucket);
    for (const auto& [t, n] : side.slot_samples) {
      add(slots, t, n);
      add(samples, t, 1);
    }
    for (std::size_t b = 0; b < buckets; ++b) slots[b] = samples[b] > 0 ? slots[b] / samples[b] : 0;
    auto y_of = [&](double v, double max) { return base - std::min(1.0, v / max) * height; };
    auto line = [&](const std::vector<double>& values, double max, const char* color,
                    const char* extra) {
      svg << R"(<polyline fill="none" stroke=")" << color << R"(" stroke-width="2" )" << extra
          << R"( points=")";
      for (std::size_t b = 0; b < values.size(); ++b) {
        svg << x_of((static_cast<double>(b) + 0.5) * bucket) << "," << y_of(values[b], max) << " ";
      }
      svg << R"("/>)"
          << "\n";
    };
    line(arriving, y_max, "#777777", R"(stroke-dasharray="5 3")");
    line(slots, kSlots * 1.2, "#8e44ad", R"(stroke-dasharray="2 2")");
    line(sent, y_max, "#c03030", "");
    line(served, y_max, "#2a8a2a", "");
    line(succeeded, y_max, "#1f5fbf", "");
    svg << R"(<text x="8" y=")" << base - height / 2 << R"(" font-weight="bold">)" << side.name
        << "</text>\n";
    for (double v : {0.0, static_cast<double>(rps) / 2, static_cast<double>(rps)}) {
      svg << R"(<text x=")" << left - 6 << R"(" y=")" << y_of(v, y_max) + 4
          << R"(" text-anchor="end" fill="#555">)" << v << "/s</text>";
      svg << R"(<line x1=")" << left << R"(" y1=")" << y_of(v, y_max) << R"(" x2=")"
          << width - right << R"(" y2=")" << y_of(v, y_max) << R"(" stroke=")"
          << (v == 0 ? "#999" : "#ddd") << R"("/>)"
          << "\n";
    }
    svg << R"(<text x=")" << width - right + 6 << R"(" y=")" << y_of(kSlots, kSlots * 1.2) + 4
        << R"(" fill="#8e44ad">)" << kSlots << " slots</text>\n";
    marker(healed_at, "#1b7a1b", "dependency healed", base - height - 8, base, true);
    if (row == 1 && closed_at) {
      marker(*closed_at, "#333333", "breaker closed", base - height + 8, base, false);
    }
  };
  panel_of(naive, 0);
  panel_of(resilient, 1);

  // outbound's breaker, from its transitions.
  double band = top + 2 * panel + 4;
  const char* state_fill[] = {"#4caf50", "#e53935", "#fbc02d"};
  double from = 0;
  int state = 0;
  auto segment = [&](double to) {
    svg << R"(<rect x=")" << x_of(from) << R"(" y=")" << band << R"(" width=")"
        << std::max(1.0, x_of(to) - x_of(from)) << R"(" height="14" fill=")" << state_fill[state]
        << R"("/>)";
  };
  for (const auto& [at, t] : resilient.transitions) {
    segment(std::min(at, end_seconds));
    from = std::min(at, end_seconds);
    state = static_cast<int>(t.to);
  }
  segment(end_seconds);
  svg << "\n"
      << R"(<text x="8" y=")" << band + 11 << R"(">breaker</text>)"
      << "\n";
  for (int tick = 0; tick * run_seconds / 10 <= end_seconds + 1e-9; ++tick) {
    double t = run_seconds * tick / 10;
    svg << R"(<text x=")" << x_of(t) << R"(" y=")" << band + 32
        << R"(" text-anchor="middle" fill="#555">)" << Fixed(t, t < 10 ? 1 : 0) << "s</text>";
  }
  double legend = band + 56;
  svg << "\n"
      << R"(<text x=")" << left << R"(" y=")" << legend << R"(">)"
      << R"(<tspan fill="#2a8a2a">requests served/s, both kinds, by when they ended</tspan>   )"
      << R"(<tspan fill="#1f5fbf">of which dependency calls that succeeded</tspan>   )"
      << R"(<tspan fill="#777">- - requests arriving/s</tspan></text>)"
      << "\n"
      << R"(<text x=")" << left << R"(" y=")" << legend + 18 << R"(">)"
      << R"(<tspan fill="#c03030">attempts/s arriving at the dependency</tspan>   )"
      << R"(<tspan fill="#8e44ad">· · slots in use (right scale, of )" << kSlots
      << R"()</tspan>   )"
      << R"(breaker: <tspan fill="#4caf50">closed</tspan> <tspan fill="#e53935">open</tspan> )"
      << R"(<tspan fill="#c9a000">half-open</tspan></text>)"
      << "\n</svg>\n";
  return svg.str();
}

}  // namespace

int RunDemo(const std::vector<std::string>& args) {
  double run_seconds = 30;
  std::optional<int> rps_option;
  std::string svg_path = "outbound-demo.svg", json_path;
  std::optional<std::string> fault;
  std::string scenario = "outage";
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    bool has_value = i + 1 < args.size();
    if (a == "-h" || a == "--help") {
      std::cout << kDemoHelp;
      return kExitOk;
    } else if (a == "--seconds" && has_value) {
      // Not a number ("nan", "5s"): 0, which the range below refuses.
      run_seconds = config::ParseDouble(args[++i]).value_or(0);
    } else if (a == "--rps" && has_value) {
      rps_option = config::ParseInt(args[++i]).value_or(0);
    } else if (a == "--svg" && has_value) {
      svg_path = args[++i];
    } else if (a == "--json" && has_value) {
      json_path = args[++i];
    } else if (a == "--fault" && has_value) {
      fault = args[++i];
    } else if (a == "--scenario" && has_value) {
      scenario = args[++i];
    } else {
      bool takes_value = a == "--seconds" || a == "--rps" || a == "--svg" || a == "--json" ||
                         a == "--fault" || a == "--scenario";
      return Usage("demo", takes_value ? a + " needs a value" : "unknown option " + a);
    }
  }
  if (scenario != "outage" && scenario != "overload" && scenario != "slow-tail" &&
      scenario != "replica-dies") {
    return Usage("demo", "--scenario must be outage, overload, slow-tail or replica-dies");
  }
  if (scenario != "outage") {
    if (rps_option || fault) return Usage("demo", "--rps and --fault are the outage scenario's");
    if (run_seconds < 3 || run_seconds > 3600) return Usage("demo", "--seconds must be 3 to 3600");
    if (scenario == "overload") return overload_demo::Run(run_seconds, svg_path, json_path);
    if (scenario == "replica-dies") return replica_demo::Run(run_seconds, svg_path, json_path);
    return slow_tail_demo::Run(run_seconds, svg_path, json_path);
  }
  if (run_seconds < 3 || run_seconds > 3600 ||
      (rps_option && (*rps_option < 2 || *rps_option > 5000))) {
    return Usage("demo", "--seconds must be 3 to 3600 and --rps 2 to 5000");
  }
  const double scale = run_seconds / 30;
  const int rps = rps_option.value_or(std::max(2, static_cast<int>(std::lround(200 / scale))));
  auto scaled = [&](Duration d) {
    return Duration(static_cast<Duration::rep>(static_cast<double>(d.count()) * scale));
  };
  Clock& clock = SystemClock();

  Side naive, resilient;
  naive.name = "naive";
  resilient.name = "outbound";

  // The dependency.
  testing::TestCA ca;
  TimePoint start = clock.Now();
  std::atomic<int> storm_counter[2] = {0, 0};
  std::mutex server_mu;
  auto handler = [&](const testing::ServerRequest& r) {
    double elapsed = Seconds(clock.Now() - start).count();
    bool is_naive = r.header("x-client") == "naive";
    std::string call = r.header("x-call");
    Phase phase = PhaseAt(elapsed / run_seconds);
    {
      std::lock_guard lock(server_mu);
      Side& side = is_naive ? naive : resilient;
      side.attempt_times.push_back(elapsed);
      if (!call.empty()) {
        auto id = static_cast<std::size_t>(std::strtoull(call.c_str(), nullptr, 10));
        if (side.reached.size() <= id) side.reached.resize(id + 1);
        side.reached[id] = 1;
      }
    }
    switch (phase) {
      case kStorm:
        // One backend of ten is down: every tenth request is answered 503.
        if (++storm_counter[is_naive ? 0 : 1] % 10 == 0) {
          return testing::Reply::Status(503, "overloaded").Header("Retry-After", "1");
        }
        return testing::Reply::Ok("{\"charge\":\"ok\"}");
      case kHanging:
        return testing::Reply::Hang();
      default:
        return testing::Reply::Ok("{\"charge\":\"ok\"}");
    }
  };
  auto server = testing::FakeServer::Start(
      {.tls = testing::ServerTls(ca.IssueServer({"payments"})), .handler = handler});
  if (!server) {
    std::cerr << "outbound demo: cannot start the dependency: " << server.error().message() << "\n";
    return 1;
  }
  testing::NetworkMap network;
  network.Add("payments", 8443, "127.0.0.1", (*server)->port());
  Runtime runtime;
  runtime.network = &network;

  // The two clients: the same transport, with and without resilience.
  http::Settings base = DemoDependency("payments", ca);
  base.faults.enabled = fault.has_value();
  base.timeout = scaled(base.timeout);
  base.attempt_timeout = scaled(base.attempt_timeout);
  base.backoff_base = scaled(base.backoff_base);
  base.backoff_max = scaled(base.backoff_max);
  base.breaker.open_for = scaled(base.breaker.open_for);
  base.breaker.initial_open_for = scaled(base.breaker.initial_open_for);
  base.breaker.probe_timeout = scaled(base.breaker.probe_timeout);

  http::Settings naive_settings = NaiveSettings(base);

  http::Settings resilient_settings = base;
  resilient_settings.breaker.slow_call = scaled(kSlowCall);
  resilient_settings.observers.push_back(http::ObserveAttempts([&](const http::AttemptRecord& r) {
    std::lock_guard lock(resilient.mu);
    if (r.decision) ++resilient.decisions[std::string(retry::ToString(*r.decision))];
  }));
  resilient_settings.observers.push_back(
      http::ObserveTransitions([&](const circuit::Transition& t) {
        std::lock_guard lock(resilient.mu);
        resilient.transitions.emplace_back(Seconds(t.at - start).count(), t);
      }));
  auto clients = MakeDemoClients(runtime, naive_settings, resilient_settings);
  if (clients == nullptr) return 1;
  naive.client = std::move(clients->naive);
  resilient.client = std::move(clients->outbound);

  const Duration own_work = scaled(kOwnWork);
  // A request arrives at a service: served in a free slot, or turned away.
  auto arrive = [&](Side& side, std::size_t id, double at, bool needs_dependency) {
    RequestRecord record;
    record.id = id;
    record.at = at;
    record.needs_dependency = needs_dependency;
    record.ended = at;
    if (side.slots.load() >= kSlots) {  // only this thread takes slots
      std::lock_guard lock(side.mu);
      side.requests.push_back(record);
      return;
    }
    ++side.slots;
    record.admitted = true;
    if (!needs_dependency) {
      record.ok = true;
      record.ended = at + Seconds(own_work).count();
      side.own_work_ends.push_back(start +
                                   std::chrono::duration_cast<Duration>(Seconds(record.ended)));
      std::lock_guard lock(side.mu);
      side.requests.push_back(record);
      return;
    }
    ++side.in_flight;
    http::Request request = http::Request::Get("/charges/42");
    request.Header("X-Client", side.name == "naive" ? "naive" : "outbound");
    request.Header("X-Call", std::to_string(id));  // which calls reached the dependency
    if (fault) request.context.baggage.push_back({"outbound-fault", *fault, ""});
    side.client->SendAsync(
        std::move(request),
        [&side, record, start, &clock](Result<http::Response> result, std::exception_ptr) mutable {
          record.ended = Seconds(clock.Now() - start).count();
          record.ok = result && result->status >= 200 && result->status < 300;
          if (!result) record.error = result.error().kind();
          {
            std::lock_guard lock(side.mu);
            side.requests.push_back(record);
          }
          --side.slots;
          --side.in_flight;
        });
  };
  // Requests without the dependency that are done free their slots.
  auto finish_own_work = [&](Side& side, TimePoint now) {
    while (!side.own_work_ends.empty() && side.own_work_ends.front() <= now) {
      side.own_work_ends.pop_front();
      --side.slots;
    }
  };

  // The load: the same requests, at the same instants, to both services;
  // each needs the dependency or not as a fair coin says, from a fixed seed
  // (a strict alternation would let a service with one free slot serve
  // every other request and turn away every call).
  std::mt19937 mix(20240906);
  bool tty = isatty(STDOUT_FILENO) != 0;
  const Duration interval = std::chrono::duration_cast<Duration>(Seconds(1.0 / rps));
  std::size_t n = 0;
  int last_report = -1;
  auto progress = [&](double at) {
    auto line = [&](Side& side) {
      std::lock_guard lock(side.mu);
      // The other requests done by now (at 0 s, none: "–").
      int other = 0, served = 0;
      for (const RequestRecord& r : side.requests) {
        if (r.needs_dependency || r.ended > at) continue;
        ++other;
        served += r.ok ? 1 : 0;
      }
      return side.name + " served " + OrNothing(Ratio(served, other), Percent) +
             " of other requests, " + std::to_string(side.slots.load()) + " slots busy";
    };
    std::string status = "[" + std::string(kPhaseNames[PhaseAt(at / run_seconds)]) + "] " +
                         Fixed(at, 0) + "s  " + line(naive) + " | " + line(resilient) +
                         ", breaker " +
                         std::string(circuit::ToString(resilient.client->breaker_state()));
    if (tty) {
      std::cout << "\r\033[K" << status << std::flush;
    } else {
      std::cout << status << "\n";
    }
  };
  for (;;) {
    TimePoint when = start + interval * static_cast<Duration::rep>(n);
    double at = Seconds(when - start).count();
    if (at >= run_seconds) break;
    SleepUntil(clock, when);
    bool needs_dependency = (mix() & 1) != 0;
    for (Side* side : {&naive, &resilient}) {
      finish_own_work(*side, clock.Now());
      side->slot_samples.emplace_back(at, side->slots.load());
      arrive(*side, n, at, needs_dependency);
    }
    ++n;
    int second = static_cast<int>(at);
    if (second != last_report) {
      last_report = second;
      progress(at);
    }
  }
  // Every call ends within its Timeout; wait for the last ones.
  while (naive.in_flight > 0 || resilient.in_flight > 0) {
    SleepUntil(clock, clock.Now() + milliseconds(20));
  }
  double end_seconds = std::max(run_seconds, Seconds(clock.Now() - start).count());
  if (tty) std::cout << "\n";
  naive.client.reset();
  resilient.client.reset();
  (*server)->Stop();

  // The table.
  auto phase_bounds = [&](int p) {
    return std::pair{kPhaseStart[p] * run_seconds,
                     (p < 3 ? kPhaseStart[p + 1] : 1.0) * run_seconds};
  };
  const double healed_at = kPhaseStart[kRecovered] * run_seconds;
  nlohmann::json report;
  report["seconds"] = run_seconds;
  report["rps"] = rps;
  report["slots"] = kSlots;
  report["healed_at_seconds"] = healed_at;
  report["slow_call_ms"] = Seconds(scaled(kSlowCall)).count() * 1000;
  for (Side* side : {&naive, &resilient}) {
    std::lock_guard lock(side->mu);
    nlohmann::json j;
    j["all"] = Summarize(*side, 0, run_seconds);
    for (int p = 0; p < 4; ++p) {
      auto [from, to] = phase_bounds(p);
      j["phases"][kPhaseNames[p]] = Summarize(*side, from, to);
    }
    const auto seconds = static_cast<std::size_t>(std::ceil(end_seconds));
    std::vector<int> arriving(seconds), served(seconds), succeeded(seconds), sent(seconds);
    for (const RequestRecord& r : side->requests) {
      if (static_cast<std::size_t>(r.at) < seconds) ++arriving[static_cast<std::size_t>(r.at)];
      auto e = static_cast<std::size_t>(r.ended);
      if (r.ok && e < seconds) {
        ++served[e];
        succeeded[e] += r.needs_dependency ? 1 : 0;
      }
    }
    for (double at : side->attempt_times) {
      if (static_cast<std::size_t>(at) < seconds) ++sent[static_cast<std::size_t>(at)];
    }
    j["requests_arriving_per_second"] = arriving;
    j["requests_served_per_second_by_end"] = served;
    j["dependency_successes_per_second_by_end"] = succeeded;
    j["attempts_at_dependency_per_second"] = sent;
    report["clients"][side->name] = j;
  }
  std::optional<double> closed_at, opened_at;
  int reopened = 0;
  {
    std::lock_guard lock(resilient.mu);
    nlohmann::json transitions = nlohmann::json::array();
    for (const auto& [at, t] : resilient.transitions) {
      transitions.push_back({{"at_seconds", at},
                             {"from", circuit::ToString(t.from)},
                             {"to", circuit::ToString(t.to)},
                             {"open_for_ms", Seconds(t.open_for).count() * 1000}});
      if (t.to == circuit::State::kOpen && t.from == circuit::State::kClosed && !opened_at)
        opened_at = at;
      if (t.to == circuit::State::kOpen && t.from == circuit::State::kHalfOpen) ++reopened;
      if (t.to == circuit::State::kClosed && at >= healed_at && !closed_at) closed_at = at;
    }
    report["clients"]["outbound"]["transitions"] = transitions;
    report["clients"]["outbound"]["retry_decisions"] = resilient.decisions;
  }
  report["clients"]["outbound"]["closed_after_heal_seconds"] =
      closed_at ? nlohmann::json(*closed_at - healed_at) : nlohmann::json(nullptr);

  const auto& nj = report["clients"]["naive"];
  const auto& oj = report["clients"]["outbound"];
  constexpr std::size_t kLabel = 50, kColumn = 16;
  std::cout << "\n" << Pad("", kLabel + 2) << Pad("naive", kColumn) << "outbound\n";
  auto row = [&](const std::string& label, const std::string& a, const std::string& b) {
    std::cout << "  " << Pad(label, kLabel) << Pad(a, kColumn) << b << "\n";
  };
  auto by_phase = [&](const char* key, auto format, const std::string& indent = "  ") {
    for (const char* phase : kPhaseNames) {
      row(indent + phase, format(nj["phases"][phase][key]), format(oj["phases"][phase][key]));
    }
  };
  auto pct = [](const nlohmann::json& v) { return OrNothing(v, Percent); };
  auto ms = [](const nlohmann::json& v) {
    return OrNothing(v, [](double x) { return Millis(x); });  // one of two Millis in a unity build
  };
  auto ratio = [](const nlohmann::json& v) {
    return OrNothing(v, [](double x) { return Fixed(x, 3); });
  };
  auto whole = [](const nlohmann::json& v) { return std::to_string(v.get<int>()); };
  auto slots = [&](const std::string& phase) {
    return [phase](const nlohmann::json& side) {
      const auto& p = side["phases"][phase];
      if (p["slots_mean"].is_null()) return std::string(kNothing);
      return Fixed(p["slots_mean"].get<double>(), 0) + " / " +
             std::to_string(p["slots_max"].get<int>());
    };
  };
  row("your service's other requests still served", pct(nj["all"]["other_served"]),
      pct(oj["all"]["other_served"]));
  by_phase("other_served", pct);
  row("callers waited on failed dependency calls", "", "");
  row("  p50", ms(nj["all"]["time_to_fail_p50_ms"]), ms(oj["all"]["time_to_fail_p50_ms"]));
  row("  p99", ms(nj["all"]["time_to_fail_p99_ms"]), ms(oj["all"]["time_to_fail_p99_ms"]));
  row("  caller-seconds in all",
      Fixed(nj["all"]["caller_seconds_waited_on_failures"].get<double>(), 0),
      Fixed(oj["all"]["caller_seconds_waited_on_failures"].get<double>(), 0));
  const char* hanging = kPhaseNames[kHanging];
  row("load on the sick dependency (while hanging)", "", "");
  row("  attempts per call", ratio(nj["phases"][hanging]["attempts_per_call"]),
      ratio(oj["phases"][hanging]["attempts_per_call"]));
  row("  attempts per second", Fixed(nj["phases"][hanging]["attempts_per_second"].get<double>(), 1),
      Fixed(oj["phases"][hanging]["attempts_per_second"].get<double>(), 1));
  row("requests needing the dependency served", pct(nj["all"]["dependency_served"]),
      pct(oj["all"]["dependency_served"]));
  by_phase("dependency_served", pct);
  // The calls each service made (a slot was free), split by whether they
  // reached the dependency: a call the breaker failed at once sent nothing,
  // so it says nothing of the dependency's health (the naive service's
  // calls all reach it, and its service turned away what it could not make).
  row("dependency calls made (a slot was free)", whole(nj["all"]["calls"]),
      whole(oj["all"]["calls"]));
  auto unsent = [&](const nlohmann::json& side) {
    return whole(side["all"]["failed_by_breaker_unsent"]) + " (" +
           pct(Ratio(side["all"]["failed_by_breaker_unsent"].get<int>(),
                     side["all"]["calls"].get<int>())) +
           ")";
  };
  row("  failed at once by the breaker, nothing sent", std::string(kNothing) + " (no breaker)",
      unsent(oj));
  row("  reached the dependency", whole(nj["all"]["calls_reached_dependency"]),
      whole(oj["all"]["calls_reached_dependency"]));
  row("calls that reached the dependency and succeeded", pct(nj["all"]["reached_success_rate"]),
      pct(oj["all"]["reached_success_rate"]));
  by_phase("reached_success_rate", pct);
  row("attempts at the dependency per call made", ratio(nj["all"]["attempts_per_call"]),
      ratio(oj["all"]["attempts_per_call"]));
  by_phase("attempts_per_call", ratio);
  row("slots in use, mean / max of " + std::to_string(kSlots), "", "");
  for (const char* phase : kPhaseNames) {
    row(std::string("  ") + phase, slots(phase)(nj), slots(phase)(oj));
  }
  row("requests turned away (every slot busy)", whole(nj["all"]["turned_away"]),
      whole(oj["all"]["turned_away"]));
  std::string breaker = "never opened";
  if (opened_at) {
    breaker = "opened at " + Fixed(*opened_at, 1) + "s, reopened " + std::to_string(reopened) +
              "x after failed probes";
  }
  row("breaker", "(no breaker)", breaker);
  row("  closed after the dependency healed", "",
      closed_at ? Fixed(*closed_at - healed_at, 2) + " s (at " + Fixed(*closed_at, 1) + "s)"
                : "not closed");
  std::string decisions;
  for (const auto& [kind, count] : oj["retry_decisions"].items()) {
    decisions +=
        std::string(decisions.empty() ? "" : ", ") + kind + " " + std::to_string(count.get<int>());
  }
  row("retry decisions", "(no retries)", decisions);
  // The settings as this run had them: the library's defaults at 30 s,
  // every duration scaled by N/30 at another length.
  auto span = [](Duration d) { return Millis(Seconds(d).count() * 1000); };
  std::ostringstream length;  // 6, or 4.5: as given
  length << run_seconds;
  const http::Settings& o = resilient_settings;
  std::cout << "\n"
            << kNothing << ": nothing to measure there (no call, no failure, no sample).\n"
            << "outbound's client: the library's defaults"
            << (scale == 1 ? std::string(" (--seconds N scales every duration by N/30)")
                           : ", every duration scaled by " + length.str() + "/30 (--seconds " +
                                 length.str() + ")")
            << ":\n  Timeout " << span(o.timeout) << ", AttemptTimeout " << span(o.attempt_timeout)
            << ", " << o.max_attempts << " attempts, backoff " << span(o.backoff_base) << " up to "
            << span(o.backoff_max) << ",\n  the breaker open " << span(o.breaker.initial_open_for)
            << " at first, doubling up to " << span(o.breaker.open_for)
            << "; plus breaker.slow_call " << span(o.breaker.slow_call) << ".\n"
            << "naive client: one attempt, no breaker, Timeout " << span(naive_settings.timeout)
            << ".\n";

  std::string svg;
  {
    std::lock_guard a(naive.mu), b(resilient.mu);
    svg = Svg(naive, resilient, run_seconds, end_seconds, rps, healed_at, closed_at);
  }
  if (!WriteFileOrSay(svg_path, svg)) return kExitWriteError;
  std::cout << "timeline: " << svg_path << "\n";
  if (!json_path.empty()) {
    if (!WriteFileOrSay(json_path, report.dump(2) + "\n")) return kExitWriteError;
    std::cout << "series: " << json_path << "\n";
  }
  return kExitOk;
}

}  // namespace outbound::tool
