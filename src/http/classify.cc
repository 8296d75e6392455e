#include "outbound/http/classify.h"

#include <curl/curl.h>

#include <cctype>
#include <cstdint>
#include <cstring>
#include <string>

namespace outbound::http {

bool SameHeaderName(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
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
  char prefix[kSizes];
  std::memcpy(prefix, sizes, kSizes);
  text_.append(prefix, kSizes).append(name).append(value);
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

std::optional<Duration> ParseRetryAfter(std::string_view value,
                                        std::chrono::system_clock::time_point now) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (value.empty()) return std::nullopt;
  if (std::isdigit(static_cast<unsigned char>(value.front()))) {
    // delay-seconds = 1*DIGIT. Beyond a day, the exact figure no longer
    // matters: any such wait is longer than a call would make.
    long long seconds = 0;
    for (char c : value) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
      seconds = std::min(seconds * 10 + (c - '0'), 86400LL * 365);
    }
    return std::chrono::seconds(seconds);
  }
  // An HTTP-date; curl_getdate reads IMF-fixdate and the two obsolete forms.
  std::string date(value);
  time_t when = curl_getdate(date.c_str(), nullptr);
  if (when == -1) return std::nullopt;
  auto wait = std::chrono::system_clock::from_time_t(when) - now;
  if (wait < std::chrono::system_clock::duration::zero()) return Duration::zero();
  return std::chrono::duration_cast<Duration>(wait);
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
