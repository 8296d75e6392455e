// SPDX-License-Identifier: Apache-2.0
#include "outbound/config/resolver.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace outbound::config {

Lookup ProcessEnvironment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

Lookup FromMap(std::map<std::string, std::string> variables) {
  return [variables = std::move(variables)](const std::string& name) -> std::optional<std::string> {
    auto it = variables.find(name);
    if (it == variables.end()) return std::nullopt;
    return it->second;
  };
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
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
      ++i;
    if (i == start) return bad();
    double number = std::strtod(text.substr(start, i - start).c_str(), nullptr);
    std::size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
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

Result<int> ParseInt(const std::string& text) {
  errno = 0;
  char* end = nullptr;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < INT32_MIN || value > INT32_MAX) {
    return outbound::Fail(ErrorKind::kInvalidSettings, "\"" + text + "\" is not an integer");
  }
  return static_cast<int>(value);
}

Result<double> ParseDouble(const std::string& text) {
  errno = 0;
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !std::isfinite(value)) {
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
  if (failures_.empty()) return {};
  std::string message;
  for (const std::string& failure : failures_) {
    if (!message.empty()) message += "; ";
    message += failure;
  }
  return outbound::Fail(ErrorKind::kInvalidSettings, message);
}

}  // namespace outbound::config
