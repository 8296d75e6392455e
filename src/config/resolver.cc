// SPDX-License-Identifier: Apache-2.0
#include "outbound/config/resolver.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

#include "outbound/internal/ascii.h"
#include "outbound/internal/problems.h"

namespace outbound::config {

Lookup ProcessEnvironment() {
  return Lookup(
      [](const std::string& name) -> std::optional<std::string> {
        const char* value = std::getenv(name.c_str());
        if (value == nullptr) return std::nullopt;
        return std::string(value);
      },
      [] {
        std::vector<std::string> names;
        for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
          std::string_view variable(*entry);
          names.emplace_back(variable.substr(0, variable.find('=')));
        }
        return names;
      });
}

Lookup FromMap(std::map<std::string, std::string> variables) {
  auto shared = std::make_shared<const std::map<std::string, std::string>>(std::move(variables));
  return Lookup(
      [shared](const std::string& name) -> std::optional<std::string> {
        auto it = shared->find(name);
        if (it == shared->end()) return std::nullopt;
        return it->second;
      },
      [shared] {
        std::vector<std::string> names;
        for (const auto& [name, value] : *shared) names.push_back(name);
        return names;
      });
}

namespace {

// Edits from `a` to `b`: a letter added, dropped or changed, or two
// neighbours swapped (the optimal string alignment distance).
std::size_t Distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

std::string_view After(std::string_view name, std::string_view prefix) {
  return name.starts_with(prefix) ? name.substr(prefix.size()) : name;
}

}  // namespace

std::optional<std::string> NearestName(std::string_view name, const std::vector<std::string>& known,
                                       std::string_view prefix) {
  std::string_view typed = After(name, prefix);
  // Edits are counted without regard to case: a name typed in another case
  // is 0 edits from the setting it spells, the likeliest meaning of all.
  std::string typed_upper = outbound::internal::AsciiUppered(std::string(typed));
  const std::string* nearest = nullptr;
  std::size_t best = 0;
  for (const std::string& candidate : known) {
    std::string_view meant = After(candidate, prefix);
    if (typed == meant) continue;  // the name itself: not a misspelling
    std::size_t d = Distance(typed_upper, outbound::internal::AsciiUppered(std::string(meant)));
    if (d > 3 || 2 * d >= meant.size()) continue;
    if (nearest == nullptr || d < best) {
      nearest = &candidate;
      best = d;
    }
  }
  if (nearest == nullptr) return std::nullopt;
  return *nearest;
}

void Resolver::ClaimPrefix(const std::string& prefix, const std::vector<std::string>& known) {
  claimed_[prefix].insert(known.begin(), known.end());
}

Result<Duration> ParseDuration(const std::string& text) {
  // One or more <number><unit>, as Go's time.ParseDuration: ns us ms s m h.
  static constexpr std::pair<std::string_view, std::int64_t> kUnits[] = {
      {"ns", 1},           {"us", 1000},         {"ms", 1000000},
      {"s", 1000000000LL}, {"m", 60000000000LL}, {"h", 3600000000000LL}};
  auto bad = [&] {
    return outbound::Fail(ErrorKind::kInvalidSettings,
                          "\"" + text + "\" is not a duration such as 250ms, 10s or 1m30s");
  };
  if (text.empty()) return bad();
  std::size_t i = 0;
  double total = 0;
  while (i < text.size()) {
    std::size_t start = i;
    while (i < text.size() && (outbound::internal::IsAsciiDigit(text[i]) || text[i] == '.')) ++i;
    if (i == start) return bad();
    // The whole run of digits and points is one number ("1..5" is none),
    // read with a point whatever the C locale says.
    double number = 0;
    auto [end, error] = std::from_chars(text.data() + start, text.data() + i, number);
    if (error != std::errc() || end != text.data() + i) return bad();
    std::size_t unit_start = i;
    while (i < text.size() && outbound::internal::IsAsciiAlpha(text[i])) ++i;
    std::string_view unit(text.data() + unit_start, i - unit_start);
    bool known = false;
    for (const auto& [name, nanos] : kUnits) {
      if (unit == name) {
        total += number * static_cast<double>(nanos);
        known = true;
      }
    }
    if (!known) return bad();
  }
  if (total > 1e18) return bad();
  return Duration(static_cast<Duration::rep>(std::llround(total)));
}

// Both read the whole text or fail, with no sign but "-", no space, and a
// point as the decimal separator whatever the C locale says.
Result<int> ParseInt(const std::string& text) {
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    return outbound::Fail(ErrorKind::kInvalidSettings, "\"" + text + "\" is not an integer");
  }
  return value;
}

Result<double> ParseDouble(const std::string& text) {
  double value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() ||
      !std::isfinite(value)) {
    return outbound::Fail(ErrorKind::kInvalidSettings, "\"" + text + "\" is not a number");
  }
  return value;
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return outbound::Fail(ErrorKind::kInvalidSettings, "cannot read \"" + path + "\"");
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

Result<void> Resolver::Finish() const {
  std::vector<std::string> failures = failures_;
  std::optional<std::vector<std::string>> names;
  if (!claimed_.empty()) names = lookup_.Names();
  if (names) {
    std::sort(names->begin(), names->end());
    names->erase(std::unique(names->begin(), names->end()), names->end());
    for (const std::string& name : *names) {
      if (read_.contains(name)) continue;
      // The names the claims it falls under know, and those read under
      // them: what it may misspell.
      bool claimed = false, known = false;
      std::string prefix;
      std::vector<std::string> candidates;
      for (const auto& [claim, claim_known] : claimed_) {
        if (!name.starts_with(claim)) continue;
        if (!claimed || claim.size() < prefix.size()) prefix = claim;
        claimed = true;
        known = known || claim_known.contains(name);
        candidates.insert(candidates.end(), claim_known.begin(), claim_known.end());
        for (const std::string& read : read_) {
          if (read.starts_with(claim)) candidates.push_back(read);
        }
      }
      if (!claimed || known) continue;
      std::sort(candidates.begin(), candidates.end());
      std::string failure = name + ": not a setting";
      if (auto meant = NearestName(name, candidates, prefix)) {
        failure += "; did you mean " + *meant + "?";
      }
      failures.push_back(std::move(failure));
    }
  }
  return outbound::internal::Refuse(failures);
}

}  // namespace outbound::config
