// SPDX-License-Identifier: Apache-2.0
#include "outbound/http/classify.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>

#include "outbound/internal/ascii.h"

namespace outbound::http {

bool SameHeaderName(std::string_view a, std::string_view b) {
  return outbound::internal::EqualsIgnoringAsciiCase(a, b);
}

std::string_view FindHeader(const Headers& headers, std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (SameHeaderName(key, name)) return value;
  }
  return {};
}

namespace {

constexpr std::size_t kSizes = 2 * sizeof(std::uint32_t);

}  // namespace

void ResponseHeaders::Add(std::string_view name, std::string_view value) {
  const std::uint32_t sizes[2] = {static_cast<std::uint32_t>(name.size()),
                                  static_cast<std::uint32_t>(value.size())};
  std::size_t size = kSizes + name.size() + value.size();
  if (text_.size() - used_ < size) text_.resize(std::max(2 * text_.size(), used_ + size));
  char* out = text_.data() + used_;
  std::memcpy(out, sizes, kSizes);
  // An empty view may have no data at all, which memcpy must not be given.
  if (!name.empty()) std::memcpy(out + kSizes, name.data(), name.size());
  if (!value.empty()) std::memcpy(out + kSizes + name.size(), value.data(), value.size());
  used_ += size;
  ++count_;
}

ResponseHeaders::Field ResponseHeaders::Iterator::operator*() const {
  std::uint32_t sizes[2];
  std::memcpy(sizes, text_->data() + at_, kSizes);
  std::string_view field(text_->data() + at_ + kSizes, sizes[0] + sizes[1]);
  return {field.substr(0, sizes[0]), field.substr(sizes[0])};
}

ResponseHeaders::Iterator& ResponseHeaders::Iterator::operator++() {
  std::uint32_t sizes[2];
  std::memcpy(sizes, text_->data() + at_, kSizes);
  at_ += kSizes + sizes[0] + sizes[1];
  return *this;
}

std::string_view ResponseHeaders::Find(std::string_view name) const {
  for (const auto& [key, value] : *this) {
    if (SameHeaderName(key, name)) return value;
  }
  return {};
}

namespace {

// An HTTP-date being read (RFC 9110 5.6.7): exact text, case-sensitive.
class DateReader {
 public:
  explicit DateReader(std::string_view text) : rest_(text) {}

  bool Literal(std::string_view s) {
    if (rest_.substr(0, s.size()) != s) return false;
    rest_.remove_prefix(s.size());
    return true;
  }
  // Exactly `n` digits.
  std::optional<int> Digits(std::size_t n) {
    if (rest_.size() < n) return std::nullopt;
    int value = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (rest_[i] < '0' || rest_[i] > '9') return std::nullopt;
      value = value * 10 + (rest_[i] - '0');
    }
    rest_.remove_prefix(n);
    return value;
  }
  // The index of the name in `names` the text starts with.
  template <std::size_t N>
  std::optional<int> OneOf(const std::array<std::string_view, N>& names) {
    for (std::size_t i = 0; i < N; ++i) {
      if (Literal(names[i])) return static_cast<int>(i);
    }
    return std::nullopt;
  }
  bool AtEnd() const { return rest_.empty(); }

 private:
  std::string_view rest_;
};

constexpr std::array<std::string_view, 7> kDayNames = {"Mon", "Tue", "Wed", "Thu",
                                                       "Fri", "Sat", "Sun"};
constexpr std::array<std::string_view, 7> kLongDayNames = {
    "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"};
constexpr std::array<std::string_view, 12> kMonths = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

// A calendar date and time of day, in seconds since 1970 (negative before):
// 64 bits hold every date a 4-digit year can write, which a
// system_clock::time_point (nanoseconds, up to 2262) does not.
std::optional<std::int64_t> SecondsSinceEpoch(int year, int month, int day, int hour, int minute,
                                              int second) {
  // The weekday the date names is not checked against the date, as other
  // readers of HTTP-dates do not check it either.
  std::chrono::year_month_day date{std::chrono::year(year),
                                   std::chrono::month(static_cast<unsigned>(month)),
                                   std::chrono::day(static_cast<unsigned>(day))};
  // Second 60 is a leap second, which IMF dates may hold.
  if (!date.ok() || hour > 23 || minute > 59 || second > 60) return std::nullopt;
  std::int64_t days = std::chrono::sys_days(date).time_since_epoch().count();
  return days * 86400 + hour * 3600 + minute * 60 + second;
}

struct TimeOfDay {
  int hour, minute, second;
};

// time-of-day = hour ":" minute ":" second, each two digits.
std::optional<TimeOfDay> ReadTime(DateReader& r) {
  auto hour = r.Digits(2);
  if (!hour || !r.Literal(":")) return std::nullopt;
  auto minute = r.Digits(2);
  if (!minute || !r.Literal(":")) return std::nullopt;
  auto second = r.Digits(2);
  if (!second) return std::nullopt;
  return TimeOfDay{*hour, *minute, *second};
}

// IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT".
std::optional<std::int64_t> ReadImfFixdate(DateReader r) {
  if (!r.OneOf(kDayNames) || !r.Literal(", ")) return std::nullopt;
  auto day = r.Digits(2);
  if (!day || !r.Literal(" ")) return std::nullopt;
  auto month = r.OneOf(kMonths);
  if (!month || !r.Literal(" ")) return std::nullopt;
  auto year = r.Digits(4);
  if (!year || !r.Literal(" ")) return std::nullopt;
  auto time = ReadTime(r);
  if (!time || !r.Literal(" GMT") || !r.AtEnd()) return std::nullopt;
  return SecondsSinceEpoch(*year, *month + 1, *day, time->hour, time->minute, time->second);
}

