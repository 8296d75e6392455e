// SPDX-License-Identifier: Apache-2.0
// `outbound bench`: the client as a load generator. N calls, C in flight,
// through one http::Client with settings from the OUTBOUND_* variables.
#include "bench.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "grpc.h"
#include "outbound/config/resolver.h"
#include "outbound/http/client.h"
#include "outbound/telemetry/metric_store.h"
#include "outbound/telemetry/prometheus.h"

namespace outbound::tool {
namespace {

constexpr const char* kBenchHelp = R"(usage: outbound bench [options] URL

Sends N calls to URL, C at a time, through one outbound client (retries,
budget, breaker, timeouts all on), like h2load but through the resilient
client. Settings come from the OUTBOUND_* variables (see outbound call --help).
A grpc or grpcs URL, grpc://HOST:PORT/package.Service/Method, sends N unary
gRPC calls of that method through one rpc::Client, each with the serialised
message -d gives (-d @req.bin), and prints the same figures, errors by
status (see "gRPC" in outbound call --help); -H is every call's metadata,
and -X does not apply.

options:
  -n N                    calls to make (default 10000)
  -c C                    calls in flight at once (default 64)
  -X, --method METHOD     the request method (default GET)
  -H, --header 'K: V'     a request header; repeatable
  -d, --data DATA         the request body; @FILE reads it from FILE, @- from
                          stdin
  --connect-to H:P:A:P    dial ADDR:PORT for HOST:PORT
  --json FILE             also write the figures as JSON ("-" for stdout)
  --rss-every K           sample this process's RSS every K calls (in the JSON)
  --telemetry             record a span per attempt (counted, then dropped) and
                          every metric, served to Prometheus on a loopback port:
                          what telemetry costs

prints: calls/s, latency p50/p90/p99/max, errors by kind, attempts per call,
breaker transitions, CPU time per call (user+sys of this process), peak RSS.
Exits 0 when every call succeeded, 1 when some failed, 2 on a usage error,
23 when the figures could not be written, 78 on a bad variable.
)";

long PeakRssKb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

}  // namespace

double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

long RssKb() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

int ReportBench(BenchFigures& f, const std::string& json_path) {
  std::vector<double>& latencies_ms = f.latencies_ms;
  std::sort(latencies_ms.begin(), latencies_ms.end());
  auto pct = [&](double p) {
    auto index = static_cast<std::size_t>(p * static_cast<double>(latencies_ms.size() - 1));
    return latencies_ms[index];
  };
  auto n = static_cast<double>(f.calls);
  nlohmann::json report = {
      {"calls", f.calls},
      {"concurrency", f.concurrency},
      {"seconds", f.seconds},
      {"calls_per_second", n / f.seconds},
      {"ok", f.ok},
      {"errors", f.errors},
      {"latency_ms",
       {{"p50", pct(0.50)}, {"p90", pct(0.90)}, {"p99", pct(0.99)}, {"max", latencies_ms.back()}}},
      {"attempts_per_call", static_cast<double>(f.attempts) / n},
      {"breaker_transitions", f.transitions},
      {"telemetry", f.telemetry},
      {"spans", f.spans},
      {"cpu_seconds", f.cpu_seconds},
      {"cpu_us_per_call", f.cpu_seconds * 1e6 / n},
      {"peak_rss_kb", PeakRssKb()},
      {"rss_kb_samples", f.rss_samples}};
  std::cout << std::fixed << std::setprecision(2) << "calls: " << f.calls << " (" << f.concurrency
            << " in flight) in " << f.seconds << " s: " << n / f.seconds << " calls/s\n"
            << "latency ms: p50 " << pct(0.5) << "  p90 " << pct(0.9) << "  p99 " << pct(0.99)
            << "  max " << latencies_ms.back() << "\n"
            << "ok: " << f.ok
            << "  errors: " << (f.errors.empty() ? "none" : nlohmann::json(f.errors).dump())
            << "\nattempts per call: " << static_cast<double>(f.attempts) / n
            << "  breaker transitions: " << f.transitions << "\n"
            << "cpu: " << f.cpu_seconds << " s, " << f.cpu_seconds * 1e6 / n
            << " us/call  peak rss: " << PeakRssKb() / 1024 << " MiB\n";
  if (json_path == "-") std::cout << report.dump() << "\n";
  bool file_written =
      json_path == "-" || json_path.empty() || WriteFileOrSay(json_path, report.dump(2) + "\n");
  // The figures are the run's result: ones that could not be written are a
  // failure (a full disk, a closed pipe), as for `call`.
  if (!std::cout.flush()) std::cerr << "outbound: cannot write the output\n";
  if (!std::cout || !file_written) return kExitWriteError;
  return f.errors.empty() ? kExitOk : 1;
}

