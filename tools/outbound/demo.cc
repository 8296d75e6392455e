// `outbound demo`: an embedded flaky dependency (the test kit's FakeServer,
// over TLS with its own TestCA, no network needed) called at a steady rate by
// two clients side by side: a naive one (one attempt, no breaker, a plain
// timeout) and outbound's default client. The dependency follows a script:
//
//   healthy 20% | 503 storm 20%: 1 request in 10 answered 503, Retry-After: 1
//   (one backend of ten is down) | hanging 40%: no answer at all, longer than
//   any timeout | healthy again 20%
//
// Everything is measured, nothing fixed: success rates, latencies, the
// attempts the dependency received per call, the breaker's transitions and
// the retry decisions. --seconds compresses the script and the clients'
// durations together (Timeout, AttemptTimeout, backoff, OpenFor), so a short
// run tells the same story as the default 30 s one.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.h"
#include "common.h"
#include "outbound/http/client.h"
#include "outbound/testing/fake_server.h"
#include "outbound/testing/network_map.h"
#include "outbound/testing/test_ca.h"

namespace outbound::tool {
namespace {

using std::chrono::duration;
using std::chrono::milliseconds;
using Seconds = duration<double>;

constexpr const char* kHelp =
    R"(usage: outbound demo [--seconds N] [--rps R] [--svg FILE] [--json FILE]

Starts an embedded dependency on loopback (TLS, a certificate from a CA made
for this run) that is healthy, then answers one request in ten with 503 and
Retry-After: 1, then hangs, then is healthy again; and calls it at a steady
rate through two clients at once: a naive one (one attempt, no breaker, the
same overall timeout) and outbound's default client. Prints a live progress
line, then a side-by-side table, and writes an SVG timeline.

options:
  --seconds N   length of the run (default 30); the script and the clients'
                durations are scaled by N/30, so short runs show the same story
  --rps R       calls per second, for each client (default 200)
  --svg FILE    where to write the timeline (default outbound-demo.svg)
  --json FILE   where to write the raw series and summary
)";

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

struct CallRecord {
  double start = 0;  // seconds since the run began
  double latency = 0;
  bool ok = false;
  std::optional<ErrorKind> error;
};

// What one client did, as seen by the caller and by the dependency.
struct Side {
  std::string name;
  std::unique_ptr<http::Client> client;
  std::mutex mu;
  std::vector<CallRecord> calls;
  std::atomic<int> in_flight{0};
  std::vector<double> attempt_times;        // when the dependency got each attempt
  int attempts_in_phase[4] = {0, 0, 0, 0};  // counted by the dependency
  std::map<std::string, int> decisions;
  std::vector<std::pair<double, circuit::Transition>> transitions;
};

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  auto index = static_cast<std::size_t>(std::ceil(p * static_cast<double>(values.size()))) - 1;
  return values[std::min(index, values.size() - 1)];
}

struct Summary {
  double success_rate = 0;
  double prompt_success_rate = 0;  // answered OK within the prompt limit
  double p50_ms = 0, p99_ms = 0, max_ms = 0;
  double failure_p50_ms = 0;  // how long a failed call kept its caller
  double attempts_per_call = 0;
  int calls = 0;
  int rejected = 0;
};

// The calls that started in [from, to) seconds, and `sent` attempts that
// reached the dependency in that time.
Summary Summarize(const std::vector<CallRecord>& calls, double from, double to, int sent,
                  double prompt_seconds) {
  Summary s;
  std::vector<double> latencies, failure_latencies;
  int ok = 0, prompt = 0;
  for (const CallRecord& c : calls) {
    if (c.start < from || c.start >= to) continue;
    ++s.calls;
    ok += c.ok ? 1 : 0;
    prompt += c.ok && c.latency <= prompt_seconds ? 1 : 0;
    s.rejected += c.error == ErrorKind::kRejected ? 1 : 0;
    latencies.push_back(c.latency * 1000);
    if (!c.ok) failure_latencies.push_back(c.latency * 1000);
  }
  s.failure_p50_ms = Percentile(failure_latencies, 0.50);
  s.success_rate = s.calls ? static_cast<double>(ok) / s.calls : 0;
  s.prompt_success_rate = s.calls ? static_cast<double>(prompt) / s.calls : 0;
  s.p50_ms = Percentile(latencies, 0.50);
  s.p99_ms = Percentile(latencies, 0.99);
  s.max_ms = latencies.empty() ? 0 : *std::max_element(latencies.begin(), latencies.end());
  s.attempts_per_call = s.calls ? static_cast<double>(sent) / s.calls : 0;
  return s;
}

