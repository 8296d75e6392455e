// SPDX-License-Identifier: Apache-2.0
#include "common.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <sstream>

#include "outbound/config/http_settings.h"
#include "outbound/config/resolver.h"
#include "outbound/internal/ascii.h"

namespace outbound::tool {

int ExitCodeFor(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kCancelled:
      return kExitCancelled;
    case ErrorKind::kDeadline:
      return kExitDeadline;
    case ErrorKind::kTransport:
      return kExitTransport;
    case ErrorKind::kTlsUntrusted:
      return kExitTlsUntrusted;
    case ErrorKind::kRejected:
      return kExitRejected;
    case ErrorKind::kOriginRefused:
      return kExitOriginRefused;
    case ErrorKind::kResponseTooLarge:
      return kExitTooLarge;
    case ErrorKind::kInvalidResponse:
      return kExitInvalidResponse;
    case ErrorKind::kInvalidRequest:
      return kExitInvalidRequest;
    case ErrorKind::kInvalidSettings:
      return kExitConfig;
    case ErrorKind::kTooManyRedirects:
      return kExitTooManyRedirects;
    case ErrorKind::kLocalResource:
      return kExitLocalResource;
    case ErrorKind::kHttpStatus:
      return kExitHttpError;
  }
  return 1;
}

bool ConnectToNetwork::Add(const std::string& spec) {
  // HOST:PORT:ADDR:PORT, ADDR possibly a bracketed IPv6 literal.
  auto first = spec.find(':');
  if (first == std::string::npos) return false;
  auto second = spec.find(':', first + 1);
  auto last = spec.rfind(':');
  if (second == std::string::npos || last <= second) return false;
  // Lower case, as the URL's host is by the time it is resolved: names are
  // the same in any case.
  std::string host = spec.substr(0, first);
  for (char& c : host) c = outbound::internal::AsciiLower(c);
  std::string address = spec.substr(second + 1, last - second - 1);
  if (address.size() > 2 && address.front() == '[' && address.back() == ']') {
    address = address.substr(1, address.size() - 2);
  }
  int port = config::ParseInt(spec.substr(first + 1, second - first - 1)).value_or(0);
  int to_port = config::ParseInt(spec.substr(last + 1)).value_or(0);
  if (port <= 0 || port > 65535 || to_port <= 0 || to_port > 65535 || host.empty() ||
      address.empty()) {
    return false;
  }
  Route route{Route::Kind::kEndpoint, {Endpoint{address, static_cast<std::uint16_t>(to_port)}}};
  std::erase_if(routes_, [&](const Entry& e) { return e.host == host && e.port == port; });
  routes_.push_back({host, static_cast<std::uint16_t>(port), std::move(route)});
  return true;
}

bool WriteFileOrSay(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) std::cerr << "outbound: cannot write " << path << "\n";
  return static_cast<bool>(out);
}

Route ConnectToNetwork::Resolve(std::string_view host, std::uint16_t port) const {
  for (const Entry& e : routes_) {
    if (e.port == port && e.host == host) return e.route;
  }
  return Route{};
}

namespace {

// The parts of an absolute URL: the port is the scheme's default when none
// is written (http and https). Empty parts if it is not an absolute URL. The client
// checks the URL itself (Client::Create, Request): this only splits it.
struct UrlParts {
  std::string scheme, host, port, path, query;
};

UrlParts SplitUrl(const std::string& url) {
  UrlParts parts;
  std::size_t colon_slashes = url.find("://");
  if (colon_slashes == std::string::npos || colon_slashes == 0) return parts;
  std::string scheme = outbound::internal::AsciiLowered(url.substr(0, colon_slashes));
  std::size_t authority_start = colon_slashes + 3;
  std::size_t authority_end = url.find_first_of("/?#", authority_start);
  if (authority_end == std::string::npos) authority_end = url.size();
  std::string authority = url.substr(authority_start, authority_end - authority_start);
  if (std::size_t at = authority.rfind('@'); at != std::string::npos) authority.erase(0, at + 1);
  std::string host = authority, port;
  std::size_t bracket = authority.rfind(']');
  std::size_t port_colon = authority.rfind(':');
  if (port_colon != std::string::npos && (bracket == std::string::npos || port_colon > bracket)) {
    host = authority.substr(0, port_colon);
    port = authority.substr(port_colon + 1);
  }
  if (host.empty()) return parts;
  if (port.empty() && scheme == "https") port = "443";
  if (port.empty() && scheme == "http") port = "80";
  std::string rest = url.substr(authority_end);
  rest = rest.substr(0, rest.find('#'));
  std::size_t question = rest.find('?');
  parts = {scheme, host, port, rest.substr(0, question),
           question == std::string::npos ? "" : rest.substr(question + 1)};
  return parts;
}

}  // namespace

