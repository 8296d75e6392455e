#include "origin.h"

#include <curl/curl.h>

#include <array>
#include <memory>

namespace outbound::http::internal {
namespace {

struct UrlFree {
  void operator()(CURLU* u) const { curl_url_cleanup(u); }
};
struct StrFree {
  void operator()(char* s) const { curl_free(s); }
};

bool Has(CURLU* url, CURLUPart part) {
  char* value = nullptr;
  bool present = curl_url_get(url, part, &value, 0) == CURLUE_OK && value != nullptr;
  curl_free(value);
  return present;
}

std::string Get(CURLU* url, CURLUPart part, unsigned flags = 0) {
  char* value = nullptr;
  if (curl_url_get(url, part, &value, flags) != CURLUE_OK) return "";
  std::unique_ptr<char, StrFree> owned(value);
  return value;
}

}  // namespace

std::string Origin::ToString() const {
  bool v6 = host.find(':') != std::string::npos;
  return scheme + "://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<ParsedUrl> ParseUrl(const std::string& text) {
  if (text.find_first_of(std::string("\r\n\0 ", 4)) != std::string::npos) {
    return Fail(ErrorKind::kInvalidRequest, "a URL must not hold spaces, CR, LF or NUL");
  }
  std::unique_ptr<CURLU, UrlFree> url(curl_url());
  CURLUcode rc = curl_url_set(url.get(), CURLUPART_URL, text.c_str(), 0);
  if (rc != CURLUE_OK) {
    return Fail(ErrorKind::kInvalidRequest,
                "\"" + text + "\" is not an absolute URL: " + curl_url_strerror(rc));
  }
  ParsedUrl parsed;
  parsed.origin.scheme = Get(url.get(), CURLUPART_SCHEME);
  if (parsed.origin.scheme != "http" && parsed.origin.scheme != "https") {
    return Fail(ErrorKind::kInvalidRequest, "\"" + text + "\" is not an http or https URL");
  }
  parsed.origin.host = Get(url.get(), CURLUPART_HOST);
  if (parsed.origin.host.empty())
    return Fail(ErrorKind::kInvalidRequest, "\"" + text + "\" has no host");
  if (parsed.origin.host.front() == '[') {
    parsed.origin.host = parsed.origin.host.substr(1, parsed.origin.host.size() - 2);
  }
  std::string port = Get(url.get(), CURLUPART_PORT, CURLU_DEFAULT_PORT);
  parsed.origin.port = static_cast<std::uint16_t>(std::stoul(port.empty() ? "0" : port));
  parsed.has_user_info = Has(url.get(), CURLUPART_USER) || Has(url.get(), CURLUPART_PASSWORD);
  parsed.has_query = Has(url.get(), CURLUPART_QUERY);
  parsed.has_fragment = Has(url.get(), CURLUPART_FRAGMENT);
  curl_url_set(url.get(), CURLUPART_FRAGMENT, nullptr, 0);
  parsed.full = Get(url.get(), CURLUPART_URL);
  return parsed;
}

// Characters that cannot change where a request goes: visible ASCII but
// '#' (a fragment) and '\\' (which some parsers read as '/').
constexpr std::array<bool, 256> kPlainPathChars = [] {
  std::array<bool, 256> table{};
  for (int c = 33; c < 127; ++c) table[c] = c != '#' && c != '\\';
  return table;
}();

std::optional<std::string> JoinPlainPath(std::string_view origin, std::string_view target) {
  std::string_view path = target;
  if (path.substr(0, origin.size()) == origin) path.remove_prefix(origin.size());
  if (path.size() < 2 || path[0] != '/' || path[1] == '/') return std::nullopt;
  for (char c : path) {
    if (!kPlainPathChars[static_cast<unsigned char>(c)]) return std::nullopt;
  }
  std::string full;
  full.reserve(origin.size() + path.size());
  full.append(origin).append(path);
  return full;
}

Result<ParsedUrl> ResolveTarget(const Origin& base, std::string_view origin,
                                const std::string& target) {
  if (auto full = JoinPlainPath(origin, target)) {
    bool has_query = full->find('?') != std::string::npos;
    return ParsedUrl{base, false, has_query, false, std::move(*full)};
  }
  if (!target.empty() && target.front() == '/') return ParseUrl(std::string(origin) + target);
  return ParseUrl(target);
}

}  // namespace outbound::http::internal
