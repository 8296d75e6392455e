// SPDX-License-Identifier: Apache-2.0
// Reading a failure-injection scenario (docs/failure-injection.md).
#include "outbound/internal/fault_scenario.h"

#include <charconv>

#include "outbound/internal/ascii.h"

namespace outbound::internal {
namespace {

template <typename T>
bool Number(std::string_view text, T& out) {
  if (text.empty()) return false;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc() && end == text.data() + text.size();
}

std::optional<InjectedFault> ParseAction(std::string_view action) {
  InjectedFault fault;
  if (action == "abort") return fault;
  if (action.starts_with("status:")) {
    fault.kind = InjectedFault::Kind::kStatus;
    if (!Number(action.substr(7), fault.status) || fault.status < 100 || fault.status > 599) {
      return std::nullopt;
    }
    return fault;
  }
  if (action.starts_with("delay:")) {
    fault.kind = InjectedFault::Kind::kDelay;
    std::string_view amount = action.substr(6);
    std::int64_t n = 0;
    if (amount.ends_with("ms") && Number(amount.substr(0, amount.size() - 2), n) && n >= 0 &&
        n <= 3'600'000) {
      fault.delay = std::chrono::milliseconds(n);
      return fault;
    }
    if (amount.ends_with("s") && Number(amount.substr(0, amount.size() - 1), n) && n >= 0 &&
        n <= 3600) {
      fault.delay = std::chrono::seconds(n);
      return fault;
    }
  }
  return std::nullopt;
}

}  // namespace

Result<std::optional<InjectedFault>> ParseFaultScenario(std::string_view scenario,
                                                        std::string_view point) {
  std::optional<InjectedFault> found;
  auto malformed = [] { return Fail(ErrorKind::kInvalidRequest, "malformed fault scenario"); };
  if (TrimOws(scenario).empty()) return malformed();
  while (true) {
    std::size_t end = scenario.find(';');
    std::string_view rule = TrimOws(scenario.substr(0, end));
    std::size_t equals = rule.find('=');
    if (equals == std::string_view::npos) return malformed();
    std::string_view name = TrimOws(rule.substr(0, equals));
    std::string_view rest = TrimOws(rule.substr(equals + 1));
    // The point is compared without regard to case, its scheme too.
    std::string_view scheme = name.substr(0, 5);
    if (!EqualsIgnoringAsciiCase(scheme, "http:") && !EqualsIgnoringAsciiCase(scheme, "grpc:")) {
      return malformed();
    }
    std::size_t comma = rest.find(',');
    auto fault = ParseAction(TrimOws(rest.substr(0, comma)));
    if (!fault) return malformed();
    // The options, each at most once: a percentage, and for a status a
    // Retry-After in whole seconds.
    bool have_percent = false;
    while (comma != std::string_view::npos) {
      rest.remove_prefix(comma + 1);
      comma = rest.find(',');
      std::string_view option = TrimOws(rest.substr(0, comma));
      double percent = 0;
      if (option.ends_with('%') && !have_percent &&
          Number(TrimOws(option.substr(0, option.size() - 1)), percent) && percent >= 0 &&
          percent <= 100) {
        have_percent = true;
        fault->probability = percent / 100;
      } else if (option.starts_with("retry-after:") &&
                 fault->kind == InjectedFault::Kind::kStatus && !fault->retry_after) {
        std::uint32_t seconds = 0;
        if (!Number(option.substr(12), seconds) || seconds > kMaxInjectedRetryAfterSeconds) {
          return malformed();
        }
        fault->retry_after = seconds;
      } else {
        return malformed();
      }
    }
    if (!found && EqualsIgnoringAsciiCase(name, point)) found = fault;
    if (end == std::string_view::npos) break;
    scenario.remove_prefix(end + 1);
  }
  return found;
}

}  // namespace outbound::internal
