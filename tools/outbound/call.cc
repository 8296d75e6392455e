// SPDX-License-Identifier: Apache-2.0
// `outbound call`: one call through an http::Client built for the URL's
// origin, with settings from the OUTBOUND_* variables.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>
#include <vector>

#include "commands.h"
#include "common.h"
#include "grpc.h"
#include "outbound/config/runtime_file.h"
#include "outbound/http/client.h"
#include "outbound/telemetry/trace.h"
#include "outbound/version.h"

namespace outbound::tool {
namespace {

// "payments" of "https://payments:8443", "::1" of "http://[::1]:8080": the
// name a runtime file gives the dependency.
std::string HostOf(const std::string& origin) {
  std::string host = origin.substr(origin.find("://") + 3);
  if (!host.empty() && host[0] == '[') return host.substr(1, host.find(']') - 1);
  return host.substr(0, host.rfind(':'));
}

constexpr const char* kCallHelp = R"(usage: outbound call [options] URL

Makes one call to an http or https URL through outbound's HTTP client
(retries, retry budget, circuit breaker, timeouts) and writes the response
body to stdout. A redirect within the URL's origin is followed; one to
another origin is not, and is said on stderr with its Location.
A grpc or grpcs URL makes one unary gRPC call instead (see "gRPC").

options:
  -X, --method METHOD     the request method (default GET)
  -H, --header 'K: V'     a request header; repeatable
  -d, --data DATA         the request body; @FILE reads it from FILE, @- from
                          stdin
  -i, --include           the status line and headers before the body
  -o, --output FILE       write to FILE instead of stdout; a 2xx body is
                          streamed to FILE as it arrives (see "bodies")
  --timeout DURATION      bound the whole call (OUTBOUND_TIMEOUT), e.g. 2s
  --cacert FILE           trust only the CA certificates in FILE (PEM)
  --cert FILE, --key FILE a client certificate and its key (PEM), for mTLS
  --connect-to H:P:A:P    dial ADDR:PORT for HOST:PORT (like curl's)
  --fail                  exit 22 when the status is 400 or more
  --fault SCENARIO        inject failures, e.g. 'http:payments:8443=abort,50%'
                          (docs/failure-injection.md); the point of a URL's
                          client is http:HOST:PORT, in any case
  --runtime-file FILE     apply FILE's entry for the URL's host, as a process
                          watching it would: its breaker override, faults and
                          rate limit (docs/beyond-retries.md, "Operator
                          control"); a bad FILE exits 78, naming what is wrong
  -v                      one line per attempt on stderr
  --report json           a JSON summary of the call on stderr
  --version               the version
  -h, --help              this text

settings, from the environment (durations like 250ms or 10s):
  OUTBOUND_TIMEOUT OUTBOUND_ATTEMPT_TIMEOUT OUTBOUND_MAX_ATTEMPTS
  OUTBOUND_BACKOFF_BASE OUTBOUND_BACKOFF_MAX
  OUTBOUND_RETRY_BUDGET_MAX_TOKENS OUTBOUND_RETRY_BUDGET_TOKEN_RATIO
  OUTBOUND_RETRY_BUDGET_MIN_PER_SECOND
  OUTBOUND_BREAKER_WINDOW OUTBOUND_BREAKER_PROBES OUTBOUND_BREAKER_OPEN_FOR
  OUTBOUND_BREAKER_PROBE_TIMEOUT OUTBOUND_BREAKER_INITIAL_OPEN_FOR
  OUTBOUND_BREAKER_CALLS_PER_PROBE OUTBOUND_BREAKER_SLOW_CALL
  OUTBOUND_MAX_RESPONSE_BYTES OUTBOUND_MAX_ERROR_RESPONSE_BYTES
  OUTBOUND_MAX_CONNECTIONS OUTBOUND_CA_FILE OUTBOUND_CERT_FILE OUTBOUND_KEY_FILE
  OUTBOUND_RATE_LIMIT (50/s, 50/s,10 or off) OUTBOUND_BULKHEAD (64, 64,16,50ms or off)
  OUTBOUND_ADAPTIVE_CONCURRENCY (on or off) OUTBOUND_ADAPTIVE_CONCURRENCY_INITIAL_LIMIT
  OUTBOUND_ADAPTIVE_CONCURRENCY_MIN_LIMIT OUTBOUND_ADAPTIVE_CONCURRENCY_MAX_LIMIT
  OUTBOUND_ADAPTIVE_CONCURRENCY_SAMPLE_WINDOW
  OUTBOUND_HEDGING (on or off) OUTBOUND_HEDGING_DELAY OUTBOUND_HEDGING_PERCENTILE
  OUTBOUND_HEDGING_MAX_IN_FLIGHT OUTBOUND_HEDGING_MAX_EXTRA
  OUTBOUND_FAULTS (on or off)
  OUTBOUND_GZIP (on or off) OUTBOUND_HTTP2_PRIOR_KNOWLEDGE (on: HTTP/2 to an http URL)
  OUTBOUND_MAX_CONNECTION_AGE (30m or off: a connection older is drained)
  OUTBOUND_BALANCING (on or off) OUTBOUND_ENDPOINTS (10.0.0.7:8443,...: several replicas)
  OUTBOUND_RE_RESOLVE_EVERY OUTBOUND_OUTLIER_CONSECUTIVE_FAILURES OUTBOUND_OUTLIER_BASE_EJECTION
Options win over variables. An https URL without a CA file trusts the
system's roots; a CA file, certificate or key beside an http URL is bad
(it would be ignored). Every bad variable or option is reported at once,
by name, and the command exits 78; another OUTBOUND_ variable is warned
about, with the one it most likely misspells.

bodies:
  Without -o, the body is held in memory, then written to stdout: a body over
  OUTBOUND_MAX_RESPONSE_BYTES (default 67108864) fails the call with exit 63,
  and so does the body of an answer of 400 and above over
  OUTBOUND_MAX_ERROR_RESPONSE_BYTES (default 1048576); the message names the
  variable that raises the limit the body met.
  With -o FILE, the body of a 2xx answer is written to FILE as it arrives, in
  constant memory and with no size limit (as curl -o); with -i the headers
  are put before it once it has ended (if FILE is a regular file; to another,
  such as a pipe, the body is held). An answer that is not 2xx (a 4xx, a
  5xx, a redirect not followed) is held and limited as without -o.
  FILE is made when an answer arrives: a call that gets none leaves it as
  it was. A 2xx body cut short leaves in FILE what had arrived (exit 7); a
  FILE that cannot be written ends the call (exit 23). --timeout
  (OUTBOUND_TIMEOUT, default 10s) bounds the whole call, bodies included:
  raise it for a long download or upload (-d @FILE; the attempt timeout,
  OUTBOUND_ATTEMPT_TIMEOUT, waits for the answer, not the upload).

gRPC:
  outbound call [options] grpc://HOST:PORT/package.Service/Method
  outbound call [options] grpcs://HOST:PORT/package.Service/Method
  One unary call through outbound's gRPC client: HTTP/2 in plain text (h2c)
  for grpc, TLS for grpcs. The request is the serialised message -d gives
  (-d @req.bin, or -d @- for stdin; none: the empty message); the serialised
  response message goes to stdout, or to FILE with -o (a status other than
  OK writes nothing, and leaves FILE as it was). The call's status
  and its attempts go to stderr, as in: outbound: OK (1 attempt), or
  outbound: UNAVAILABLE: failed to connect to all addresses; ... (3 attempts).
  -H is the call's metadata (a NAME-bin header's value is the bytes given,
  sent base64-coded; a name gRPC reserves, such as grpc-timeout, ends the
  call INTERNAL). -o, --timeout, --cacert, --cert, --key, --connect-to,
  --fault (the point is grpc:HOST:PORT), -v (each attempt's span) and
  --report json apply; -X, -i, --fail and --runtime-file do not. The settings are the
  variables above that rpc::Settings has: OUTBOUND_TIMEOUT
  OUTBOUND_ATTEMPT_TIMEOUT OUTBOUND_MAX_ATTEMPTS OUTBOUND_BACKOFF_BASE
  OUTBOUND_BACKOFF_MAX, the OUTBOUND_RETRY_BUDGET_ and OUTBOUND_BREAKER_
  ones, OUTBOUND_CA_FILE OUTBOUND_CERT_FILE OUTBOUND_KEY_FILE (a grpcs URL
  only), OUTBOUND_FAULTS, OUTBOUND_MAX_CONNECTION_AGE, OUTBOUND_RATE_LIMIT
  OUTBOUND_BULKHEAD and the OUTBOUND_ADAPTIVE_CONCURRENCY ones (a call over
  either is rejected: exit 69), OUTBOUND_BALANCING OUTBOUND_ENDPOINTS
  OUTBOUND_RE_RESOLVE_EVERY and the OUTBOUND_OUTLIER_ ones, the
  OUTBOUND_HEDGING ones, and the gRPC client's own:
  OUTBOUND_NON_IDEMPOTENT_METHODS (full method names, comma-separated),
  OUTBOUND_MAX_RECEIVE_MESSAGE_BYTES OUTBOUND_MAX_SEND_MESSAGE_BYTES (1 to
  4294967295) and OUTBOUND_GZIP_REQUESTS (on or off); another is warned
  about. A status other than OK exits 100 + its code (CANCELLED 101,
  DEADLINE_EXCEEDED 104, NOT_FOUND 105, UNIMPLEMENTED 112, INTERNAL 113,
  UNAVAILABLE 114, UNAUTHENTICATED 116); a call the circuit breaker turned
  away exits 69.

exit codes:
  0 success    2 usage    3 invalid request    7 connection failed
  8 invalid response    22 HTTP status >= 400 with --fail    23 cannot write
  the output    27 out of a local resource (descriptors, memory)
  28 deadline    42 cancelled    47 too many redirects
  60 untrusted certificate    63 response too large
  69 rejected by the circuit breaker    76 another origin    78 bad configuration
  101-116 a gRPC status other than OK (100 + its code)
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

// FILE of -o, opened at the first byte written (a call that gets no answer
// leaves it alone, as curl does), then written as the body arrives.
class OutputFile {
 public:
  explicit OutputFile(std::string path) : path_(std::move(path)) {}

  // Appends `bytes`; false once a write has failed.
  bool Write(std::string_view bytes) {
    if (failed_) return false;
    if (!out_.is_open()) {
      out_.open(path_, std::ios::binary | std::ios::trunc);
      if (!out_) return Failed();
    }
    if (!out_.write(bytes.data(), static_cast<std::streamsize>(bytes.size()))) return Failed();
    written_ += bytes.size();
    return true;
  }

  // Puts `head` before the bytes written so far, moving them along a block
  // at a time from the end, so a body of any size takes one block of memory.
  bool Prepend(std::string_view head) {
    if (failed_ || head.empty()) return !failed_;
    if (!out_.flush()) return Failed();
    out_.close();
    std::fstream file(path_, std::ios::binary | std::ios::in | std::ios::out);
    std::vector<char> block(1 << 16);
    for (std::uint64_t end = written_; end > 0 && file;) {
      std::uint64_t n = std::min<std::uint64_t>(block.size(), end);
      end -= n;
      file.seekg(static_cast<std::streamoff>(end));
      file.read(block.data(), static_cast<std::streamsize>(n));
      file.seekp(static_cast<std::streamoff>(end + head.size()));
      file.write(block.data(), static_cast<std::streamsize>(n));
    }
    file.seekp(0);
    file.write(head.data(), static_cast<std::streamsize>(head.size()));
    if (!file.flush()) return Failed();
    file.close();
    out_.open(path_, std::ios::binary | std::ios::app);
    if (!out_) return Failed();
    written_ += head.size();
    return true;
  }

  // Flushes and closes; false if any write failed.
  bool Close() {
    if (out_.is_open()) {
      out_.close();
      if (out_.fail()) failed_ = true;
    }
    return !failed_;
  }

  bool opened() const { return written_ > 0 || out_.is_open(); }
  bool failed() const { return failed_; }
  const std::string& path() const { return path_; }

 private:
  bool Failed() {
    failed_ = true;
    return false;
  }

  std::string path_;
  std::ofstream out_;
  std::uint64_t written_ = 0;
  bool failed_ = false;
};

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
  std::optional<std::string> runtime_file;
  std::optional<std::string> output;
  std::string url;
  // The options a gRPC call has no use for, as given: refused with one.
  std::vector<std::string> http_only;
  bool method_given = false;  // -X or --method
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
      http_only.push_back(a);
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
      method_given = true;
      http_only.push_back(a);
    } else if (a == "-H" || a == "--header") {
      auto v = value();
      if (!v || !AddHeader(request, *v)) return Usage("call", a + " needs 'Name: value'");
    } else if (a == "-d" || a == "--data") {
      auto v = value();
      if (!v) return Usage("call", a + " needs data");
      std::string problem;
      std::optional<std::string> data = ReadData(*v, &problem);
      if (!data) return Usage("call", problem);
      request.body = std::move(*data);
      // Data makes a POST, as with curl, unless -X named the method.
      if (!method_given) request.method = "POST";
    } else if (a == "--connect-to") {
      auto v = value();
      if (!v || !network.Add(*v)) return Usage("call", "--connect-to needs HOST:PORT:ADDR:PORT");
    } else if (a == "--fail") {
      fail_on_status = true;
      http_only.push_back(a);
    } else if (a == "--fault") {
      fault = value();
      if (!fault) return Usage("call", "--fault needs a scenario, e.g. 'http:HOST:PORT=abort'");
    } else if (a == "--runtime-file") {
      runtime_file = value();
      if (!runtime_file) return Usage("call", "--runtime-file needs a file");
      http_only.push_back(a);
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
  if (IsGrpcUrl(url)) {
    if (!http_only.empty()) {
      return Usage("call", http_only.front() + " does not apply to a gRPC call");
    }
    std::string problem;
    std::optional<GrpcTarget> target = ParseGrpcUrl(url, &problem);
    if (!target) return Usage("call", problem);
    Metadata metadata;
    for (auto& [name, value] : request.headers) metadata.emplace(std::move(name), std::move(value));
    return RunGrpcCall({.url = url,
                        .target = std::move(*target),
                        .message = std::move(request.body),
                        .metadata = std::move(metadata),
                        .output = output,
                        .settings = setting_options,
                        .network = &network,
                        .verbose = verbose,
                        .report = report,
                        .fault = fault});
  }
  if (url.find("://") != std::string::npos && !IsHttpUrl(url)) {
    return Usage("call", "\"" + url + "\" is not an http or https URL, nor a grpc or grpcs one");
  }
  std::string origin = OriginOf(url);
  if (origin.empty()) return Usage("call", "\"" + url + "\" is not an absolute URL");
  // The URL is the command line's, not a variable's: a bad host or port in
  // it is a usage error, said in the URL's words (not Settings.base_url's).
  if (auto valid = http::CheckBaseUrl(origin); !valid) {
    return Usage("call", "\"" + url + "\": " + valid.error().message());
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
  // --runtime-file: the file's entry for the URL's host, read once (the
  // call ends long before a second read), released before the client goes.
  std::unique_ptr<config::RuntimeFile> control;
  config::Subscription controlled;
  if (runtime_file) {
    Runtime file_runtime;
    file_runtime.telemetry = reporting;
    auto watched = config::RuntimeFile::Watch(file_runtime, *runtime_file);
    if (!watched) {
      std::cerr << "outbound: " << watched.error().message() << "\n";
      return kExitConfig;
    }
    control = std::move(*watched);
    controlled = control->Control(HostOf(origin), *client);
  }
  request.url = url;
  // -o FILE: the 2xx answer's body goes to FILE as it arrives, with no
  // size limit (the client streams only a 2xx body; any other is read
  // whole, within max_response_bytes, and written below).
  // With -i the headers are put before the body once it has ended, which
  // takes a file that can be read and written anywhere: a regular one (or
  // one not yet made). To another (/dev/null, a pipe) the body is held.
  std::optional<OutputFile> file;
  if (output) {
    file.emplace(*output);
    std::error_code error;
    std::filesystem::file_status status = std::filesystem::status(*output, error);
    if (!include || !std::filesystem::exists(status) || std::filesystem::is_regular_file(status)) {
      request.StreamBodyTo([&file](std::string_view chunk) { return file->Write(chunk); });
    }
  }
  Result<http::Response> response = client->Send(std::move(request));
  int code = kExitOk;
  if (file && file->failed()) {
    // The sink stopped the call (kCancelled): the file is what failed.
    std::cerr << "outbound: cannot write " << file->path() << "\n";
    code = kExitWriteError;
  } else if (!response) {
    std::cerr << "outbound: " << ToString(response.error().kind()) << ": "
              << response.error().message() << "\n";
    code = ExitCodeFor(response.error().kind());
    if (response.error().kind() == ErrorKind::kTlsUntrusted && settings->tls &&
        settings->tls->root_pem.empty()) {
      std::cerr << "outbound: hint: no CA file was given, so only the system's roots are "
                   "trusted; name the server's CA with --cacert FILE or OUTBOUND_CA_FILE\n";
    }
    if (response.error().kind() == ErrorKind::kResponseTooLarge &&
        response.error().message().find("header") == std::string::npos) {
      // The library says "error answer's body" when the smaller limit of an
      // answer of 400 and above applied: the hint names the variable that
      // raises the limit the body met, not one that would change nothing.
      bool error_limit = response.error().message().find("error answer's") != std::string::npos &&
                         settings->max_error_response_bytes < settings->max_response_bytes;
      if (error_limit) {
        std::cerr << "outbound: hint: the body of an answer of 400 and above is limited to "
                     "OUTBOUND_MAX_ERROR_RESPONSE_BYTES ("
                  << settings->max_error_response_bytes << " bytes); raise it\n";
      } else {
        std::cerr << "outbound: hint: a body held in memory is limited to "
                     "OUTBOUND_MAX_RESPONSE_BYTES ("
                  << settings->max_response_bytes << " bytes); raise it"
                  << (output ? " (with -o, an answer that is not 2xx is held: outbound call --help)"
                             : ", or write the body to a file with -o FILE, which streams a 2xx "
                               "body with no limit")
                  << "\n";
      }
    }
    if (file && !file->Close()) {
      std::cerr << "outbound: cannot write " << file->path() << "\n";
    }
  } else {
    std::string head = include ? HeaderBlock(*response) : "";
    if (file) {
      // A streamed body is in the file already (its headers go before it);
      // an answer that was not streamed (not 2xx, or no body) is written now.
      bool written = file->opened() ? file->Prepend(head) && file->Write(response->body)
                                    : file->Write(head + response->body);
      if (!file->Close() || !written) {
        std::cerr << "outbound: cannot write " << file->path() << "\n";
        code = kExitWriteError;
      }
    } else if (!(std::cout << head << response->body << std::flush)) {
      std::cerr << "outbound: cannot write the output\n";
      code = kExitWriteError;
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
