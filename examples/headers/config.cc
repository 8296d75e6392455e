// SPDX-License-Identifier: Apache-2.0
//
// The usage examples of outbound::config's headers, compiled: each header
// quotes the region its `// example:` line names (scripts/check-doc-examples).
#include <iostream>

#include "outbound/config/http_settings.h"
#include "outbound/config/resolver.h"

namespace outbound::examples {

int ResolverExample() {
  // [example resolver]
  config::Resolver r(config::ProcessEnvironment());
  http::Settings s = http::DefaultSettings();
  s.timeout =
      r.Get<Duration>("PAYMENTS_TIMEOUT", config::ParseDuration, s.timeout, http::CheckTimeout);
  s.max_attempts = r.Get<int>("PAYMENTS_MAX_ATTEMPTS", config::ParseInt, s.max_attempts,
                              http::CheckMaxAttempts);
  r.ClaimPrefix("PAYMENTS_");  // any other PAYMENTS_ variable is a mistake
  if (auto done = r.Finish(); !done) {
    std::cerr << done.error().message() << "\n";  // every bad variable, named
    return config::kExitConfig;
  }
  // [end resolver]
  return 0;
}

int Exit(int code, const Error& error) {
  std::cerr << error.message() << "\n";
  return code;
}

int HttpSettingsExample() {
  // [example http-settings]
  config::Resolver env(config::ProcessEnvironment());
  http::Settings payments = config::ReadHttpSettings(env, "PAYMENTS_", http::DefaultSettings());
  if (auto read = env.Finish(); !read) return Exit(config::kExitConfig, read.error());
  // [end http-settings]
  return payments.max_attempts;
}

}  // namespace outbound::examples
