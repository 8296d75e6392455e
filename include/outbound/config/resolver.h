// SPDX-License-Identifier: Apache-2.0
// outbound/config/resolver.h
//
// Sourcing settings from named variables (the environment's, or a test's map):
// each field is parse -> default -> check, and the resolver collects every
// failure so a program reports them all at once, each by the variable's
// name, and exits 78 (EX_CONFIG). A variable under a prefix the program
// claimed that nothing read is a failure too, named with the setting it
// most likely misspells ("PAYMENTS_TIMOUT: not a setting; did you mean
// PAYMENTS_TIMEOUT?"): ReadHttpSettings claims its prefix.
//
// example: examples/headers/config.cc#resolver
//   config::Resolver r(config::ProcessEnvironment());
//   http::Settings s = http::DefaultSettings();
//   s.timeout =
//       r.Get<Duration>("PAYMENTS_TIMEOUT", config::ParseDuration, s.timeout, http::CheckTimeout);
//   s.max_attempts = r.Get<int>("PAYMENTS_MAX_ATTEMPTS", config::ParseInt, s.max_attempts,
//                               http::CheckMaxAttempts);
//   r.ClaimPrefix("PAYMENTS_");  // any other PAYMENTS_ variable is a mistake
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
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "outbound/clock.h"
#include "outbound/error.h"

namespace outbound::config {

// sysexits.h's EX_CONFIG: what a program exits with on bad configuration.
inline constexpr int kExitConfig = 78;

// A function from a variable's name to its value (nothing if unset), other
// than `Self`.
template <typename F, typename Self>
concept NameToValue = !std::is_same_v<std::remove_cvref_t<F>, Self> &&
                      std::is_invocable_r_v<std::optional<std::string>, F&, const std::string&>;

// Where variables come from: a name's value (nothing if it is unset) and,
// when the source can say, the names of all its variables, so that
// Resolver::Finish can name the ones under a claimed prefix that nothing
// read. ProcessEnvironment() and FromMap() list their names; a Lookup made
// of a function alone (a lambda, say, that hides or renames variables)
// cannot, and then Finish looks for no unknown variables.
class Lookup {
 public:
  using Get = std::function<std::optional<std::string>(const std::string& name)>;
  using List = std::function<std::vector<std::string>()>;

  // A source that can list its variables' names.
  Lookup(Get get, List list) : get_(std::move(get)), list_(std::move(list)) {}
  // Any function from a name to its value: a source that cannot list.
  template <NameToValue<Lookup> F>
  Lookup(F get) : get_(std::move(get)) {}  // NOLINT: implicit, as the function it was

  // The variable's value, or nothing if it is unset.
  std::optional<std::string> operator()(const std::string& name) const { return get_(name); }
  // The names of every variable the source has, or nothing if it cannot
  // say.
  std::optional<std::vector<std::string>> Names() const {
    if (!list_) return std::nullopt;
    return list_();
  }

 private:
  Get get_;
  List list_;
};

// The process's environment (getenv; its names from `environ`, read when
// asked: Names, Finish). For programs; the library never calls it on its
// own.
Lookup ProcessEnvironment();
// A fixed set of variables, for tests.
Lookup FromMap(std::map<std::string, std::string> variables);

// For "did you mean": the one of `known` that `name` most likely
// misspells, if any: at most 3 edits away (a letter added, dropped or
// changed, or two neighbours swapped; a letter in another case is no edit)
// and fewer than half the letters of the known name, counting only what
// follows `prefix`, which all of them share ("PAYMENTS_TIMOUT" and
// "PAYMENTS_timeout" are "PAYMENTS_TIMEOUT"; "PAYMENTS_FOO" is no
// "PAYMENTS_URL"). The first such name nearest to `name`.
std::optional<std::string> NearestName(std::string_view name, const std::vector<std::string>& known,
                                       std::string_view prefix = "");

// Parsers: a value, or what is wrong with the text.
template <typename T>
using Parser = std::function<Result<T>(const std::string& text)>;
[[nodiscard]] Result<Duration> ParseDuration(const std::string& text);  // "250ms", "10s", "1m30s"
// The whole text or an error: no space, no "+", nothing after the number,
// and a point as the decimal separator whatever the C locale says.
[[nodiscard]] Result<int> ParseInt(const std::string& text);
[[nodiscard]] Result<double> ParseDouble(const std::string& text);    // finite
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
    read_.insert(name);
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

  // Whether a variable is set at all. Asking reads it: it is not unknown.
  bool Has(const std::string& name) const {
    read_.insert(name);
    return lookup_(name).has_value();
  }

  // Records a failure found outside Get (a rule on two variables).
  void Fail(std::string failure) { failures_.push_back(std::move(failure)); }

  // Claims every variable whose name starts with `prefix`: one that
  // nothing read (with Get or Has, before Finish) and that is not among
  // `known` (full names) is a mistake, which Finish names with the known
  // or read name it most likely misspells. ReadHttpSettings claims its
  // prefix with every variable it knows, so a program that reads a
  // variable of its own under that prefix reads it before Finish. Only a
  // Lookup that can list its names (ProcessEnvironment, FromMap) shows the
  // unknown ones. A name under two claimed prefixes ("PAYMENTS_",
  // "PAYMENTS_LEDGER_") is unknown only if neither knows it.
  void ClaimPrefix(const std::string& prefix, const std::vector<std::string>& known = {});

  // Every failure so far in one kInvalidSettings error ("A: ...; B: ..."),
  // then every unknown variable under a claimed prefix, by name
  // ("PAYMENTS_TIMOUT: not a setting; did you mean PAYMENTS_TIMEOUT?"), or
  // success.
  [[nodiscard]] Result<void> Finish() const;

 private:
  Lookup lookup_;
  std::vector<std::string> failures_;
  std::map<std::string, std::set<std::string>> claimed_;  // prefix -> known names
  mutable std::set<std::string> read_;                    // by Get and Has
};

}  // namespace outbound::config

#endif  // OUTBOUND_CONFIG_RESOLVER_H_
