// SPDX-License-Identifier: Apache-2.0
//
// docs/middleware.md's blocks, compiled (scripts/check-doc-examples).
#include <string>

#include "outbound/http/auth.h"
#include "outbound/http/settings.h"

namespace outbound::docs {

// A secret store of the program's own.
struct Vault {
  std::string Current() { return "token"; }
  std::string Renew() { return "fresh token"; }
};

void CredentialsExample(http::Settings& settings, Vault& vault) {
  // [example credentials]
  settings.attempt_middleware.push_back(http::WithBearerToken(
      [&vault](bool refresh) { return refresh ? vault.Renew() : vault.Current(); }));
  settings.attempt_middleware.push_back(http::WithBasicAuth("user", "password"));
  // [end credentials]
}

void RateLimitExample(http::Settings& settings) {
  // [example rate-limit]
  settings.rate_limit = http::WithRateLimit(50, /*burst=*/10);
  // [end rate-limit]
}

void RequestLoggingExample(http::Settings& settings) {
  // [example request-logging]
  settings.request_logging = true;
  // [end request-logging]
}

}  // namespace outbound::docs