std::string OriginOf(const std::string& url) {
  UrlParts parts = SplitUrl(url);
  if (parts.scheme.empty() || parts.host.empty() || parts.port.empty()) return "";
  return parts.scheme + "://" + parts.host + ":" + parts.port;
}

std::string TargetOf(const std::string& url) {
  UrlParts parts = SplitUrl(url);
  std::string target = parts.path.empty() ? "/" : parts.path;
  if (!parts.query.empty()) target += "?" + parts.query;
  return target;
}

bool AddHeader(http::Request& request, const std::string& line) {
  auto colon = line.find(':');
  if (colon == std::string::npos) return false;
  std::string value = line.substr(colon + 1);
  value.erase(0, value.find_first_not_of(' '));
  request.Header(line.substr(0, colon), value);
  return true;
}

std::unique_ptr<http::Client> MakeClient(const http::Settings& settings, const Network& network,
                                         const telemetry::Telemetry& telemetry) {
  Runtime runtime;
  runtime.network = &network;
  runtime.telemetry = telemetry;
  auto client = http::Client::Create(runtime, settings);
  if (!client) {
    std::cerr << "outbound: " << client.error().message() << "\n";
    return nullptr;
  }
  return std::move(*client);
}

bool IsHttpUrl(const std::string& url) {
  std::string scheme = outbound::internal::AsciiLowered(url.substr(0, url.find(':')));
  return url.find("://") == scheme.size() && (scheme == "http" || scheme == "https");
}

namespace {

// The variables the command reads: every setting's but the URL's.
std::vector<std::string> HttpKnownVariables() {
  std::vector<std::string> known = config::HttpSettingsVariables(kPrefix);
  std::erase(known, std::string(kPrefix) + "URL");
  return known;
}

}  // namespace

std::vector<std::string> UnknownVariableWarnings(const std::vector<std::string>& names) {
  std::vector<std::string> known = HttpKnownVariables();
  std::vector<std::string> warnings;
  for (const std::string& name : names) {
    if (name.rfind(kPrefix, 0) != 0) continue;
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    if (name == std::string(kPrefix) + "URL") {
      warnings.push_back(name + " is not read: the URL is the command's argument");
      continue;
    }
    std::string warning = name + " is not a variable outbound reads";
    if (auto meant = config::NearestName(name, known, kPrefix)) {
      warning += "; did you mean " + *meant + "?";
    }
    warnings.push_back(std::move(warning));
  }
  return warnings;
}

