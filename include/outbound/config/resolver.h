// SPDX-License-Identifier: Apache-2.0
// outbound/config/resolver.h
//
// Sourcing settings from named variables (the environment's, or a test's map):
// each field is parse -> default -> check, and the resolver collects every
// failure so a program reports them all at once, each by the variable's
// name, and exits 78 (EX_CONFIG).
//
//   config::Resolver r(config::ProcessEnvironment());
//   http::Settings s = http::DefaultSettings();
//   s.timeout = r.Get("PAYMENTS_TIMEOUT", config::ParseDuration, s.timeout, http::CheckTimeout);
//   s.max_attempts = r.Get("PAYMENTS_MAX_ATTEMPTS", config::ParseInt, s.max_attempts,
//                          http::CheckMaxAttempts);
//   if (auto done = r.Finish(); !done) {
//     std::cerr << done.error().message() << "\n";  // every bad variable, named
//     return config::kExitConfig;
//   }
//
// The library never reads the environment by itself: a program passes
// ProcessEnvironment(), a test passes a map.
#ifndef OUTBOUND_CONFIG_RESOLVER_H_
#define OUTBOUND_CONFIG_RESOLVER_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "outbound/clock.h"
#include "outbound/error.h"

namespace outbound::config {

// sysexits.h's EX_CONFIG: what a program exits with on bad configuration.
inline constexpr int kExitConfig = 78;

// Where variables come from: a name's value, or nothing if it is unset.
using Lookup = std::function<std::optional<std::string>(const std::string& name)>;

// The process's environment (getenv). For programs; the library never
// calls it on its own.
Lookup ProcessEnvironment();
// A fixed set of variables, for tests.
Lookup FromMap(std::map<std::string, std::string> variables);

// Parsers: a value, or what is wrong with the text.
template <typename T>
using Parser = std::function<Result<T>(const std::string& text)>;
[[nodiscard]] Result<Duration> ParseDuration(const std::string& text);  // "250ms", "10s", "1m30s"
[[nodiscard]] Result<int> ParseInt(const std::string& text);
[[nodiscard]] Result<double> ParseDouble(const std::string& text);
[[nodiscard]] Result<std::string> ReadFile(const std::string& path);  // a file's contents

template <typename T>
using Check = std::function<Result<void>(const T& value)>;

// Not thread-safe; one per reading of a settings struct.
class Resolver {
 public:
  explicit Resolver(Lookup lookup) : lookup_(std::move(lookup)) {}

  // The variable `name` parsed, or `fallback` when it is unset; then
  // checked. On any failure the failure is recorded and `fallback` (or T{})
  // is returned, so reading goes on and every failure is reported.
  template <typename T>
  T Get(const std::string& name, const Parser<T>& parse, std::optional<T> fallback,
        const Check<T>& check = nullptr) {
    std::optional<std::string> text = lookup_(name);
    if (!text) {
      if (!fallback) {
        failures_.push_back(name + ": must be set");
        return T{};
      }
      return *fallback;
    }
    Result<T> value = parse(*text);
    if (!value) {
      failures_.push_back(name + ": " + value.error().message());
      return fallback.value_or(T{});
    }
    if (check) {
      if (Result<void> ok = check(*value); !ok) {
        failures_.push_back(name + ": " + ok.error().message());
        return fallback.value_or(T{});
      }
    }
    return *value;
  }

  // Whether a variable is set at all.
  bool Has(const std::string& name) const { return lookup_(name).has_value(); }

  // Records a failure found outside Get (a rule on two variables).
  void Fail(std::string failure) { failures_.push_back(std::move(failure)); }

  // Every failure so far in one kInvalidSettings error ("A: ...; B: ..."),
  // or success.
  [[nodiscard]] Result<void> Finish() const;

 private:
  Lookup lookup_;
  std::vector<std::string> failures_;
};

}  // namespace outbound::config

#endif  // OUTBOUND_CONFIG_RESOLVER_H_
