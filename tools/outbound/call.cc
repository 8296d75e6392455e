// SPDX-License-Identifier: Apache-2.0
// `outbound call`: one call through an http::Client built for the URL's
// origin, with settings from the OUTBOUND_* variables.
#include <fstream>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.h"
#include "common.h"
#include "outbound/http/client.h"
#include "outbound/telemetry/trace.h"
#include "outbound/version.h"

namespace outbound::tool {
namespace {

// Writes each ended span to stderr on one line: name, ids, duration, status
// and attributes.
class SpanPrinter final : public telemetry::SpanProcessor {
 public:
  explicit SpanPrinter(std::mutex& mu) : mu_(mu) {}
  void OnEnd(telemetry::SpanData&& span) override {
    std::lock_guard lock(mu_);
    std::cerr << "span " << span.name << " trace " << span.context.trace_id.Hex() << " span "
              << span.context.span_id.Hex() << " "
              << std::chrono::duration<double, std::milli>(span.end - span.start).count() << " ms "
              << telemetry::ToString(span.status);
    for (const telemetry::Attribute& attribute : span.attributes) {
      std::cerr << " " << attribute.key << "=" << telemetry::ToString(attribute.value);
    }
    std::cerr << "\n";
  }

 private:
  std::mutex& mu_;
};

constexpr const char* kCallHelp = R"(usage: outbound call [options] URL

Makes one call to an http or https URL through outbound's HTTP client
(retries, retry budget, circuit breaker, timeouts) and writes the response
body to stdout. A redirect within the URL's origin is followed; one to
another origin is not, and is said on stderr with its Location.

options:
  -X, --method METHOD     the request method (default GET)
  -H, --header 'K: V'     a request header; repeatable
  -d, --data DATA         the request body; @FILE reads it from FILE
  -i, --include           the status line and headers before the body
  -o, --output FILE       write to FILE instead of stdout
  --timeout DURATION      bound the whole call (OUTBOUND_TIMEOUT), e.g. 2s
  --cacert FILE           trust only the CA certificates in FILE (PEM)
  --cert FILE, --key FILE a client certificate and its key (PEM), for mTLS
  --connect-to H:P:A:P    dial ADDR:PORT for HOST:PORT (like curl's)
  --fail                  exit 22 when the status is 400 or more
  --fault SCENARIO        inject failures, e.g. 'http:payments:8443=abort,50%'
                          (docs/failure-injection.md); the point of a URL's
                          client is http:HOST:PORT
  -v                      one line per attempt on stderr
  --report json           a JSON summary of the call on stderr
  --version               the version
  -h, --help              this text

settings, from the environment (durations like 250ms or 10s):
  OUTBOUND_TIMEOUT OUTBOUND_ATTEMPT_TIMEOUT OUTBOUND_MAX_ATTEMPTS
  OUTBOUND_BACKOFF_BASE OUTBOUND_BACKOFF_MAX
  OUTBOUND_RETRY_BUDGET_MAX_TOKENS OUTBOUND_RETRY_BUDGET_TOKEN_RATIO
  OUTBOUND_BREAKER_WINDOW OUTBOUND_BREAKER_PROBES OUTBOUND_BREAKER_OPEN_FOR
  OUTBOUND_BREAKER_PROBE_TIMEOUT OUTBOUND_MAX_RESPONSE_BYTES
  OUTBOUND_MAX_CONNECTIONS OUTBOUND_CA_FILE OUTBOUND_CERT_FILE OUTBOUND_KEY_FILE
  OUTBOUND_RATE_LIMIT (50/s, 50/s,10 or off) OUTBOUND_FAULTS (on or off)
  OUTBOUND_GZIP (on or off)
Options win over variables. An https URL without a CA file trusts the
system's roots. Every bad variable or option is reported at once, by name,
and the command exits 78; another OUTBOUND_ variable is warned about.

exit codes:
  0 success    2 usage    3 invalid request    7 connection failed
  8 invalid response    22 HTTP status >= 400 with --fail    23 cannot write
  the output    27 out of a local resource (descriptors, memory)
  28 deadline    42 cancelled    47 too many redirects
  60 untrusted certificate    63 response too large
  69 rejected by the circuit breaker    76 another origin    78 bad configuration
)";

bool IsRedirect(int status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

// The status line and headers as curl -i shows them.
std::string HeaderBlock(const http::Response& response) {
  std::string block = "HTTP/" + response.version + " " + std::to_string(response.status) + "\r\n";
  for (const auto& [name, value] : response.headers) {
    block.append(name).append(": ").append(value).append("\r\n");
  }
  return block + "\r\n";
}

std::string Millis(Duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + "ms";
}

}  // namespace

int RunCall(const std::vector<std::string>& args) {
  http::Request request;
  ConnectToNetwork network;
  SettingOptions setting_options;
  bool fail_on_status = false, verbose = false, report = false, include = false;
  std::optional<std::string> fault;
  std::optional<std::string> output;
  std::string url;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::optional<std::string> {
      if (i + 1 >= args.size()) return std::nullopt;
      return args[++i];
    };
    if (a == "-h" || a == "--help") {
      std::cout << kCallHelp;
      return kExitOk;
    } else if (a == "--version") {
      std::cout << "outbound " << Version() << "\n";
      return kExitOk;
    } else if (a == "-i" || a == "--include") {
      include = true;
    } else if (a == "-o" || a == "--output") {
      output = value();
      if (!output) return Usage("call", a + " needs a file");
    } else if (a == "--timeout") {
      setting_options.timeout = value();
      if (!setting_options.timeout) return Usage("call", "--timeout needs a duration, e.g. 2s");
    } else if (a == "--cacert" || a == "--cert" || a == "--key") {
      auto v = value();
      if (!v) return Usage("call", a + " needs a file");
      (a == "--cacert" ? setting_options.ca_file
       : a == "--cert" ? setting_options.cert_file
                       : setting_options.key_file) = v;
    } else if (a == "-X" || a == "--method") {
      auto v = value();
      if (!v) return Usage("call", a + " needs a method");
      request.method = *v;
    } else if (a == "-H" || a == "--header") {
      auto v = value();
      if (!v || !AddHeader(request, *v)) return Usage("call", a + " needs 'Name: value'");
    } else if (a == "-d" || a == "--data") {
      auto v = value();
      if (!v) return Usage("call", a + " needs data");
      if (!v->empty() && (*v)[0] == '@') {
        std::ifstream in(v->substr(1), std::ios::binary);
        if (!in) return Usage("call", "cannot read " + v->substr(1));
        std::ostringstream body;
        body << in.rdbuf();
        request.body = body.str();
      } else {
        request.body = *v;
      }
      if (request.method == "GET") request.method = "POST";
    } else if (a == "--connect-to") {
      auto v = value();
      if (!v || !network.Add(*v)) return Usage("call", "--connect-to needs HOST:PORT:ADDR:PORT");
    } else if (a == "--fail") {
      fail_on_status = true;
    } else if (a == "--fault") {
      fault = value();
      if (!fault) return Usage("call", "--fault needs a scenario, e.g. 'http:HOST:PORT=abort'");
    } else if (a == "-v") {
      verbose = true;
    } else if (a == "--report") {
      auto v = value();
      if (!v || *v != "json") return Usage("call", "--report takes json");
      report = true;
    } else if (!a.empty() && a[0] == '-') {
      return Usage("call", "unknown option " + a);
    } else if (url.empty()) {
      url = a;
    } else {
      return Usage("call", "one URL only");
    }
  }
  if (url.empty()) return Usage("call", "a URL is needed");
  std::string origin = OriginOf(url);
  if (origin.empty()) return Usage("call", "\"" + url + "\" is not an absolute URL");
  if (!IsHttpUrl(url)) {
    return Usage("call", "\"" + url + "\" is not an http or https URL");
  }

