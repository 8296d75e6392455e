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

namespace outbound::tool {
namespace {

constexpr const char* kHelp = R"(usage: outbound call [options] URL

Makes one call to URL through outbound's HTTP client (retries, retry budget,
circuit breaker, timeouts) and writes the response body to stdout.

options:
  -X, --method METHOD     the request method (default GET)
  -H, --header 'K: V'     a request header; repeatable
  -d, --data DATA         the request body; @FILE reads it from FILE
  --connect-to H:P:A:P    dial ADDR:PORT for HOST:PORT (like curl's)
  --fail                  exit 22 when the status is 400 or more
  -v                      one line per attempt on stderr
  --report json           a JSON summary of the call on stderr
  -h, --help              this text

settings, from the environment (durations like 250ms or 10s):
  OUTBOUND_TIMEOUT OUTBOUND_ATTEMPT_TIMEOUT OUTBOUND_MAX_ATTEMPTS
  OUTBOUND_BACKOFF_BASE OUTBOUND_BACKOFF_MAX
  OUTBOUND_RETRY_BUDGET_MAX_TOKENS OUTBOUND_RETRY_BUDGET_TOKEN_RATIO
  OUTBOUND_BREAKER_WINDOW OUTBOUND_BREAKER_PROBES OUTBOUND_BREAKER_OPEN_FOR
  OUTBOUND_BREAKER_PROBE_TIMEOUT OUTBOUND_CA_FILE OUTBOUND_CERT_FILE OUTBOUND_KEY_FILE
An https URL without OUTBOUND_CA_FILE trusts the system's roots. Every bad
variable is reported at once, by name, and the command exits 78.

exit codes:
  0 success    2 usage    3 invalid request    7 connection failed
  8 invalid response    22 HTTP status >= 400 with --fail    27 out of a local
  resource (descriptors, memory)    28 deadline    42 cancelled
  47 too many redirects    60 untrusted certificate    63 response too large
  69 rejected by the circuit breaker    76 another origin    78 bad configuration
)";

std::string Millis(Duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + "ms";
}

}  // namespace

int RunCall(const std::vector<std::string>& args) {
  http::Request request;
  ConnectToNetwork network;
  bool fail_on_status = false, verbose = false, report = false;
  std::string url;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::optional<std::string> {
      if (i + 1 >= args.size()) return std::nullopt;
      return args[++i];
    };
    if (a == "-h" || a == "--help") {
      std::cout << kHelp;
      return kExitOk;
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

  std::optional<http::Settings> settings = SettingsFromEnvironment(origin);
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

  std::unique_ptr<http::Client> client = MakeClient(*settings, network);
  if (!client) return kExitConfig;
  request.url = url;
  Result<http::Response> response = client->Send(std::move(request));
  int code = kExitOk;
  if (!response) {
    std::cerr << "outbound: " << ToString(response.error().kind()) << ": "
              << response.error().message() << "\n";
    code = ExitCodeFor(response.error().kind());
  } else {
    std::cout << response->body << std::flush;
    if (fail_on_status && response->status >= 400) code = kExitHttpError;
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
