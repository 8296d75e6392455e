// SPDX-License-Identifier: Apache-2.0
// outbound/internal/ascii.h
//
// Case and character classes of protocol text (header and field names,
// schemes, hosts, metadata keys, units), byte for byte: one rule for the
// whole library, whatever the program's C locale says.
//
// The C library's tolower, toupper, isalpha and isdigit follow the locale
// the program set: under tr_TR.ISO-8859-9, tolower('I') is 0xFD (dotless
// i), so "X-Request-ID" would not name the field x-request-id. Protocol
// text is ASCII, and its case rules are ASCII's. Internal to the
// library's parts; not for users.
#ifndef OUTBOUND_INTERNAL_ASCII_H_
#define OUTBOUND_INTERNAL_ASCII_H_

#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

namespace outbound::internal {

constexpr bool IsAsciiUpper(char c) noexcept { return c >= 'A' && c <= 'Z'; }
constexpr bool IsAsciiLower(char c) noexcept { return c >= 'a' && c <= 'z'; }
constexpr bool IsAsciiAlpha(char c) noexcept { return IsAsciiUpper(c) || IsAsciiLower(c); }
constexpr bool IsAsciiDigit(char c) noexcept { return c >= '0' && c <= '9'; }

// `c` in lower (upper) case if it is an ASCII letter; any other byte as it is.
constexpr char AsciiLower(char c) noexcept {
  return IsAsciiUpper(c) ? static_cast<char>(c - 'A' + 'a') : c;
}
constexpr char AsciiUpper(char c) noexcept {
  return IsAsciiLower(c) ? static_cast<char>(c - 'a' + 'A') : c;
}

// Whether `a` and `b` are the same text but for the case of ASCII letters.
// Bytes that are equal cost one comparison: names compared are mostly
// written in one case.
constexpr bool EqualsIgnoringAsciiCase(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i] && (AsciiLower(a[i]) != AsciiLower(b[i]))) return false;
  }
  return true;
}

// Whether `text` begins with `prefix`, but for the case of ASCII letters.
constexpr bool StartsWithIgnoringAsciiCase(std::string_view text,
                                           std::string_view prefix) noexcept {
  return text.size() >= prefix.size() &&
         EqualsIgnoringAsciiCase(text.substr(0, prefix.size()), prefix);
}

// `text` without the spaces and tabs around it (HTTP's optional
// whitespace, RFC 9110 §5.6.3).
constexpr std::string_view TrimOws(std::string_view text) noexcept {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// `text` with its ASCII letters in lower (upper) case.
inline std::string AsciiLowered(std::string text) {
  for (char& c : text) c = AsciiLower(c);
  return text;
}
inline std::string AsciiUppered(std::string text) {
  for (char& c : text) c = AsciiUpper(c);
  return text;
}

// Writes `bytes` as lower-case hex digits, two a byte, from `out` on, and
// returns one past the last: `out` has room for 2 * bytes.size() chars, and
// no terminator is written. A byte's pair comes from a table: a trace
// context is written on every attempt.
inline char* WriteHex(std::span<const std::uint8_t> bytes, char* out) {
  static constexpr std::array<char, 512> kPairs = [] {
    constexpr std::string_view kDigits = "0123456789abcdef";
    std::array<char, 512> pairs{};
    for (std::size_t i = 0; i < 256; ++i) {
      pairs[2 * i] = kDigits[i >> 4];
      pairs[2 * i + 1] = kDigits[i & 0xf];
    }
    return pairs;
  }();
  for (std::uint8_t byte : bytes) {
    std::memcpy(out, &kPairs[2 * std::size_t{byte}], 2);
    out += 2;
  }
  return out;
}

}  // namespace outbound::internal

#endif  // OUTBOUND_INTERNAL_ASCII_H_
