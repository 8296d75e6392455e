// SPDX-License-Identifier: Apache-2.0
// Pieces the `outbound` subcommands share: argument reading, the
// --connect-to network, exit codes, settings from OUTBOUND_* variables.
#ifndef OUTBOUND_TOOLS_OUTBOUND_COMMON_H_
#define OUTBOUND_TOOLS_OUTBOUND_COMMON_H_

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "outbound/error.h"
#include "outbound/http/client.h"
#include "outbound/http/settings.h"
#include "outbound/network.h"
#include "outbound/telemetry/trace.h"

namespace outbound::tool {

// The prefix of the variables the command reads (OUTBOUND_TIMEOUT, ...).
inline constexpr const char* kPrefix = "OUTBOUND_";

// Exit codes, like curl's where curl has one.
inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInvalidRequest = 3;     // curl: URL malformed
inline constexpr int kExitTransport = 7;          // curl: failed to connect
inline constexpr int kExitInvalidResponse = 8;    // curl: weird server reply
inline constexpr int kExitHttpError = 22;         // curl --fail: status >= 400
inline constexpr int kExitWriteError = 23;        // curl: could not write the output
inline constexpr int kExitLocalResource = 27;     // curl: out of memory
inline constexpr int kExitDeadline = 28;          // curl: operation timed out
inline constexpr int kExitCancelled = 42;         // curl: aborted by callback
inline constexpr int kExitTlsUntrusted = 60;      // curl: peer certificate not trusted
inline constexpr int kExitTooLarge = 63;          // curl: maximum file size exceeded
inline constexpr int kExitTooManyRedirects = 47;  // curl: too many redirects
inline constexpr int kExitRejected = 69;          // EX_UNAVAILABLE: the breaker is open
inline constexpr int kExitOriginRefused = 76;     // EX_PROTOCOL: another origin
inline constexpr int kExitConfig = 78;            // EX_CONFIG: bad settings

// `text` written to `path` whole: false, said on stderr, if it was not.
bool WriteFileOrSay(const std::string& path, const std::string& text);

int ExitCodeFor(ErrorKind kind);

// --connect-to HOST:PORT:ADDR:PORT entries; other names resolve as usual.
class ConnectToNetwork final : public Network {
 public:
  // Parses "HOST:PORT:ADDR:PORT"; false if malformed.
  bool Add(const std::string& spec);
  Route Resolve(std::string_view host, std::uint16_t port) const override;

 private:
  struct Entry {
    std::string host;
    std::uint16_t port;
    Route route;
  };
  // A few entries, asked on every attempt: a list compared in place.
  std::vector<Entry> routes_;
};

// scheme://host:port of an absolute URL, or empty.
std::string OriginOf(const std::string& url);

// The path and query of an absolute URL ("/" if it has no path).
std::string TargetOf(const std::string& url);

// Adds "Name: value" to `request`; false if there is no colon.
bool AddHeader(http::Request& request, const std::string& line);

// A client with `settings` dialling through `network`; on failure prints
// why to stderr and returns null (the caller exits 78).
// The client, on the process's clock, `network` and `telemetry` (none by
// default); the error printed and null when the settings are bad.
std::unique_ptr<http::Client> MakeClient(const http::Settings& settings, const Network& network,
                                         const telemetry::Telemetry& telemetry = {});

// Whether `url` is an http or https URL (the scheme in any case).
bool IsHttpUrl(const std::string& url);

// What command-line options set over the OUTBOUND_* variables.
struct SettingOptions {
  std::optional<std::string> ca_file;    // --cacert FILE
  std::optional<std::string> cert_file;  // --cert FILE
  std::optional<std::string> key_file;   // --key FILE
  std::optional<std::string> timeout;    // --timeout DURATION
};

// Settings for `base_url` from the OUTBOUND_* variables, then `options`;
// on bad ones, prints every one to stderr, each named by its variable or
// option, and returns nothing (the caller exits 78). Warns on stderr about
// an OUTBOUND_* variable that no setting reads (a misspelling, or
// OUTBOUND_URL: the URL is the command's argument).
std::optional<http::Settings> SettingsFromEnvironment(const std::string& base_url,
                                                      const SettingOptions& options = {});

// The warnings about OUTBOUND_* variables among `names` that no setting
// reads, one line each, with the nearest known name when one is close.
std::vector<std::string> UnknownVariableWarnings(const std::vector<std::string>& names);

// Writes each ended span to stderr on one line: name, ids, duration,
// status and attributes; `mu` keeps its lines whole among the command's
// own.
class SpanPrinter final : public telemetry::SpanProcessor {
 public:
  explicit SpanPrinter(std::mutex& mu) : mu_(mu) {}
  void OnEnd(telemetry::SpanData&& span) override;

 private:
  std::mutex& mu_;
};

// The bytes -d names: DATA itself, FILE's contents for @FILE, or stdin's
// for @- (as curl reads them). Nothing, with why in *problem, when the
// file cannot be read.
std::optional<std::string> ReadData(const std::string& data, std::string* problem);

// A gRPC call's target, from the URL grpc://HOST:PORT/pkg.Service/Method
// (plain text: HTTP/2 without TLS) or grpcs://HOST:PORT/pkg.Service/Method
// (TLS).
struct GrpcTarget {
  std::string addr;    // HOST:PORT, rpc::Settings::addr
  std::string method;  // "/pkg.Service/Method"
  bool tls = false;    // grpcs
};

// Whether `url` starts with grpc:// or grpcs:// (the scheme in any case).
bool IsGrpcUrl(const std::string& url);

// The target of a grpc or grpcs URL; nothing, with why in *problem, when
// it has no port or its path is not /Service/Method.
std::optional<GrpcTarget> ParseGrpcUrl(const std::string& url, std::string* problem);

}  // namespace outbound::tool

#endif  // OUTBOUND_TOOLS_OUTBOUND_COMMON_H_
