// SPDX-License-Identifier: Apache-2.0
#include "h2_fields.h"

#include <array>
#include <cstdint>
#include <cstring>

#include "outbound/internal/ascii.h"

namespace outbound::http::internal::transport {
namespace {

// Each byte a field name may have (a token's, in lower case) is 0, any
// other 1: or-ed over a name, 0 says it is valid.
constexpr std::array<std::uint8_t, 256> NameBytes() {
  std::array<std::uint8_t, 256> bytes{};
  for (int c = 0; c < 256; ++c) {
    auto ch = static_cast<char>(c);
    bool allowed = outbound::internal::IsAsciiLower(ch) || outbound::internal::IsAsciiDigit(ch) ||
                   std::string_view("!#$%&'*+-.^_`|~").find(ch) != std::string_view::npos;
    bytes[c] = allowed ? 0 : 1;
  }
  return bytes;
}
constexpr std::array<std::uint8_t, 256> kNameBytes = NameBytes();

bool ValidValueBytes(const char* p, std::size_t n) {
  for (const char* end = p + n; p != end; ++p) {
    auto c = static_cast<unsigned char>(*p);
    if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
  }
  return true;
}

constexpr bool IsWhitespace(char c) { return c == ' ' || c == '\t'; }

}  // namespace

bool ValidFieldName(std::string_view name) {
  std::uint8_t seen = 0;
  for (char c : name) seen |= kNameBytes[static_cast<unsigned char>(c)];
  return !name.empty() && seen == 0;
}

bool ValidFieldValue(std::string_view value) {
  if (value.empty()) return true;
  if (IsWhitespace(value.front()) || IsWhitespace(value.back())) return false;
  // Eight bytes at a time, the last eight overlapping the word before: a
  // word with no byte below 0x20 and none equal to 0x7f is valid whole; one
  // that has (HTAB is below 0x20) is looked at byte by byte.
  const char* p = value.data();
  std::size_t n = value.size();
  if (n < 8) return ValidValueBytes(p, n);
  auto word_valid = [](const char* at) {
    constexpr std::uint64_t kOnes = 0x0101010101010101;
    constexpr std::uint64_t kHighBits = 0x8080808080808080;
    std::uint64_t word = 0;
    std::memcpy(&word, at, 8);
    std::uint64_t below_space = (word - kOnes * 0x20) & ~word & kHighBits;
    std::uint64_t xor_del = word ^ (kOnes * 0x7f);
    std::uint64_t del = (xor_del - kOnes) & ~xor_del & kHighBits;
    return (below_space | del) == 0 || ValidValueBytes(at, 8);
  };
  for (std::size_t at = 0; at + 8 < n; at += 8) {
    if (!word_valid(p + at)) return false;
  }
  return word_valid(p + n - 8);
}

}  // namespace outbound::http::internal::transport