  std::optional<http::Settings> settings = SettingsFromEnvironment(origin, setting_options);
  if (!settings) return kExitConfig;
  std::mutex mu;
  nlohmann::json attempts = nlohmann::json::array();
  settings->observers.push_back(http::ObserveAttempts([&](const http::AttemptRecord& r) {
    std::lock_guard lock(mu);
    std::string outcome = r.error ? std::string(ToString(*r.error)) : std::to_string(r.status);
    std::string decision = r.decision ? std::string(retry::ToString(*r.decision)) : "";
    if (verbose) {
      std::cerr << "attempt " << r.attempt << " " << r.method << " " << r.url << ": " << outcome
                << " in " << Millis(r.duration) << " -> " << decision
                << (r.error ? " (" + r.error_message + ")" : "") << "\n";
    }
    attempts.push_back(
        {{"attempt", r.attempt},
         {"resend_count", r.resend_count},
         {"url", r.url},
         {"status", r.status},
         {"error", r.error ? nlohmann::json(ToString(*r.error)) : nullptr},
         {"duration_ms", std::chrono::duration<double, std::milli>(r.duration).count()},
         {"decision", decision}});
  }));

  if (fault) {
    settings->faults.enabled = true;
    request.context.baggage.push_back({"outbound-fault", *fault, ""});
  }
  // -v: each attempt's span as it ends, ids and attributes, so a person sees
  // what a tracing backend would get (and the traceparent the server saw).
  SpanPrinter span_printer(mu);
  telemetry::RecordingTracer tracer(DefaultRandom(), span_printer);
  telemetry::Telemetry reporting;
  if (verbose) reporting.tracer = &tracer;
  std::unique_ptr<http::Client> client = MakeClient(*settings, network, reporting);
  if (!client) return kExitConfig;
  request.url = url;
  Result<http::Response> response = client->Send(std::move(request));
  int code = kExitOk;
  if (!response) {
    std::cerr << "outbound: " << ToString(response.error().kind()) << ": "
              << response.error().message() << "\n";
    code = ExitCodeFor(response.error().kind());
    if (response.error().kind() == ErrorKind::kTlsUntrusted && settings->tls &&
        settings->tls->root_pem.empty()) {
      std::cerr << "outbound: hint: no CA file was given, so only the system's roots are "
                   "trusted; name the server's CA with --cacert FILE or OUTBOUND_CA_FILE\n";
    }
  } else {
    std::string out = include ? HeaderBlock(*response) : "";
    out += response->body;
    if (output) {
      std::ofstream file(*output, std::ios::binary | std::ios::trunc);
      if (!(file << out) || !file.flush()) {
        std::cerr << "outbound: cannot write " << *output << "\n";
        code = kExitWriteError;
      }
    } else {
      std::cout << out << std::flush;
    }
    if (code == kExitOk && fail_on_status && response->status >= 400) code = kExitHttpError;
    // The client follows redirects within the origin only: a redirect that
    // comes back is one to another origin (or one carrying user info).
    std::string_view location = response->header("Location");
    if (IsRedirect(response->status) && !location.empty()) {
      std::string target(location);
      std::string target_origin = OriginOf(target);
      bool elsewhere = !target_origin.empty() && target_origin != origin;
      std::cerr << "outbound: " << response->status
                << (elsewhere ? ": a redirect to another origin, not followed: "
                              : ": a redirect, not followed: ")
                << "Location: " << target << "\n";
    }
  }
  if (report) {
    std::lock_guard lock(mu);
    nlohmann::json summary = {
        {"url", url},
        {"attempts", attempts},
        {"outcome",
         response ? nlohmann::json({{"status", response->status}, {"version", response->version}})
                  : nlohmann::json({{"error", ToString(response.error().kind())},
                                    {"message", response.error().message()}})},
        {"breaker_state", circuit::ToString(client->breaker_state())},
        {"exit_code", code}};
    std::cerr << summary.dump() << "\n";
  }
  return code;
}

}  // namespace outbound::tool
