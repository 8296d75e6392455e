// SPDX-License-Identifier: Apache-2.0
// `outbound call` and `outbound bench` for a grpc or grpcs URL: unary calls
// through rpc::Client, with settings from the OUTBOUND_* variables
// (config::ReadRpcSettings).
#include "grpc.h"

#include <algorithm>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>

#include "bench.h"
#include "commands.h"
#include "outbound/config/http_settings.h"
#include "outbound/config/rpc_settings.h"
#include "outbound/rpc/client.h"
#include "outbound/telemetry/log.h"
#include "outbound/telemetry/metric_store.h"
#include "outbound/telemetry/prometheus.h"

namespace outbound::tool {
namespace {

// A status code's name, as gRPC spells it.
std::string StatusName(rpc::Code code) { return std::string(rpc::CodeName(code)); }

// OK: 0. A call the breaker turned away: 69, as the HTTP form's. Any other
// status: 100 + its code, so a script can tell each one apart and none
// meets the HTTP form's codes (all below 100).
int ExitCodeFor(const rpc::Status& status) {
  if (status.ok()) return kExitOk;
  if (status.rejected) return kExitRejected;
  return 100 + static_cast<int>(status.code);
}

// The variables a gRPC call reads: ReadRpcSettings's, less those the URL
// says (the address, TLS).
std::vector<std::string> GrpcKnownVariables() {
  std::vector<std::string> known = config::RpcSettingsVariables(kPrefix);
  std::erase(known, std::string(kPrefix) + "ADDR");
  std::erase(known, std::string(kPrefix) + "TLS");
  return known;
}

// As UnknownVariableWarnings, for a gRPC call: a variable only the HTTP form
// reads is said to be of no use here, rather than a misspelling.
std::vector<std::string> GrpcVariableWarnings(const std::vector<std::string>& names) {
  std::vector<std::string> known = GrpcKnownVariables();
  std::vector<std::string> http = config::HttpSettingsVariables(kPrefix);
  std::vector<std::string> warnings;
  for (const std::string& name : names) {
    if (name.rfind(kPrefix, 0) != 0) continue;
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    if (name == std::string(kPrefix) + "ADDR" || name == std::string(kPrefix) + "URL") {
      warnings.push_back(name + " is not read: the URL is the command's argument");
    } else if (name == std::string(kPrefix) + "TLS") {
      warnings.push_back(name + " is not read: the URL says it (grpcs for TLS, grpc for none)");
    } else if (std::find(http.begin(), http.end(), name) != http.end()) {
      warnings.push_back(name + " is not read by a gRPC call (an HTTP call's setting)");
    } else {
      std::string warning = name + " is not a variable outbound reads";
      if (auto meant = config::NearestName(name, known, kPrefix)) {
        warning += "; did you mean " + *meant + "?";
      }
      warnings.push_back(std::move(warning));
    }
  }
  return warnings;
}

// rpc::Settings for `target` from the OUTBOUND_* variables, then `options`,
// by SettingsFromEnvironment's rules: every bad one printed, each by its
// name, and nothing returned (the caller exits 78).
std::optional<rpc::Settings> RpcSettingsFromEnvironment(const std::string& url,
                                                        const GrpcTarget& target,
                                                        const SettingOptions& options) {
  config::Lookup process = config::ProcessEnvironment();
  for (const std::string& warning :
       GrpcVariableWarnings(process.Names().value_or(std::vector<std::string>{}))) {
    std::cerr << "outbound: warning: " << warning << "\n";
  }

  // The URL says the address and TLS: their variables are not read. Beside
  // a grpc URL the TLS files are refused here, naming the URL, rather than
  // by the reader, which would name OUTBOUND_TLS.
  std::vector<std::string> hidden = {std::string(kPrefix) + "ADDR", std::string(kPrefix) + "TLS"};
  std::vector<std::string> tls_files;
  for (const char* field : {"CA_FILE", "CERT_FILE", "KEY_FILE"}) {
    tls_files.push_back(kPrefix + std::string(field));
  }
  if (!target.tls) hidden.insert(hidden.end(), tls_files.begin(), tls_files.end());
  config::Resolver env([process, hidden](const std::string& name) -> std::optional<std::string> {
    if (std::find(hidden.begin(), hidden.end(), name) != hidden.end()) return std::nullopt;
    return process(name);
  });
  rpc::Settings defaults = rpc::DefaultSettings();
  defaults.addr = target.addr;
  if (target.tls) defaults.tls = rpc::TlsSettings{};
  rpc::Settings settings = config::ReadRpcSettings(env, kPrefix, defaults);
  std::string plain = "the URL is \"" + url + "\", which is plain text: TLS needs a grpcs URL";
  if (!target.tls) {
    for (const std::string& name : tls_files) {
      if (process(name)) env.Fail(name + ": set, but " + plain);
    }
  }

  // The options, over the variables, each named by its option.
  std::map<std::string, std::string> given;
  if (options.ca_file) given["--cacert"] = *options.ca_file;
  if (options.cert_file) given["--cert"] = *options.cert_file;
  if (options.key_file) given["--key"] = *options.key_file;
  if (options.timeout) given["--timeout"] = *options.timeout;
  config::Resolver flags(config::FromMap(given));
  settings.timeout =
      flags.Get("--timeout", config::Parser<Duration>(config::ParseDuration),
                std::optional(settings.timeout), config::Check<Duration>(rpc::CheckTimeout));
  if (settings.tls) {
    config::Parser<std::string> certificate = config::ReadCertificateFile;
    config::Parser<std::string> key = config::ReadPrivateKeyFile;
    rpc::TlsSettings& tls = *settings.tls;
    tls.root_pem = flags.Get("--cacert", certificate, std::optional(tls.root_pem));
    tls.client_cert_pem = flags.Get("--cert", certificate, std::optional(tls.client_cert_pem));
    tls.client_key_pem = flags.Get("--key", key, std::optional(tls.client_key_pem));
    if ((options.cert_file || options.key_file) &&
        tls.client_cert_pem.empty() != tls.client_key_pem.empty()) {
      flags.Fail("--cert, --key: a client certificate needs its key, and a key its certificate");
    }
  } else {
    for (const char* option : {"--cacert", "--cert", "--key"}) {
      if (flags.Has(option)) flags.Fail(std::string(option) + ": set, but " + plain);
    }
  }

  std::string problems;
  for (const config::Resolver* r : {&env, &flags}) {
    if (auto done = r->Finish(); !done) {
      problems += (problems.empty() ? "" : "; ") + done.error().message();
    }
  }
  if (!problems.empty()) {
    std::cerr << "outbound: bad configuration: " << problems << "\n";
    return std::nullopt;
  }
  return settings;
}

// The client, or null with why on stderr (the caller exits 78).
std::unique_ptr<rpc::Client> MakeRpcClient(const rpc::Settings& settings, const Network& network,
                                           const telemetry::Telemetry& telemetry) {
  Runtime runtime;
  runtime.network = &network;
  runtime.telemetry = telemetry;
  auto client = rpc::Client::Create(runtime, settings);
  if (!client) {
    std::cerr << "outbound: " << client.error().message() << "\n";
    return nullptr;
  }
  return std::move(*client);
}

std::string Attempts(int n) { return std::to_string(n) + (n == 1 ? " attempt" : " attempts"); }

// Counts the breaker's transitions among the records the gRPC client logs
// (with balancing, an endpoint's ejection is one too).
class TransitionCounter final : public telemetry::Logger {
 public:
  void Emit(telemetry::LogRecord&& record) override {
    bool transition = std::ranges::any_of(record.attributes, [](const telemetry::Attribute& a) {
      return a.key == "outbound.circuit.previous_state";
    });
    if (transition) count.fetch_add(1, std::memory_order_relaxed);
  }
  std::atomic<long> count{0};
};

}  // namespace

int RunGrpcCall(const GrpcCall& call) {
  // The URL is the command line's: a bad host or port in it is a usage
  // error in the URL's words, not a bad variable naming Settings.addr.
  if (auto valid = rpc::CheckAddr(call.target.addr); !valid) {
    return Usage("call", "\"" + call.url + "\": " + valid.error().message());
  }
  std::optional<rpc::Settings> settings =
      RpcSettingsFromEnvironment(call.url, call.target, call.settings);
  if (!settings) return kExitConfig;
  Context context;
  context.metadata = call.metadata;
  if (call.fault) {
    settings->faults.enabled = true;
    context.baggage.push_back({"outbound-fault", *call.fault, ""});
  }
  // -v: each attempt's span as it ends, as a tracing backend would get it.
  std::mutex mu;
  SpanPrinter span_printer(mu);
  telemetry::RecordingTracer tracer(DefaultRandom(), span_printer);
  telemetry::Telemetry reporting;
  if (call.verbose) reporting.tracer = &tracer;
  std::unique_ptr<rpc::Client> client = MakeRpcClient(*settings, *call.network, reporting);
  if (!client) return kExitConfig;

  rpc::Reply reply = client->Call(call.target.method, call.message, context);
  int code = ExitCodeFor(reply.status);
  {
    std::lock_guard lock(mu);
    std::cerr << "outbound: " << StatusName(reply.status.code)
              << (reply.status.message.empty() ? "" : ": " + reply.status.message) << " ("
              << Attempts(reply.attempts) << ")\n";
  }
  if (reply.status.ok()) {
    if (call.output) {
      if (!WriteFileOrSay(*call.output, reply.body)) code = kExitWriteError;
    } else {
      std::cout.write(reply.body.data(), static_cast<std::streamsize>(reply.body.size()));
      if (!std::cout.flush()) {
        std::cerr << "outbound: cannot write the output\n";
        code = kExitWriteError;
      }
    }
  }
  if (call.report) {
    std::lock_guard lock(mu);
    nlohmann::json summary = {
        {"url", call.url},
        {"method", call.target.method},
        {"attempts", reply.attempts},
        {"outcome",
         {{"status", StatusName(reply.status.code)},
          {"message", reply.status.message},
          {"rejected", reply.status.rejected}}},
        {"breaker_state", circuit::ToString(client->breaker().state(SystemClock().Now()))},
        {"exit_code", code}};
    std::cerr << summary.dump() << "\n";
  }
  return code;
}

int RunGrpcBench(const GrpcBench& bench) {
  if (auto valid = rpc::CheckAddr(bench.target.addr); !valid) {
    return Usage("bench", "\"" + bench.url + "\": " + valid.error().message());
  }
  std::optional<rpc::Settings> settings = RpcSettingsFromEnvironment(bench.url, bench.target, {});
  if (!settings) return kExitConfig;

  // What the calls share; the callbacks capture a pointer to it and their
  // start time, as the HTTP bench's do.
  struct Run {
    std::mutex mu;
    std::condition_variable all_done;
    std::atomic<long> attempts{0};
    std::string method, message;
    Context context;  // the metadata every call sends
    Clock* clock = nullptr;
    long n = 0, rss_every = 0;
    std::vector<double> latencies_ms;
    std::map<std::string, long> errors;
    std::vector<long> rss_samples;
    long started = 0, finished = 0, ok = 0;
    // Last: it goes first, waiting for its calls, while the rest is whole.
    std::unique_ptr<rpc::Client> client;

    void StartOne() {
      TimePoint began = clock->Now();
      client->CallAsync(
          method, message,
          [run = this, began](rpc::Reply reply, const std::exception_ptr&) {
            run->Ended(began, reply);
          },
          context);
    }

    void Ended(TimePoint began, const rpc::Reply& reply) {
      double ms = std::chrono::duration<double, std::milli>(clock->Now() - began).count();
      attempts += reply.attempts;
      bool more = false, last = false;
      {
        std::lock_guard lock(mu);
        latencies_ms[static_cast<std::size_t>(finished)] = ms;
        if (reply.status.ok()) {
          ++ok;
        } else {
          ++errors[reply.status.rejected ? "rejected" : StatusName(reply.status.code)];
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
  };

  // Before the run, whose client reports to them until it is gone.
  CountingProcessor spans;
  TransitionCounter transitions;
  telemetry::RecordingTracer tracer(DefaultRandom(), spans);
  telemetry::MetricStore metrics;
  std::unique_ptr<telemetry::PrometheusExposer> exposer;
  Run run;
  telemetry::Telemetry reporting{.logger = &transitions};
  if (bench.telemetry) {
    auto started = telemetry::PrometheusExposer::Start(metrics, "127.0.0.1:0");
    if (!started) {
      std::cerr << "outbound: " << started.error().message() << "\n";
      return kExitConfig;
    }
    exposer = std::move(*started);
    reporting.tracer = &tracer;
    reporting.meters = &metrics;
  }
  run.client = MakeRpcClient(*settings, *bench.network, reporting);
  if (!run.client) return kExitConfig;
  run.method = bench.target.method;
  run.message = bench.message;
  run.context.metadata = bench.metadata;
  run.clock = &SystemClock();
  run.n = bench.calls;
  run.rss_every = bench.rss_every;
  run.latencies_ms.assign(static_cast<std::size_t>(bench.calls), 0.0);

  long first = std::min<long>(bench.concurrency, bench.calls);
  double cpu_before = CpuSeconds();
  TimePoint t0 = run.clock->Now();
  {
    std::lock_guard lock(run.mu);
    run.started = first;
  }
  for (long i = 0; i < first; ++i) run.StartOne();
  {
    std::unique_lock lock(run.mu);
    run.all_done.wait(lock, [&] { return run.finished == run.n; });
  }
  BenchFigures figures{.calls = bench.calls,
                       .concurrency = bench.concurrency,
                       .seconds = std::chrono::duration<double>(run.clock->Now() - t0).count(),
                       .latencies_ms = std::move(run.latencies_ms),
                       .ok = run.ok,
                       .errors = run.errors,
                       .attempts = run.attempts,
                       .transitions = transitions.count,
                       .telemetry = bench.telemetry,
                       .spans = spans.spans.load(),
                       .cpu_seconds = CpuSeconds() - cpu_before,
                       .rss_samples = run.rss_samples};
  return ReportBench(figures, bench.json_path);
}

}  // namespace outbound::tool