nlohmann::json ToJson(const Summary& s) {
  return {{"calls", s.calls},
          {"success_rate", s.success_rate},
          {"p50_ms", s.p50_ms},
          {"p99_ms", s.p99_ms},
          {"max_ms", s.max_ms},
          {"attempts_per_call", s.attempts_per_call},
          {"rejected", s.rejected},
          {"prompt_success_rate", s.prompt_success_rate},
          {"failure_p50_ms", s.failure_p50_ms}};
}

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

// The timeline, in 60 buckets: for each client, calls, successes and
// attempts at the dependency (per second); the phases as bands; the
// breaker's state as a band drawn from its transitions.
std::string Svg(const Side& naive, const Side& resilient, double run_seconds, int rps) {
  constexpr int kBuckets = 60;
  const double bucket = run_seconds / kBuckets;
  const int width = 960, panel = 200, left = 90, right = 20, top = 40;
  const double plot_width = width - left - right;
  auto x_of = [&](double t) { return left + t / run_seconds * plot_width; };
  const double y_max = rps * 1.5;
  std::ostringstream svg;
  svg << R"(<svg xmlns="http://www.w3.org/2000/svg" width=")" << width << R"(" height=")"
      << top + 2 * panel + 110 << R"(" font-family="sans-serif" font-size="12">)"
      << "\n";
  svg << R"(<rect width="100%" height="100%" fill="white"/>)"
      << "\n";
  svg << R"(<text x=")" << left << R"(" y="24" font-size="15" font-weight="bold">)"
      << "outbound demo: one flaky dependency, two clients, " << rps << " calls/s each, "
      << Fixed(run_seconds, 0) << " s</text>\n";
  const char* phase_fill[] = {"#eef7ee", "#fdf0e0", "#fbe3e3", "#eef7ee"};
  for (int p = 0; p < 4; ++p) {
    double x0 = x_of(kPhaseStart[p] * run_seconds);
    double x1 = x_of((p < 3 ? kPhaseStart[p + 1] : 1.0) * run_seconds);
    svg << R"(<rect x=")" << x0 << R"(" y=")" << top << R"(" width=")" << x1 - x0 << R"(" height=")"
        << 2 * panel << R"(" fill=")" << phase_fill[p] << R"("/>)"
        << R"(<text x=")" << x0 + 4 << R"(" y=")" << top + 14 << R"(" fill="#555">)"
        << kPhaseNames[p] << "</text>\n";
  }
  auto panel_of = [&](const Side& side, int row) {
    double base = top + (row + 1) * panel - 10;
    double height = panel - 40;
    std::vector<double> calls(kBuckets), ok(kBuckets), sent(kBuckets);
    for (const CallRecord& c : side.calls) {
      auto b = static_cast<std::size_t>(c.start / bucket);
      if (b >= calls.size()) continue;
      calls[b] += 1 / bucket;
      ok[b] += c.ok ? 1 / bucket : 0;
    }
    for (double t : side.attempt_times) {
      auto b = static_cast<std::size_t>(t / bucket);
      if (b < sent.size()) sent[b] += 1 / bucket;
    }
    auto y_of = [&](double v) { return base - std::min(1.0, v / y_max) * height; };
    auto line = [&](const std::vector<double>& values, const char* color, const char* extra) {
      svg << R"(<polyline fill="none" stroke=")" << color << R"(" stroke-width="2" )" << extra
          << R"( points=")";
      for (std::size_t b = 0; b < values.size(); ++b) {
        svg << x_of((static_cast<double>(b) + 0.5) * bucket) << "," << y_of(values[b]) << " ";
      }
      svg << R"("/>)"
          << "\n";
    };
    line(calls, "#777777", R"(stroke-dasharray="5 3")");
    line(sent, "#c03030", "");
    line(ok, "#2a8a2a", "");
    svg << R"(<text x="8" y=")" << base - height / 2 << R"(" font-weight="bold">)" << side.name
        << "</text>\n";
    for (double v : {0.0, static_cast<double>(rps)}) {
      svg << R"(<text x=")" << left - 6 << R"(" y=")" << y_of(v) + 4
          << R"(" text-anchor="end" fill="#555">)" << v << "/s</text>";
      svg << R"(<line x1=")" << left << R"(" y1=")" << y_of(v) << R"(" x2=")" << width - right
          << R"(" y2=")" << y_of(v) << R"(" stroke=")" << (v == 0 ? "#999" : "#ddd") << R"("/>)"
          << "\n";
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
    segment(std::min(at, run_seconds));
    from = std::min(at, run_seconds);
    state = static_cast<int>(t.to);
  }
  segment(run_seconds);
  svg << "\n"
      << R"(<text x="8" y=")" << band + 11 << R"(">breaker</text>)"
      << "\n";
  for (int tick = 0; tick <= 10; ++tick) {
    double t = run_seconds * tick / 10;
    svg << R"(<text x=")" << x_of(t) << R"(" y=")" << band + 32
        << R"(" text-anchor="middle" fill="#555">)" << Fixed(t, t < 10 ? 1 : 0) << "s</text>";
  }
  double legend = band + 56;
  svg << "\n"
      << R"(<text x=")" << left << R"(" y=")" << legend << R"(">)"
      << R"(<tspan fill="#777">- - calls/s</tspan>   <tspan fill="#2a8a2a">successes/s</tspan>   )"
      << R"(<tspan fill="#c03030">attempts/s at the dependency</tspan>   )"
      << R"(breaker: <tspan fill="#4caf50">closed</tspan> <tspan fill="#e53935">open</tspan> )"
      << R"(<tspan fill="#c9a000">half-open</tspan></text>)"
      << "\n</svg>\n";
  return svg.str();
}

}  // namespace

