#include "outbound/config/http_settings.h"

namespace outbound::config {
namespace {

// Adapts a check on a plain value to Resolver's Check<T>.
template <typename T>
Check<T> Checking(Result<void> (*check)(T)) {
  return [check](const T& value) { return check(value); };
}

}  // namespace

http::Settings ReadHttpSettings(Resolver& r, const std::string& prefix, http::Settings d) {
  http::Settings s = d;
  auto name = [&](const char* field) { return prefix + field; };
  Parser<Duration> duration = ParseDuration;
  Parser<int> integer = ParseInt;
  Parser<double> number = ParseDouble;
  Parser<std::string> file = ReadFile;

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
  s.retry_budget.max_tokens =
      r.Get(name("RETRY_BUDGET_MAX_TOKENS"), integer, std::optional(d.retry_budget.max_tokens),
            Checking(retry::CheckMaxTokens));
  s.retry_budget.token_ratio =
      r.Get(name("RETRY_BUDGET_TOKEN_RATIO"), number, std::optional(d.retry_budget.token_ratio),
            Checking(retry::CheckTokenRatio));
  s.breaker.window = r.Get(name("BREAKER_WINDOW"), integer, std::optional(d.breaker.window),
                           Checking(circuit::CheckWindow));
  s.breaker.probes = r.Get(name("BREAKER_PROBES"), integer, std::optional(d.breaker.probes),
                           Checking(circuit::CheckProbes));
  s.breaker.open_for = r.Get(name("BREAKER_OPEN_FOR"), duration, std::optional(d.breaker.open_for),
                             Checking(circuit::CheckOpenFor));
  s.breaker.probe_timeout =
      r.Get(name("BREAKER_PROBE_TIMEOUT"), duration, std::optional(d.breaker.probe_timeout),
            Checking(circuit::CheckProbeTimeout));
  Parser<http::Transport> transport = [](const std::string& text) -> Result<http::Transport> {
    if (text == "curl") return http::Transport::kCurl;
    if (text == "native") return http::Transport::kNative;
    return Fail(ErrorKind::kInvalidSettings, "must be curl or native");
  };
  s.transport = r.Get(name("TRANSPORT"), transport, std::optional(d.transport),
                      Checking(http::CheckTransport));
  if (s.backoff_max < s.backoff_base && r.Has(name("BACKOFF_BASE")) && r.Has(name("BACKOFF_MAX"))) {
    r.Fail(name("BACKOFF_MAX") + ": must be at least " + name("BACKOFF_BASE"));
  }

  bool https = s.base_url.rfind("https:", 0) == 0;
  if (https) {
    http::TlsSettings tls;
    tls.root_pem = r.Get(name("CA_FILE"), file, std::optional<std::string>(""));
    tls.client_cert_pem = r.Get(name("CERT_FILE"), file, std::optional<std::string>(""));
    tls.client_key_pem = r.Get(name("KEY_FILE"), file, std::optional<std::string>(""));
    if (auto ok = http::CheckTls(tls); !ok) {
      r.Fail(name("CA_FILE") + ", " + name("CERT_FILE") + ", " + name("KEY_FILE") + ": " +
             ok.error().message());
    }
    s.tls = tls;
  } else {
    s.tls.reset();
  }
  return s;
}

}  // namespace outbound::config
