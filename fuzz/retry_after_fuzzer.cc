// SPDX-License-Identifier: Apache-2.0
// fuzz/retry_after_fuzzer.cc
//
// Fuzzes http::ParseRetryAfter, which turns a server's Retry-After value
// into the least wait before the next attempt. Input (fuzz_input.h): the
// header value, then optionally `now` as Unix seconds (default
// 2026-11-30T00:00:00Z). Checks, for every value:
//   - it never crashes, and no sanitizer reports undefined behaviour;
//   - a returned wait is never negative;
//   - delay-seconds (digits only, after SP/HTAB are trimmed) of N ≤ 86400
//     gives exactly N s, and of a larger N at least a day;
//   - a well-formed IMF-fixdate (right weekday, real calendar date) from
//     1970 on is always understood; any understood one gives 0 when not
//     after `now`, the exact difference when at most a day after, and
//     otherwise a wait of at least a day and at most the difference. The
//     date is computed here independently, in whole seconds, so an overflow
//     inside the parser shows as a wrong answer even without UBSan.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz_input.h"
#include "outbound/http/classify.h"

namespace outbound::fuzz {
namespace {

using std::chrono::seconds;
using std::chrono::sys_days;

constexpr long long kDay = 86400;
// `now` is kept where system_clock (nanoseconds here) holds it: 1900-2200.
constexpr long long kEarliestNow = -2208988800;
constexpr long long kLatestNow = 7258118400;
constexpr long long kDefaultNow = 1795996800;  // 2026-11-30T00:00:00Z

std::string_view Trim(std::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  return value;
}

// The value of delay-seconds (1*DIGIT), capped just past a day, or empty.
std::optional<long long> DelaySeconds(std::string_view value) {
  if (value.empty()) return std::nullopt;
  long long n = 0;
  for (char c : value) {
    if (c < '0' || c > '9') return std::nullopt;
    n = std::min(n * 10 + (c - '0'), kDay + 1);
  }
  return n;
}

std::optional<int> Digits(std::string_view text) {
  int n = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n;
}

template <std::size_t N>
std::optional<unsigned> IndexOf(const std::array<std::string_view, N>& names,
                                std::string_view name) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<unsigned>(i);
  }
  return std::nullopt;
}

// An IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT", RFC 9110 §5.6.7) that
// names a real instant, as Unix seconds; empty for anything else.
std::optional<long long> ImfFixdate(std::string_view text) {
  constexpr std::array<std::string_view, 7> kWeekdays = {"Sun", "Mon", "Tue", "Wed",
                                                         "Thu", "Fri", "Sat"};
  constexpr std::array<std::string_view, 12> kMonths = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  constexpr std::string_view kShape = "Www, DD Mmm YYYY hh:mm:ss GMT";
  if (text.size() != kShape.size() || text.substr(3, 2) != ", " || text[7] != ' ' ||
      text[11] != ' ' || text[16] != ' ' || text[19] != ':' || text[22] != ':' ||
      text.substr(25) != " GMT") {
    return std::nullopt;
  }
  auto weekday = IndexOf(kWeekdays, text.substr(0, 3));
  auto month = IndexOf(kMonths, text.substr(8, 3));
  auto day = Digits(text.substr(5, 2));
  auto year = Digits(text.substr(12, 4));
  auto hour = Digits(text.substr(17, 2));
  auto minute = Digits(text.substr(20, 2));
  auto second = Digits(text.substr(23, 2));
  if (!weekday || !month || !day || !year || !hour || !minute || !second) return std::nullopt;
  std::chrono::year_month_day date{std::chrono::year(*year), std::chrono::month(*month + 1),
                                   std::chrono::day(static_cast<unsigned>(*day))};
  if (!date.ok() || *hour > 23 || *minute > 59 || *second > 59) return std::nullopt;
  sys_days days(date);
  if (std::chrono::weekday(days).c_encoding() != *weekday) return std::nullopt;
  return static_cast<long long>(days.time_since_epoch().count()) * kDay + *hour * 3600LL +
         *minute * 60LL + *second;
}

// Runs one input and checks every property on it.
void CheckOne(const std::uint8_t* data, std::size_t size) {
  FuzzFields fields(data, size);
  std::string value = fields.Next();
  long long now_seconds = std::clamp(fields.NextInteger(kDefaultNow), kEarliestNow, kLatestNow);
  std::chrono::system_clock::time_point now{seconds(now_seconds)};

  std::optional<Duration> wait = http::ParseRetryAfter(value, now);
  if (wait) FUZZ_CHECK(*wait >= Duration::zero());

  std::string_view trimmed = Trim(value);
  if (auto n = DelaySeconds(trimmed)) {
    FUZZ_CHECK(wait.has_value());
    if (*n <= kDay) {
      FUZZ_CHECK(*wait == seconds(*n));
    } else {
      FUZZ_CHECK(*wait >= seconds(kDay));
    }
  }

  if (auto date = ImfFixdate(trimmed); date && (wait || *date >= 0)) {
    // Before 1970 a date may be refused (libcurl reads none before 1583):
    // it would be in the past, and a refused Retry-After waits no more.
    FUZZ_CHECK(wait.has_value());
    // Whole seconds: no overflow for any date in 0000-9999.
    long long ahead = *date - now_seconds;
    if (ahead <= 0) {
      FUZZ_CHECK(*wait == Duration::zero());
    } else if (ahead <= kDay) {
      FUZZ_CHECK(*wait == seconds(ahead));
    } else {
      // In seconds: `ahead` in nanoseconds would overflow past 2262.
      FUZZ_CHECK(*wait >= seconds(kDay));
      FUZZ_CHECK(std::chrono::duration_cast<seconds>(*wait).count() <= ahead);
    }
  }
}

}  // namespace
}  // namespace outbound::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  outbound::fuzz::CheckOne(data, size);
  return 0;
}