int RunDemo(const std::vector<std::string>& args) {
  double run_seconds = 30;
  int rps = 200;
  std::string svg_path = "outbound-demo.svg", json_path;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    bool has_value = i + 1 < args.size();
    try {
      if (a == "-h" || a == "--help") {
        std::cout << kHelp;
        return kExitOk;
      } else if (a == "--seconds" && has_value) {
        run_seconds = std::stod(args[++i]);
      } else if (a == "--rps" && has_value) {
        rps = std::stoi(args[++i]);
      } else if (a == "--svg" && has_value) {
        svg_path = args[++i];
      } else if (a == "--json" && has_value) {
        json_path = args[++i];
      } else {
        return Usage("demo", "unknown option " + a);
      }
    } catch (...) {
      return Usage("demo", a + " needs a number");
    }
  }
  if (run_seconds < 3 || run_seconds > 3600 || rps < 1 || rps > 5000) {
    return Usage("demo", "--seconds must be 3 to 3600 and --rps 1 to 5000");
  }
  const double scale = run_seconds / 30;
  auto scaled = [&](Duration d) {
    return Duration(static_cast<Duration::rep>(static_cast<double>(d.count()) * scale));
  };
  const int seconds = static_cast<int>(std::ceil(run_seconds));
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
    Phase phase = PhaseAt(elapsed / run_seconds);
    {
      std::lock_guard lock(server_mu);
      Side& side = is_naive ? naive : resilient;
      side.attempt_times.push_back(elapsed);
      ++side.attempts_in_phase[phase];
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
  http::Settings base = http::DefaultSettings();
  base.base_url = "https://payments:8443";
  base.tls = http::TlsSettings{.root_pem = ca.pem()};
  base.timeout = scaled(base.timeout);
  base.attempt_timeout = scaled(base.attempt_timeout);
  base.backoff_base = scaled(base.backoff_base);
  base.backoff_max = scaled(base.backoff_max);
  base.breaker.open_for = scaled(base.breaker.open_for);
  base.breaker.probe_timeout = scaled(base.breaker.probe_timeout);

  http::Settings naive_settings = base;
  naive_settings.max_attempts = 1;
  naive_settings.attempt_timeout = base.timeout;  // a plain timeout, nothing per attempt
  naive_settings.breaker_policy.trip = [](const circuit::Counts&) { return false; };

  http::Settings resilient_settings = base;
  resilient_settings.observers.push_back(http::ObserveAttempts([&](const http::AttemptRecord& r) {
    std::lock_guard lock(resilient.mu);
    if (r.decision) ++resilient.decisions[std::string(retry::ToString(*r.decision))];
  }));
  resilient_settings.observers.push_back(
      http::ObserveTransitions([&](const circuit::Transition& t) {
        std::lock_guard lock(resilient.mu);
        resilient.transitions.emplace_back(Seconds(t.at - start).count(), t);
      }));
  auto made_naive = http::Client::Create(runtime, naive_settings);
  auto made_resilient = http::Client::Create(runtime, resilient_settings);
  if (!made_naive || !made_resilient) {
    std::cerr << "outbound demo: " << (made_naive ? made_resilient : made_naive).error().message()
              << "\n";
    return 1;
  }
  naive.client = std::move(*made_naive);
  resilient.client = std::move(*made_resilient);

  auto call = [&](Side& side, double at) {
    ++side.in_flight;
    http::Request request = http::Request::Get("/charges/42");
    request.Header("X-Client", side.name == "naive" ? "naive" : "outbound");
    TimePoint began = clock.Now();
    side.client->SendAsync(
        std::move(request),
        [&side, at, began, &clock](Result<http::Response> result, std::exception_ptr) {
          CallRecord record;
          record.start = at;
          record.latency = Seconds(clock.Now() - began).count();
          record.ok = result && result->status >= 200 && result->status < 300;
          if (!result) record.error = result.error().kind();
          {
            std::lock_guard lock(side.mu);
            side.calls.push_back(record);
          }
          --side.in_flight;
        });
  };

  // The load: the same calls, at the same instants, through both clients.
  bool tty = isatty(STDOUT_FILENO) != 0;
  const Duration interval = std::chrono::duration_cast<Duration>(Seconds(1.0 / rps));
  std::size_t n = 0;
  int last_report = -1;
  for (;;) {
    TimePoint when = start + interval * static_cast<Duration::rep>(n);
    double at = Seconds(when - start).count();
    if (at >= run_seconds) break;
    SleepUntil(clock, when);
    call(naive, at);
    call(resilient, at);
    ++n;
    int second = static_cast<int>(at);
    if (second != last_report) {
      last_report = second;
      auto line = [&](Side& side) {
        std::lock_guard lock(side.mu);
        int ok = 0;
        for (const CallRecord& c : side.calls) ok += c.ok ? 1 : 0;
        return side.name + " " + std::to_string(ok) + "/" + std::to_string(side.calls.size()) +
               " ok";
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
    }
  }
  // Every call ends within its Timeout; wait for the last ones.
  while (naive.in_flight > 0 || resilient.in_flight > 0) {
    SleepUntil(clock, clock.Now() + milliseconds(20));
  }
  if (tty) std::cout << "\n";
  naive.client.reset();
  resilient.client.reset();
  (*server)->Stop();

  // The table.
  auto phase_bounds = [&](int p) {
    return std::pair{kPhaseStart[p] * run_seconds,
                     (p < 3 ? kPhaseStart[p + 1] : 1.0) * run_seconds};
  };
  // A caller rarely waits long: an answer after a second (scaled) is as
  // good as none to most of them.
  const double prompt_seconds = scale;
  nlohmann::json report;
  report["seconds"] = run_seconds;
  report["prompt_seconds"] = prompt_seconds;
  report["rps"] = rps;
  std::cout << "\n"
            << std::left << std::setw(34) << "" << std::setw(14) << "naive"
            << "outbound\n";
  auto row = [&](const std::string& label, const std::string& a, const std::string& b) {
    std::cout << "  " << std::left << std::setw(32) << label << std::setw(14) << a << b << "\n";
  };
  for (Side* side : {&naive, &resilient}) {
    std::lock_guard lock(side->mu);
    nlohmann::json j;
    int sent = 0;
    for (int p = 0; p < 4; ++p) sent += side->attempts_in_phase[p];
    j["all"] = ToJson(Summarize(side->calls, 0, run_seconds, sent, prompt_seconds));
    for (int p = 0; p < 4; ++p) {
      auto [from, to] = phase_bounds(p);
      j["phases"][kPhaseNames[p]] =
          ToJson(Summarize(side->calls, from, to, side->attempts_in_phase[p], prompt_seconds));
    }
    std::vector<int> calls_per_second(static_cast<std::size_t>(seconds));
    std::vector<int> ok_per_second(calls_per_second.size());
    std::vector<int> sent_per_second(calls_per_second.size());
    for (const CallRecord& c : side->calls) {
      auto t = static_cast<std::size_t>(c.start);
      if (t >= calls_per_second.size()) continue;
      ++calls_per_second[t];
      ok_per_second[t] += c.ok;
    }
    for (double at : side->attempt_times) {
      auto t = static_cast<std::size_t>(at);
      if (t < sent_per_second.size()) ++sent_per_second[t];
    }
    j["calls_per_second"] = calls_per_second;
    j["successes_per_second"] = ok_per_second;
    j["attempts_at_dependency_per_second"] = sent_per_second;
    report["clients"][side->name] = j;
  }
  {
    std::lock_guard lock(resilient.mu);
    nlohmann::json transitions = nlohmann::json::array();
    for (const auto& [at, t] : resilient.transitions) {
      transitions.push_back({{"at_seconds", at},
                             {"from", circuit::ToString(t.from)},
                             {"to", circuit::ToString(t.to)}});
    }
    report["clients"]["outbound"]["transitions"] = transitions;
    report["clients"]["outbound"]["retry_decisions"] = resilient.decisions;
  }
  const auto& nj = report["clients"]["naive"];
  const auto& oj = report["clients"]["outbound"];
  auto both = [&](const std::string& label, const char* key, auto format) {
    row(label, format(nj["all"][key].template get<double>()),
        format(oj["all"][key].template get<double>()));
  };
  auto ms = [](double v) { return Fixed(v, v < 10 ? 1 : 0) + " ms"; };
  both("success rate", "success_rate", Percent);
  for (int p = 0; p < 4; ++p) {
    row(std::string("  during ") + kPhaseNames[p],
        Percent(nj["phases"][kPhaseNames[p]]["success_rate"].get<double>()),
        Percent(oj["phases"][kPhaseNames[p]]["success_rate"].get<double>()));
  }
  both("answered OK within " + Fixed(prompt_seconds, prompt_seconds < 1 ? 1 : 0) + " s",
       "prompt_success_rate", Percent);
  for (int p = 1; p < 4; ++p) {
    row(std::string("  during ") + kPhaseNames[p],
        Percent(nj["phases"][kPhaseNames[p]]["prompt_success_rate"].get<double>()),
        Percent(oj["phases"][kPhaseNames[p]]["prompt_success_rate"].get<double>()));
  }
  both("p50 latency", "p50_ms", ms);
  both("p99 latency", "p99_ms", ms);
  both("max latency", "max_ms", ms);
  both("failed calls: p50 time to fail", "failure_p50_ms", ms);
  both("attempts at dependency / call", "attempts_per_call", [](double v) { return Fixed(v, 2); });
  for (int p = 1; p < 3; ++p) {
    row(std::string("  during ") + kPhaseNames[p],
        Fixed(nj["phases"][kPhaseNames[p]]["attempts_per_call"].get<double>(), 2),
        Fixed(oj["phases"][kPhaseNames[p]]["attempts_per_call"].get<double>(), 2));
  }
  row("failed fast by the breaker", std::to_string(nj["all"]["rejected"].get<int>()),
      std::to_string(oj["all"]["rejected"].get<int>()));
  std::string transitions;
  for (const auto& t : oj["transitions"]) {
    transitions += std::string(transitions.empty() ? "" : ", ") + t["to"].get<std::string>() +
                   " at " + Fixed(t["at_seconds"].get<double>(), 1) + "s";
  }
  row("breaker transitions", "(no breaker)", transitions.empty() ? "none" : transitions);
  std::string decisions;
  for (const auto& [kind, count] : oj["retry_decisions"].items()) {
    decisions +=
        std::string(decisions.empty() ? "" : ", ") + kind + " " + std::to_string(count.get<int>());
  }
  row("retry decisions", "(no retries)", decisions);

  {
    std::lock_guard a(naive.mu), b(resilient.mu);
    std::ofstream(svg_path) << Svg(naive, resilient, run_seconds, rps);
  }
  std::cout << "\ntimeline: " << svg_path << "\n";
  if (!json_path.empty()) {
    std::ofstream(json_path) << report.dump(2) << "\n";
    std::cout << "series: " << json_path << "\n";
  }
  return kExitOk;
}

}  // namespace outbound::tool
