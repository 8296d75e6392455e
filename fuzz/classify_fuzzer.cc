// SPDX-License-Identifier: Apache-2.0
// fuzz/classify_fuzzer.cc
//
// Fuzzes http::DefaultClassify, which decides after each attempt whether
// another follows and whether it counts against the dependency. Input
// (fuzz_input.h): the status as a decimal integer, or "error N" for an
// Error of ErrorKind N (taken modulo the number of kinds); then the time the
// headers arrived as Unix seconds (default 2026-11-30T00:00:00Z); then
// header names and values, a field each. Checks:
//   - nothing crashes, and no sanitizer reports undefined behaviour;
//   - a 2xx response is a success, for the retry loop and the breaker;
//   - no decision has a negative retry_after, and only a retry has one at
//     all;
//   - an error is never a success for the retry loop.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include "fuzz_input.h"
#include "outbound/http/classify.h"

namespace outbound::fuzz {
namespace {

constexpr int kMaxHeaders = 32;
// The last ErrorKind, to map any number onto a kind.
constexpr int kErrorKinds = static_cast<int>(ErrorKind::kLocalResource) + 1;
// `received_at` is kept where system_clock (nanoseconds here) holds it.
constexpr long long kEarliest = -2208988800;  // 1900-01-01
constexpr long long kLatest = 7258118400;     // 2200-01-01
constexpr long long kDefault = 1795996800;    // 2026-11-30

// Runs one input and checks every property on it.
void CheckOne(const std::uint8_t* data, std::size_t size) {
  using http::Response;
  FuzzFields fields(data, size);
  std::string first = fields.Next();
  constexpr std::string_view kErrorPrefix = "error ";

  Result<Response> result = Response{};
  if (std::string_view(first).substr(0, kErrorPrefix.size()) == kErrorPrefix) {
    std::string_view number = std::string_view(first).substr(kErrorPrefix.size());
    long long n = FuzzFields::ParseInteger(number).value_or(0) % kErrorKinds;
    auto kind = static_cast<ErrorKind>(n < 0 ? n + kErrorKinds : n);
    result = Fail(kind, "fuzzed");
  } else {
    long long status = FuzzFields::ParseInteger(first).value_or(0);
    result->status = static_cast<int>(std::clamp<long long>(status, std::numeric_limits<int>::min(),
                                                            std::numeric_limits<int>::max()));
  }
  long long received = std::clamp(fields.NextInteger(kDefault), kEarliest, kLatest);
  if (result) {
    result->received_at = std::chrono::system_clock::time_point(std::chrono::seconds(received));
    for (int i = 0; i < kMaxHeaders && !fields.done(); ++i) {
      std::string name = fields.Next();
      result->headers.Add(name, fields.Next());
    }
  }

  http::Classification decision = http::DefaultClassify(result);
  FUZZ_CHECK(decision.retry_after >= Duration::zero());
  if (decision.retry_after > Duration::zero()) {
    FUZZ_CHECK(decision.retry == retry::Outcome::kRetry);
  }
  if (result && result->status >= 200 && result->status <= 299) {
    FUZZ_CHECK(decision.retry == retry::Outcome::kSuccess);
    FUZZ_CHECK(decision.breaker == circuit::Outcome::kSuccess);
  }
  if (!result) FUZZ_CHECK(decision.retry != retry::Outcome::kSuccess);
}

}  // namespace
}  // namespace outbound::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  outbound::fuzz::CheckOne(data, size);
  return 0;
}
