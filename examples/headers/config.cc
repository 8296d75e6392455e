// SPDX-License-Identifier: Apache-2.0
//
// The usage examples of outbound::config's headers, compiled: each header
// quotes the region its `// example:` line names (scripts/check-doc-examples).
#include <iostream>

#include "outbound/config/http_settings.h"
#include "outbound/config/resolver.h"
#include "outbound/config/runtime_file.h"
#include "outbound/http/client.h"

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

// An operator's runtime file controls the payments client; its path is the
// program's own variable: the library reads none.
int RuntimeFileExample(const Runtime& runtime, http::Client& payments) {
  // [example runtime-file]
  config::Resolver env(config::ProcessEnvironment());
  auto path = env.Get<std::string>(
      "APP_RUNTIME_FILE", [](const std::string& text) { return Result<std::string>(text); },
      std::nullopt);
  if (auto read = env.Finish(); !read) return Exit(config::kExitConfig, read.error());
  auto control = config::RuntimeFile::Watch(runtime, path);  // now, then every second
  if (!control) return Exit(config::kExitConfig, control.error());
  config::Subscription held = (*control)->Control("payments", payments);  // before ~payments
  // [end runtime-file]
  return 0;
}

}  // namespace outbound::examples
