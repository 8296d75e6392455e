// SPDX-License-Identifier: Apache-2.0
#include "outbound/config/http_settings.h"

#include <algorithm>

#include "outbound/internal/ascii.h"
#include "parsers.h"

namespace outbound::config {
namespace {

using internal::Checking;
using internal::ParseOnOff;
using internal::ParseSize;

Result<std::string> ParseText(const std::string& text) { return text; }

// A file's contents, when they are PEM holding a block marked `marker`
// (`what`: "certificate", "private key"); a file that is not is named by
// its path.
Result<std::string> ReadPem(const std::string& path, std::string_view marker,
                            std::string_view what) {
  Result<std::string> contents = ReadFile(path);
  if (!contents) return contents;
  if (contents->find("-----BEGIN ") == std::string::npos) {
    return outbound::Fail(ErrorKind::kInvalidSettings,
                          "\"" + path + "\" is not PEM (no -----BEGIN line)");
  }
  if (contents->find(marker) == std::string::npos) {
    return outbound::Fail(ErrorKind::kInvalidSettings,
                          "\"" + path + "\" holds no PEM " + std::string(what));
  }
  return contents;
}

constexpr const char* kFields[] = {
    "URL",
    "TIMEOUT",
    "ATTEMPT_TIMEOUT",
    "MAX_ATTEMPTS",
    "BACKOFF_BASE",
    "BACKOFF_MAX",
    "RETRY_BUDGET_MAX_TOKENS",
    "RETRY_BUDGET_TOKEN_RATIO",
    "RETRY_BUDGET_MIN_PER_SECOND",
    "BREAKER_WINDOW",
    "BREAKER_PROBES",
    "BREAKER_OPEN_FOR",
    "BREAKER_PROBE_TIMEOUT",
    "BREAKER_INITIAL_OPEN_FOR",
    "BREAKER_CALLS_PER_PROBE",
    "BREAKER_SLOW_CALL",
    "MAX_RESPONSE_BYTES",
    "MAX_ERROR_RESPONSE_BYTES",
    "MAX_CONNECTIONS",
    "CA_FILE",
    "CERT_FILE",
    "KEY_FILE",
    "TRANSPORT",
    "RATE_LIMIT",
    "BULKHEAD",
    "ADAPTIVE_CONCURRENCY",
    "ADAPTIVE_CONCURRENCY_INITIAL_LIMIT",
    "ADAPTIVE_CONCURRENCY_MIN_LIMIT",
    "ADAPTIVE_CONCURRENCY_MAX_LIMIT",
    "ADAPTIVE_CONCURRENCY_SAMPLE_WINDOW",
    "BALANCING",
    "ENDPOINTS",
    "RE_RESOLVE_EVERY",
    "OUTLIER_CONSECUTIVE_FAILURES",
    "OUTLIER_BASE_EJECTION",
    "HEDGING",
    "HEDGING_DELAY",
    "HEDGING_PERCENTILE",
    "HEDGING_MAX_IN_FLIGHT",
    "HEDGING_MAX_EXTRA",
    "FAULTS",
    "GZIP",
    "HTTP2_PRIOR_KNOWLEDGE",
    "MAX_CONNECTION_AGE",
};

}  // namespace

Result<std::string> ReadCertificateFile(const std::string& path) {
  return ReadPem(path, "-----BEGIN CERTIFICATE-----", "certificate");
}

Result<std::string> ReadPrivateKeyFile(const std::string& path) {
  return ReadPem(path, "PRIVATE KEY-----", "private key");
}

namespace internal {

Result<std::optional<http::RateLimit>> ParseRateLimit(const std::string& text) {
  if (text == "off") return std::optional<http::RateLimit>();
  auto bad = [&] {
    return Fail(ErrorKind::kInvalidSettings,
                "\"" + text + "\" is not a rate such as 50/s or 50/s,10 (a burst of 10), or off");
  };
  std::size_t per = text.find("/s");
  if (per == std::string::npos || per == 0) return bad();
  std::string rest = text.substr(per + 2);
  if (!rest.empty() && rest[0] != ',') return bad();
  Result<double> rate = ParseDouble(text.substr(0, per));
  if (!rate) return bad();
  http::RateLimit limit = http::WithRateLimit(*rate);
  if (!rest.empty()) {
    Result<int> burst = ParseInt(rest.substr(1));
    if (!burst) return bad();
    limit.burst = *burst;
  }
  return std::optional(limit);
}

namespace {

// "64" (calls in flight), "64,16,50ms" (and up to 16 waiting 50ms at
// most), or "off".
Result<std::optional<http::Bulkhead>> ParseBulkhead(const std::string& text) {
  if (text == "off") return std::optional<http::Bulkhead>();
  auto bad = [&] {
    return Fail(ErrorKind::kInvalidSettings,
                "\"" + text +
                    "\" is not a bulkhead such as 64 (calls in flight) or 64,16,50ms (16 more "
                    "waiting 50ms at most), or off");
  };
  std::size_t first = text.find(',');
  Result<int> calls = ParseInt(text.substr(0, first));
  if (!calls) return bad();
  http::Bulkhead bulkhead{.max_calls = *calls};
  if (first != std::string::npos) {
    std::size_t second = text.find(',', first + 1);
    if (second == std::string::npos) return bad();
    Result<int> queued = ParseInt(text.substr(first + 1, second - first - 1));
    Result<Duration> wait = ParseDuration(text.substr(second + 1));
    if (!queued || !wait) return bad();
    bulkhead.max_queued = *queued;
    bulkhead.max_wait = *wait;
  }
  return std::optional(bulkhead);
}

// "10.0.0.7:8443,[::1]:8443": IP literals and ports, comma-separated
// (spaces around each are allowed, as in "a:1, b:2").
Result<std::vector<Endpoint>> ParseEndpoints(const std::string& text) {
  std::vector<Endpoint> endpoints;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = std::min(text.find(',', start), text.size());
    std::string one = text.substr(start, comma - start);
    std::size_t first = one.find_first_not_of(" \t");
    one = first == std::string::npos ? ""
                                     : one.substr(first, one.find_last_not_of(" \t") - first + 1);
    std::size_t colon = one.rfind(':');
    Result<int> port = colon == std::string::npos
                           ? Result<int>(Fail(ErrorKind::kInvalidSettings, ""))
                           : ParseInt(one.substr(colon + 1));
    std::string address = colon == std::string::npos ? "" : one.substr(0, colon);
    if (address.size() > 2 && address.front() == '[' && address.back() == ']') {
      address = address.substr(1, address.size() - 2);
    }
    if (!port || *port < 1 || *port > 65535 || address.empty()) {
      return Fail(ErrorKind::kInvalidSettings,
                  "\"" + one + "\" is not an address and port such as 10.0.0.7:8443 or [::1]:8443");
    }
    endpoints.push_back({address, static_cast<std::uint16_t>(*port)});
    start = comma + 1;
  }
  return endpoints;
}

}  // namespace

void ReadBalancing(Resolver& r, const std::string& prefix,
                   std::optional<http::Balancing>& balancing) {
  auto name = [&](const char* field) { return prefix + field; };
  // ENDPOINTS turns it on with a list; BALANCING with the name's addresses.
  bool listed = r.Has(name("ENDPOINTS"));
  bool on = r.Get(name("BALANCING"), Parser<bool>(ParseOnOff),
                  std::optional(balancing.has_value() || listed));
  if (!on) {
    balancing.reset();
    for (const char* field : kBalancingFields) {
      if (std::string_view(field) != "BALANCING" && r.Has(name(field))) {
        r.Fail(name(field) + ": set, but " + name("BALANCING") +
               " is off: set it to on, or unset this");
      }
    }
    return;
  }
  http::Balancing b = balancing.value_or(http::Balancing{});
  b.endpoints = r.Get(name("ENDPOINTS"), Parser<std::vector<Endpoint>>(ParseEndpoints),
                      std::optional(b.endpoints));
  b.re_resolve_every = r.Get(name("RE_RESOLVE_EVERY"), Parser<Duration>(ParseDuration),
                             std::optional(b.re_resolve_every));
  b.outlier_detection.consecutive_failures =
      r.Get(name("OUTLIER_CONSECUTIVE_FAILURES"), Parser<int>(ParseInt),
            std::optional(b.outlier_detection.consecutive_failures));
  b.outlier_detection.base_ejection =
      r.Get(name("OUTLIER_BASE_EJECTION"), Parser<Duration>(ParseDuration),
            std::optional(b.outlier_detection.base_ejection));
  // No variable sets the longest ejection: one base ejection longer than
  // it (5 min by default) raises it, rather than fail a check that no
  // variable could satisfy.
  b.outlier_detection.max_ejection =
      std::max(b.outlier_detection.max_ejection, b.outlier_detection.base_ejection);
  if (auto ok = http::CheckBalancing(b); !ok) {
    std::string named;
    for (const char* field : kBalancingFields) named += (named.empty() ? "" : ", ") + name(field);
    r.Fail(named + ": " + ok.error().message());
  }
  balancing = b;
}

void ReadCallLimits(Resolver& r, const std::string& prefix,
                    std::optional<http::RateLimit>& rate_limit,
                    std::optional<http::Bulkhead>& bulkhead,
                    std::optional<http::AdaptiveConcurrency>& adaptive) {
  auto name = [&](const char* field) { return prefix + field; };
  rate_limit = r.Get(name("RATE_LIMIT"), Parser<std::optional<http::RateLimit>>(ParseRateLimit),
                     std::optional<std::optional<http::RateLimit>>(rate_limit),
                     Check<std::optional<http::RateLimit>>(http::CheckRateLimit));
  bulkhead = r.Get(name("BULKHEAD"), Parser<std::optional<http::Bulkhead>>(ParseBulkhead),
                   std::optional<std::optional<http::Bulkhead>>(bulkhead),
                   Check<std::optional<http::Bulkhead>>(http::CheckBulkhead));

  // ADAPTIVE_CONCURRENCY turns it on; each of its numbers has its own
  // variable, refused while it is off (it would be ignored).
  bool on = r.Get(name("ADAPTIVE_CONCURRENCY"), Parser<bool>(ParseOnOff),
                  std::optional(adaptive.has_value()));
  const char* numbers[] = {"ADAPTIVE_CONCURRENCY_INITIAL_LIMIT", "ADAPTIVE_CONCURRENCY_MIN_LIMIT",
                           "ADAPTIVE_CONCURRENCY_MAX_LIMIT", "ADAPTIVE_CONCURRENCY_SAMPLE_WINDOW"};
  if (!on) {
    adaptive.reset();
    for (const char* field : numbers) {
      if (r.Has(name(field))) {
        r.Fail(name(field) + ": set, but " + name("ADAPTIVE_CONCURRENCY") +
               " is off: set it to on, or unset this");
      }
    }
    return;
  }
  http::AdaptiveConcurrency a = adaptive.value_or(http::AdaptiveConcurrency{});
  Check<int> limit_range = [](const int& n) -> Result<void> {
    if (n < 1 || n > 100000) return Fail(ErrorKind::kInvalidSettings, "must be from 1 to 100000");
    return {};
  };
  Parser<int> integer = ParseInt;
  a.initial_limit = r.Get(name(numbers[0]), integer, std::optional(a.initial_limit), limit_range);
  a.min_limit = r.Get(name(numbers[1]), integer, std::optional(a.min_limit), limit_range);
  a.max_limit = r.Get(name(numbers[2]), integer, std::optional(a.max_limit), limit_range);
  a.sample_window =
      r.Get(name(numbers[3]), Parser<Duration>(ParseDuration), std::optional(a.sample_window));
  if (auto ok = http::CheckAdaptiveConcurrency(a); !ok) {
    std::string named;
    for (const char* field : numbers) named += (named.empty() ? "" : ", ") + name(field);
    r.Fail(named + ": " + ok.error().message());
  }
  adaptive = a;
}

http::TlsSettings ReadTls(Resolver& r, const std::string& prefix,
                          const std::optional<http::TlsSettings>& d) {
  auto name = [&](const char* field) { return prefix + field; };
  http::TlsSettings tls;
  std::string none;
  Parser<std::string> certificate = ReadCertificateFile;
  Parser<std::string> key = ReadPrivateKeyFile;
  tls.root_pem = r.Get(name("CA_FILE"), certificate, std::optional(d ? d->root_pem : none));
  tls.client_cert_pem =
      r.Get(name("CERT_FILE"), certificate, std::optional(d ? d->client_cert_pem : none));
  tls.client_key_pem = r.Get(name("KEY_FILE"), key, std::optional(d ? d->client_key_pem : none));
  // What was given, read or not: a file that did not read is reported as
  // such, not as a certificate without its key.
  bool cert_given = r.Has(name("CERT_FILE")) || (d && !d->client_cert_pem.empty());
  bool key_given = r.Has(name("KEY_FILE")) || (d && !d->client_key_pem.empty());
  bool all_read =
      cert_given != tls.client_cert_pem.empty() && key_given != tls.client_key_pem.empty();
  if (cert_given != key_given) {
    r.Fail(name("CERT_FILE") + ", " + name("KEY_FILE") + ": " +
           "a client certificate needs its key, and a key its certificate");
  } else if (all_read) {  // a file that did not read is said by Get already
    if (auto ok = http::CheckTls(tls); !ok) {
      r.Fail(name("CA_FILE") + ", " + name("CERT_FILE") + ", " + name("KEY_FILE") + ": " +
             ok.error().message());
    }
  }
  return tls;
}

void CheckBackoff(Resolver& r, const std::string& prefix, Duration base, Duration max) {
  if (max >= base) return;
  std::string base_name = prefix + "BACKOFF_BASE";
  std::string max_name = prefix + "BACKOFF_MAX";
  if (r.Has(max_name)) {
    r.Fail(max_name + ": must be at least " + base_name +
           (r.Has(base_name) ? "" : " (unset: its default)"));
  } else if (r.Has(base_name)) {
    r.Fail(base_name + ": must be at most " + max_name + " (unset: its default)");
  }
}

void ReadHedging(Resolver& r, const std::string& prefix, int max_attempts,
                 std::optional<http::Hedging>& hedging) {
  auto name = [&](const char* field) { return prefix + field; };
  // HEDGING turns it on; each of its numbers has its own variable, refused
  // while it is off (it would be ignored), as ADAPTIVE_CONCURRENCY's.
  bool on = r.Get(name("HEDGING"), Parser<bool>(ParseOnOff), std::optional(hedging.has_value()));
  const char* numbers[] = {"HEDGING_DELAY", "HEDGING_PERCENTILE", "HEDGING_MAX_IN_FLIGHT",
                           "HEDGING_MAX_EXTRA"};
  if (!on) {
    hedging.reset();
    for (const char* field : numbers) {
      if (r.Has(name(field))) {
        r.Fail(name(field) + ": set, but " + name("HEDGING") +
               " is off: set it to on, or unset this");
      }
    }
    return;
  }
  // A hedge is one of the call's attempts: with one, hedging would never send one.
  if (max_attempts == 1) {
    r.Fail(name("HEDGING") + ": on, but " + name("MAX_ATTEMPTS") +
           " is 1 and a hedge is an attempt: raise it, or set HEDGING off");
  }
  http::Hedging h = hedging.value_or(http::Hedging{});
  h.delay = r.Get(name(numbers[0]), Parser<Duration>(ParseDuration), std::optional(h.delay));
  // "off" (the default): the fixed delay only.
  Parser<std::optional<double>> percentile =
      [](const std::string& text) -> Result<std::optional<double>> {
    if (text == "off") return std::optional<double>();
    auto value = ParseDouble(text);
    if (!value) return tl::unexpected(value.error());
    return std::optional<double>(*value);
  };
  h.percentile =
      r.Get(name(numbers[1]), percentile, std::optional<std::optional<double>>(h.percentile));
  h.max_attempts_in_flight =
      r.Get(name(numbers[2]), Parser<int>(ParseInt), std::optional(h.max_attempts_in_flight));
  h.max_extra_share =
      r.Get(name(numbers[3]), Parser<double>(ParseDouble), std::optional(h.max_extra_share));
  if (auto ok = http::CheckHedging(h); !ok) {
    std::string named;
    for (const char* field : numbers) named += (named.empty() ? "" : ", ") + name(field);
    r.Fail(named + ": " + ok.error().message());
  }
  hedging = h;
}

}  // namespace internal

