#include "common.h"

#include <curl/curl.h>

#include <iostream>

#include "outbound/config/http_settings.h"

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
  std::string host = spec.substr(0, first);
  std::string address = spec.substr(second + 1, last - second - 1);
  if (address.size() > 2 && address.front() == '[' && address.back() == ']') {
    address = address.substr(1, address.size() - 2);
  }
  try {
    int port = std::stoi(spec.substr(first + 1, second - first - 1));
    int to_port = std::stoi(spec.substr(last + 1));
    if (port <= 0 || port > 65535 || to_port <= 0 || to_port > 65535 || host.empty() ||
        address.empty()) {
      return false;
    }
    Route route{Route::Kind::kEndpoint, address, static_cast<std::uint16_t>(to_port)};
    std::erase_if(routes_, [&](const Entry& e) { return e.host == host && e.port == port; });
    routes_.push_back({host, static_cast<std::uint16_t>(port), std::move(route)});
  } catch (...) {
    return false;
  }
  return true;
}

Route ConnectToNetwork::Resolve(std::string_view host, std::uint16_t port) const {
  for (const Entry& e : routes_) {
    if (e.port == port && e.host == host) return e.route;
  }
  return Route{};
}

namespace {

// The parts of an absolute URL, as curl's URL parser reads it: the port is
// the scheme's default when none is written. Empty parts if it does not parse.
struct UrlParts {
  std::string scheme, host, port, path, query;
};

UrlParts SplitUrl(const std::string& url) {
  UrlParts parts;
  CURLU* u = curl_url();
  if (curl_url_set(u, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK) {
    auto get = [u](CURLUPart part, unsigned flags = 0) {
      char* value = nullptr;
      std::string text;
      if (curl_url_get(u, part, &value, flags) == CURLUE_OK && value != nullptr) text = value;
      curl_free(value);
      return text;
    };
    parts = {get(CURLUPART_SCHEME), get(CURLUPART_HOST), get(CURLUPART_PORT, CURLU_DEFAULT_PORT),
             get(CURLUPART_PATH), get(CURLUPART_QUERY)};
  }
  curl_url_cleanup(u);
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

std::unique_ptr<http::Client> MakeClient(const http::Settings& settings, const Network& network) {
  Runtime runtime;
  runtime.network = &network;
  auto client = http::Client::Create(runtime, settings);
  if (!client) {
    std::cerr << "outbound: " << client.error().message() << "\n";
    return nullptr;
  }
  return std::move(*client);
}

std::optional<http::Settings> SettingsFromEnvironment(const std::string& base_url) {
  config::Resolver r(config::ProcessEnvironment());
  http::Settings defaults = http::DefaultSettings();
  defaults.base_url = base_url;
  http::Settings settings = config::ReadHttpSettings(r, "OUTBOUND_", defaults);
  if (auto done = r.Finish(); !done) {
    std::cerr << "outbound: bad configuration: " << done.error().message() << "\n";
    return std::nullopt;
  }
  return settings;
}

}  // namespace outbound::tool