// The obsolete RFC 850 form: "Sunday, 06-Nov-94 08:49:37 GMT". Its
// two-digit year is the latest year with those digits that is not more
// than 50 years after `now_year`, as RFC 9110 5.6.7 says.
std::optional<std::int64_t> ReadRfc850Date(DateReader r, int now_year) {
  if (!r.OneOf(kLongDayNames) || !r.Literal(", ")) return std::nullopt;
  auto day = r.Digits(2);
  if (!day || !r.Literal("-")) return std::nullopt;
  auto month = r.OneOf(kMonths);
  if (!month || !r.Literal("-")) return std::nullopt;
  auto two_digits = r.Digits(2);
  if (!two_digits || !r.Literal(" ")) return std::nullopt;
  auto time = ReadTime(r);
  if (!time || !r.Literal(" GMT") || !r.AtEnd()) return std::nullopt;
  int year = now_year - now_year % 100 + *two_digits;
  if (year > now_year + 50) year -= 100;
  return SecondsSinceEpoch(year, *month + 1, *day, time->hour, time->minute, time->second);
}

// The obsolete asctime form: "Sun Nov  6 08:49:37 1994" (the day padded
// with a space, not a zero).
std::optional<std::int64_t> ReadAsctimeDate(DateReader r) {
  if (!r.OneOf(kDayNames) || !r.Literal(" ")) return std::nullopt;
  auto month = r.OneOf(kMonths);
  if (!month || !r.Literal(" ")) return std::nullopt;
  std::optional<int> day = r.Literal(" ") ? r.Digits(1) : r.Digits(2);
  if (!day || !r.Literal(" ")) return std::nullopt;
  auto time = ReadTime(r);
  if (!time || !r.Literal(" ")) return std::nullopt;
  auto year = r.Digits(4);
  if (!year || !r.AtEnd()) return std::nullopt;
  return SecondsSinceEpoch(*year, *month + 1, *day, time->hour, time->minute, time->second);
}

}  // namespace

std::optional<Duration> ParseRetryAfter(std::string_view value,
                                        std::chrono::system_clock::time_point now) {
  using std::chrono::seconds;
  constexpr std::int64_t kMaxSeconds = std::chrono::duration_cast<seconds>(kMaxRetryAfter).count();
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (value.empty()) return std::nullopt;
  if (value.front() >= '0' && value.front() <= '9') {
    // delay-seconds = 1*DIGIT. Past the longest wait, the exact figure no
    // longer matters, so the count stops growing there (and cannot overflow).
    std::int64_t count = 0;
    for (char c : value) {
      if (c < '0' || c > '9') return std::nullopt;
      count = std::min(count * 10 + (c - '0'), kMaxSeconds);
    }
    return seconds(count);
  }
  // `now` in whole seconds and the nanoseconds past them, split without
  // leaving 64 bits whatever `now` holds.
  constexpr std::int64_t kNanosPerSecond = 1'000'000'000;
  std::int64_t now_ns = now.time_since_epoch().count();
  std::int64_t now_s = now_ns / kNanosPerSecond;
  std::int64_t now_rest = now_ns % kNanosPerSecond;
  if (now_rest < 0) {
    now_s -= 1;
    now_rest += kNanosPerSecond;
  }
  std::optional<std::int64_t> date = ReadImfFixdate(DateReader(value));
  if (!date) date = ReadAsctimeDate(DateReader(value));
  if (!date) {
    std::int64_t now_days = now_s / 86400 - (now_s % 86400 < 0 ? 1 : 0);
    std::chrono::year_month_day today{std::chrono::sys_days(std::chrono::days(now_days))};
    date = ReadRfc850Date(DateReader(value), static_cast<int>(today.year()));
  }
  if (!date) return std::nullopt;
  // Both within a few hundred billion seconds of 1970: no overflow.
  std::int64_t ahead = *date - now_s;
  if (ahead <= 0) return Duration::zero();  // past: now_rest only takes away
  if (ahead > kMaxSeconds) return kMaxRetryAfter;
  Duration wait = seconds(ahead) - std::chrono::nanoseconds(now_rest);
  if (wait <= Duration::zero()) return Duration::zero();
  return std::min(wait, kMaxRetryAfter);
}

Classification DefaultClassify(const Result<Response>& result) {
  using retry::Outcome;
  constexpr auto kSuccess = circuit::Outcome::kSuccess;
  constexpr auto kFailure = circuit::Outcome::kFailure;
  if (!result) {
    if (result.error().kind() == ErrorKind::kTlsUntrusted) return {Outcome::kStop, {}, kFailure};
    return {Outcome::kRetry, {}, kFailure};
  }
  const Response& response = *result;
  auto retry_after = [&] {
    auto wait = ParseRetryAfter(response.header("Retry-After"), response.received_at);
    return wait.value_or(Duration::zero());
  };
  switch (response.status) {
    case 408:
      return {Outcome::kRetry, {}, kSuccess};
    case 429:
      return {Outcome::kRetry, retry_after(), kSuccess};
    case 500:
      return {Outcome::kStop, {}, kFailure};
    case 502:
    case 504:
      return {Outcome::kRetry, {}, kFailure};
    case 503:
      return {Outcome::kRetry, retry_after(), kFailure};
    default:
      if (response.status >= 500) return {Outcome::kStop, {}, kSuccess};
      return {Outcome::kSuccess, {}, kSuccess};
  }
}

}  // namespace outbound::http