std::vector<std::string> HttpSettingsVariables(const std::string& prefix) {
  std::vector<std::string> names;
  for (const char* field : kFields) names.push_back(prefix + field);
  return names;
}

http::Settings ReadHttpSettings(Resolver& r, const std::string& prefix, http::Settings d) {
  http::Settings s = d;
  auto name = [&](const char* field) { return prefix + field; };
  // Any other variable under the prefix is a mistake (a misspelling) that
  // Finish names.
  r.ClaimPrefix(prefix, HttpSettingsVariables(prefix));
  Parser<Duration> duration = ParseDuration;
  Parser<int> integer = ParseInt;
  Parser<double> number = ParseDouble;

  std::optional<std::string> url_fallback;
  if (!d.base_url.empty()) url_fallback = d.base_url;
  s.base_url = r.Get(name("URL"), Parser<std::string>(ParseText), url_fallback,
                     Check<std::string>(http::CheckBaseUrl));
  s.timeout =
      r.Get(name("TIMEOUT"), duration, std::optional(d.timeout), Checking(http::CheckTimeout));
  s.attempt_timeout = r.Get(name("ATTEMPT_TIMEOUT"), duration, std::optional(d.attempt_timeout),
                            Checking(http::CheckAttemptTimeout));
  s.max_attempts = r.Get(name("MAX_ATTEMPTS"), integer, std::optional(d.max_attempts),
                         Checking(http::CheckMaxAttempts));
  s.backoff_base = r.Get(name("BACKOFF_BASE"), duration, std::optional(d.backoff_base),
                         Checking(http::CheckBackoffBase));
  s.backoff_max = r.Get(name("BACKOFF_MAX"), duration, std::optional(d.backoff_max),
                        Checking(http::CheckBackoffMax));
  internal::ReadBudgetAndBreaker(r, prefix, s.retry_budget, s.breaker);
  s.max_response_bytes =
      r.Get(name("MAX_RESPONSE_BYTES"), Parser<std::size_t>(ParseSize),
            std::optional(d.max_response_bytes), Checking(http::CheckMaxResponseBytes));
  s.max_error_response_bytes =
      r.Get(name("MAX_ERROR_RESPONSE_BYTES"), Parser<std::size_t>(ParseSize),
            std::optional(d.max_error_response_bytes), Checking(http::CheckMaxResponseBytes));
  s.max_connections = r.Get(name("MAX_CONNECTIONS"), integer, std::optional(d.max_connections),
                            Checking(http::CheckMaxConnections));
  // The choice of transport went with libcurl: one that is still
  // set would otherwise be ignored in silence.
  if (r.Has(name("TRANSPORT"))) {
    r.Fail(name("TRANSPORT") +
           ": the library has one transport now (libcurl was removed); unset it");
  }
  internal::ReadCallLimits(r, prefix, s.rate_limit, s.bulkhead, s.adaptive_concurrency);
  internal::ReadHedging(r, prefix, s.max_attempts, s.hedging);
  s.faults.enabled =
      r.Get(name("FAULTS"), Parser<bool>(ParseOnOff), std::optional(d.faults.enabled));
  s.gzip = r.Get(name("GZIP"), Parser<bool>(ParseOnOff), std::optional(d.gzip));
  s.http2_prior_knowledge = r.Get(name("HTTP2_PRIOR_KNOWLEDGE"), Parser<bool>(ParseOnOff),
                                  std::optional(d.http2_prior_knowledge));
  s.max_connection_age =
      internal::ReadMaxConnectionAge(r, prefix, d.max_connection_age, http::CheckMaxConnectionAge);
  internal::ReadBalancing(r, prefix, s.balancing);
  internal::CheckBackoff(r, prefix, s.backoff_base, s.backoff_max);

  bool https = outbound::internal::StartsWithIgnoringAsciiCase(s.base_url, "https:");
  if (https) {
    s.tls = internal::ReadTls(r, prefix, d.tls);
    if (s.http2_prior_knowledge) {
      std::string url = "\"" + s.base_url + "\"";
      r.Fail(name("HTTP2_PRIOR_KNOWLEDGE") + ": on, but " +
             (r.Has(name("URL")) ? name("URL") + " is " + url : "the URL is " + url) +
             ": over https, ALPN chooses HTTP/2");
    }
  } else {
    s.tls.reset();
    // A TLS file beside an http URL would be ignored, and the client would
    // run in plain text: each one set is named, with the URL.
    if (outbound::internal::StartsWithIgnoringAsciiCase(s.base_url, "http:")) {
      std::string url = "\"" + s.base_url + "\"";
      std::string said = r.Has(name("URL")) ? name("URL") + " is " + url : "the URL is " + url;
      for (const char* field : {"CA_FILE", "CERT_FILE", "KEY_FILE"}) {
        if (r.Has(name(field))) {
          r.Fail(name(field) + ": set, but " + said +
                 ", which is plain text: TLS needs an https URL");
        }
      }
    }
  }
  return s;
}

}  // namespace outbound::config