int RunBench(const std::vector<std::string>& args) {
  long n = 10000;
  int concurrency = 64;
  http::Request proto;
  ConnectToNetwork network;
  std::string url, json_path;
  long rss_every = 0;
  bool with_telemetry = false;
  std::vector<std::string> http_only;  // given, and of no use to a gRPC call
  bool method_given = false;           // -X or --method
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    bool has_value = i + 1 < args.size();
    if (a == "-h" || a == "--help") {
      std::cout << kBenchHelp;
      return kExitOk;
    } else if (a == "-n" && has_value) {
      n = config::ParseInt(args[++i]).value_or(0);
    } else if (a == "-c" && has_value) {
      concurrency = config::ParseInt(args[++i]).value_or(0);
    } else if ((a == "-X" || a == "--method") && has_value) {
      proto.method = args[++i];
      method_given = true;
      http_only.push_back(a);
    } else if ((a == "-H" || a == "--header") && has_value) {
      if (!AddHeader(proto, args[++i])) return Usage("bench", "-H needs 'Name: value'");
    } else if ((a == "-d" || a == "--data") && has_value) {
      std::string problem;
      std::optional<std::string> data = ReadData(args[++i], &problem);
      if (!data) return Usage("bench", problem);
      proto.body = std::move(*data);
      if (!method_given) proto.method = "POST";  // as `call` does
    } else if (a == "--connect-to" && has_value) {
      if (!network.Add(args[++i])) return Usage("bench", "--connect-to needs HOST:PORT:ADDR:PORT");
    } else if (a == "--telemetry") {
      with_telemetry = true;
    } else if (a == "--rss-every" && has_value) {
      auto every = config::ParseInt(args[++i]);
      if (!every || *every < 0) return Usage("bench", "--rss-every needs a number of calls");
      rss_every = *every;
    } else if (a == "--json" && has_value) {
      json_path = args[++i];
    } else if (!a.empty() && a[0] == '-') {
      bool takes_value = a == "-n" || a == "-c" || a == "-X" || a == "--method" || a == "-H" ||
                         a == "--header" || a == "-d" || a == "--data" || a == "--connect-to" ||
                         a == "--rss-every" || a == "--json";
      return Usage("bench", takes_value ? a + " needs a value" : "unknown option " + a);
    } else if (url.empty()) {
      url = a;
    } else {
      return Usage("bench", "one URL only");
    }
  }
  if (url.empty()) return Usage("bench", "a URL is needed");
  // Each call's latency is kept: a bound the machine can hold.
  constexpr long kMostCalls = 100'000'000;
  if (n < 1 || n > kMostCalls || concurrency < 1 || concurrency > 100'000) {
    return Usage("bench", "-n must be 1 to 100000000 and -c 1 to 100000, whole numbers");
  }
  if (IsGrpcUrl(url)) {
    if (!http_only.empty()) {
      return Usage("bench", http_only.front() + " does not apply to a gRPC call");
    }
    std::string problem;
    std::optional<GrpcTarget> target = ParseGrpcUrl(url, &problem);
    if (!target) return Usage("bench", problem);
    Metadata metadata;
    for (auto& [name, value] : proto.headers) metadata.emplace(std::move(name), std::move(value));
    return RunGrpcBench({.url = url,
                         .target = std::move(*target),
                         .message = std::move(proto.body),
                         .metadata = std::move(metadata),
                         .network = &network,
                         .calls = n,
                         .concurrency = concurrency,
                         .rss_every = rss_every,
                         .telemetry = with_telemetry,
                         .json_path = json_path});
  }
  std::string origin = OriginOf(url);
  if (origin.empty()) return Usage("bench", "\"" + url + "\" is not an absolute URL");
  if (auto valid = http::CheckBaseUrl(origin); !valid) {
    return Usage("bench", "\"" + url + "\": " + valid.error().message());
  }
  std::optional<http::Settings> settings = SettingsFromEnvironment(origin);
  if (!settings) return kExitConfig;

  // What the calls share. The callbacks capture only a pointer to it (and
  // their start time), so the load generator itself allocates nothing per
  // call and its cost stays out of the client's figures.
  struct Run {
    std::mutex mu;
    std::condition_variable all_done;
    std::atomic<long> attempts{0}, transitions{0};
    http::Request proto;
    Clock* clock = nullptr;
    long n = 0, rss_every = 0;
    // Written in place, and touched now: the bench's own figures must not
    // show up as growth in the RSS samples.
    std::vector<double> latencies_ms;
    std::map<std::string, long> errors;
    std::vector<long> rss_samples;
    long started = 0, finished = 0, ok = 0;
    // Last: it goes first, waiting for its calls, while the rest is whole.
    std::unique_ptr<http::Client> client;

    void StartOne() {
      TimePoint began = clock->Now();
      client->SendAsync(
          proto, [run = this, began](const Result<http::Response>& result,
                                     const std::exception_ptr&) { run->Ended(began, result); });
    }

    void Ended(TimePoint began, const Result<http::Response>& result) {
      double ms = std::chrono::duration<double, std::milli>(clock->Now() - began).count();
      // The attempts sent, as the gRPC bench counts them: a call the
      // breaker turned away sent none.
      attempts += result ? result->attempts : result.error().attempts();
      bool more = false, last = false;
      {
        std::lock_guard lock(mu);
        latencies_ms[static_cast<std::size_t>(finished)] = ms;
        if (result && result->status < 400) {
          ++ok;
        } else if (result) {
          ++errors["status_" + std::to_string(result->status)];
        } else {
          ++errors[std::string(ToString(result.error().kind()))];
        }
        ++finished;
        last = finished == n;
        if (rss_every > 0 && finished % rss_every == 0) rss_samples.push_back(RssKb());
        if (started < n) {
          ++started;
          more = true;
        }
      }
      if (more) StartOne();
      if (last) all_done.notify_all();
    }
  } run;
  settings->observers.push_back(
      http::ObserveTransitions([&run](const circuit::Transition&) { ++run.transitions; }));
  CountingProcessor spans;
  telemetry::RecordingTracer tracer(DefaultRandom(), spans);
  telemetry::MetricStore metrics;
  std::unique_ptr<telemetry::PrometheusExposer> exposer;
  telemetry::Telemetry reporting;
  if (with_telemetry) {
    auto started = telemetry::PrometheusExposer::Start(metrics, "127.0.0.1:0");
    if (!started) {
      std::cerr << "outbound: " << started.error().message() << "\n";
      return kExitConfig;
    }
    exposer = std::move(*started);
    reporting = {.tracer = &tracer, .meters = &metrics};
  }
  run.client = MakeClient(*settings, network, reporting);
  if (!run.client) return kExitConfig;
  // A path on the client's origin, as a program would send it.
  proto.url = TargetOf(url);
  run.proto = proto;
  run.clock = &SystemClock();
  run.n = n;
  run.rss_every = rss_every;
  run.latencies_ms.assign(static_cast<std::size_t>(n), 0.0);

  double cpu_before = CpuSeconds();
  TimePoint t0 = run.clock->Now();
  {
    std::lock_guard lock(run.mu);
    run.started = std::min<long>(concurrency, n);
  }
  for (long i = 0; i < std::min<long>(concurrency, n); ++i) run.StartOne();
  {
    std::unique_lock lock(run.mu);
    run.all_done.wait(lock, [&] { return run.finished == n; });
  }
  BenchFigures figures{.calls = n,
                       .concurrency = concurrency,
                       .seconds = std::chrono::duration<double>(run.clock->Now() - t0).count(),
                       .latencies_ms = std::move(run.latencies_ms),
                       .ok = run.ok,
                       .errors = run.errors,
                       .attempts = run.attempts,
                       .transitions = run.transitions,
                       .telemetry = with_telemetry,
                       .spans = spans.spans.load(),
                       .cpu_seconds = CpuSeconds() - cpu_before,
                       .rss_samples = run.rss_samples};
  return ReportBench(figures, json_path);
}

}  // namespace outbound::tool