std::optional<http::Settings> SettingsFromEnvironment(const std::string& base_url,
                                                      const SettingOptions& options) {
  // An unknown variable is warned about, not refused: a shell's
  // environment is the user's, not the command's alone.
  config::Lookup process = config::ProcessEnvironment();
  for (const std::string& warning :
       UnknownVariableWarnings(process.Names().value_or(std::vector<std::string>{}))) {
    std::cerr << "outbound: warning: " << warning << "\n";
  }

  // OUTBOUND_URL is not read: the URL is the command's argument. (A Lookup
  // of a function alone, so the resolver does not refuse what was warned
  // about above.)
  config::Resolver env([process](const std::string& name) -> std::optional<std::string> {
    if (name == std::string(kPrefix) + "URL") return std::nullopt;
    return process(name);
  });
  http::Settings defaults = http::DefaultSettings();
  defaults.base_url = base_url;
  http::Settings settings = config::ReadHttpSettings(env, kPrefix, defaults);

  // The options, over the variables, each named by its option.
  std::map<std::string, std::string> given;
  if (options.ca_file) given["--cacert"] = *options.ca_file;
  if (options.cert_file) given["--cert"] = *options.cert_file;
  if (options.key_file) given["--key"] = *options.key_file;
  if (options.timeout) given["--timeout"] = *options.timeout;
  config::Resolver flags(config::FromMap(given));
  settings.timeout =
      flags.Get("--timeout", config::Parser<Duration>(config::ParseDuration),
                std::optional(settings.timeout), config::Check<Duration>(http::CheckTimeout));
  if (settings.tls) {
    config::Parser<std::string> certificate = config::ReadCertificateFile;
    config::Parser<std::string> key = config::ReadPrivateKeyFile;
    http::TlsSettings& tls = *settings.tls;
    tls.root_pem = flags.Get("--cacert", certificate, std::optional(tls.root_pem));
    tls.client_cert_pem = flags.Get("--cert", certificate, std::optional(tls.client_cert_pem));
    tls.client_key_pem = flags.Get("--key", key, std::optional(tls.client_key_pem));
    if ((options.cert_file || options.key_file) &&
        tls.client_cert_pem.empty() != tls.client_key_pem.empty()) {
      flags.Fail("--cert, --key: a client certificate needs its key, and a key its certificate");
    }
  } else if (base_url.rfind("http:", 0) == 0) {
    // As the variables: TLS files beside an http URL would be ignored.
    for (const char* option : {"--cacert", "--cert", "--key"}) {
      if (flags.Has(option)) {
        flags.Fail(std::string(option) + ": set, but the URL is \"" + base_url +
                   "\", which is plain text: TLS needs an https URL");
      }
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

void SpanPrinter::OnEnd(telemetry::SpanData&& span) {
  std::lock_guard lock(mu_);
  std::cerr << "span " << span.name << " trace " << span.context.trace_id.Hex() << " span "
            << span.context.span_id.Hex() << " "
            << std::chrono::duration<double, std::milli>(span.end - span.start).count() << " ms "
            << telemetry::ToString(span.status);
  for (const telemetry::Attribute& attribute : span.attributes) {
    std::cerr << " " << attribute.key.text() << "=" << telemetry::ToString(attribute.value);
  }
  std::cerr << "\n";
}

std::optional<std::string> ReadData(const std::string& data, std::string* problem) {
  if (data.empty() || data[0] != '@') return data;
  std::string path = data.substr(1);
  std::ostringstream bytes;
  if (path == "-") {
    bytes << std::cin.rdbuf();
    return bytes.str();
  }
  // A directory opens as a file that reads nothing: it would go as an empty body.
  std::error_code ignored;
  if (std::filesystem::is_directory(path, ignored)) {
    *problem = "cannot read " + path + ": it is a directory";
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *problem = "cannot read " + path;
    return std::nullopt;
  }
  bytes << in.rdbuf();
  return bytes.str();
}

namespace {

std::string Lower(std::string text) { return outbound::internal::AsciiLowered(std::move(text)); }

}  // namespace

bool IsGrpcUrl(const std::string& url) {
  std::string scheme = Lower(url.substr(0, url.find(':')));
  return url.find("://") == scheme.size() && (scheme == "grpc" || scheme == "grpcs");
}

std::optional<GrpcTarget> ParseGrpcUrl(const std::string& url, std::string* problem) {
  auto bad = [&](const std::string& why) -> std::optional<GrpcTarget> {
    *problem = "\"" + url + "\" " + why;
    return std::nullopt;
  };
  if (!IsGrpcUrl(url)) return bad("is not a grpc or grpcs URL");
  std::size_t authority_start = url.find("://") + 3;
  std::size_t slash = url.find('/', authority_start);
  std::string addr = url.substr(authority_start, slash - authority_start);
  std::size_t bracket = addr.rfind(']');
  std::size_t colon = addr.rfind(':');
  if (addr.empty() || colon == std::string::npos ||
      (bracket != std::string::npos && colon < bracket) || colon + 1 == addr.size() || colon == 0) {
    return bad("has no HOST:PORT (gRPC has no default port)");
  }
  // One method by its full name, as gRPC sends it in :path.
  std::string method = slash == std::string::npos ? "" : url.substr(slash);
  std::size_t second = method.find('/', 1);
  if (method.size() < 4 || second == std::string::npos || second == 1 ||
      second + 1 == method.size() || method.find_first_of("/?#", second + 1) != std::string::npos) {
    return bad("does not name a method: its path must be /package.Service/Method");
  }
  return GrpcTarget{addr, method, Lower(url.substr(0, url.find(':'))) == "grpcs"};
}

}  // namespace outbound::tool
