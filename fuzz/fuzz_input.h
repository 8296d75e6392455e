// SPDX-License-Identifier: Apache-2.0
// fuzz/fuzz_input.h
//
// What every fuzz target shares: a splitter that reads a fuzzer's bytes as
// fields, and the check that stops the run when a property fails.
//
// An input is a list of fields, one a line. Within a field, `\xHH` (two hex
// digits) stands for the byte 0xHH, so a seed kept as a text file can still
// hold a LF or a NUL; every other byte, a lone backslash included, stands
// for itself. The seeds under fuzz/corpus/ are written in this form:
//
//   FuzzFields fields(data, size);
//   std::string method = fields.Next();  // "GET"
//   std::string url = fields.Next();     // "/charges/1"
//   while (!fields.done()) headers.emplace_back(fields.Next(), fields.Next());
//
// We use this rather than clang's FuzzedDataProvider because the targets
// also build with g++ (as corpus replays), where clang's headers are absent,
// and because line-based seeds can be read and written by hand.
#ifndef OUTBOUND_FUZZ_FUZZ_INPUT_H_
#define OUTBOUND_FUZZ_FUZZ_INPUT_H_

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

namespace outbound::fuzz {

class FuzzFields {
 public:
  FuzzFields(const std::uint8_t* data, std::size_t size)
      : rest_(reinterpret_cast<const char*>(data), size) {}

  // True once every byte has been read: Next() then returns "".
  bool done() const { return rest_.empty(); }

  // The next field, its escapes decoded.
  std::string Next() {
    std::size_t end = rest_.find('\n');
    std::string_view raw = rest_.substr(0, end);
    rest_.remove_prefix(end == std::string_view::npos ? rest_.size() : end + 1);
    return Decode(raw);
  }

  // Every byte not read yet, LFs included, its escapes decoded: the last
  // field of a target that reads a byte stream (an HTTP/1.1 response).
  std::string Rest() {
    std::string rest = Decode(rest_);
    rest_ = {};
    return rest;
  }

  // The next field read as a decimal integer, or `fallback` if it is not one.
  long long NextInteger(long long fallback) { return ParseInteger(Next()).value_or(fallback); }

  // `text` as a decimal integer, or empty if it is not one.
  static std::optional<long long> ParseInteger(std::string_view text) {
    long long value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
  }

 private:
  static std::string Decode(std::string_view raw) {
    std::string field;
    field.reserve(raw.size());
    for (std::size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '\\' && i + 3 < raw.size() && raw[i + 1] == 'x') {
        int high = HexDigit(raw[i + 2]);
        int low = HexDigit(raw[i + 3]);
        if (high >= 0 && low >= 0) {
          field.push_back(static_cast<char>(high * 16 + low));
          i += 3;
          continue;
        }
      }
      field.push_back(raw[i]);
    }
    return field;
  }

  static int HexDigit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  std::string_view rest_;
};

// Ends the run, as a crash libFuzzer records, when a property is false.
[[noreturn]] inline void PropertyFailed(const char* property, const char* file, int line) {
  // "ERROR:" so that libFuzzer's fork mode passes the line on from its jobs.
  std::fprintf(stderr, "%s:%d: ERROR: fuzz property failed: %s\n", file, line, property);
  std::abort();
}

}  // namespace outbound::fuzz

// FUZZ_CHECK(condition): the property `condition` holds for this input.
#define FUZZ_CHECK(condition) \
  ((condition) ? (void)0 : ::outbound::fuzz::PropertyFailed(#condition, __FILE__, __LINE__))

#endif  // OUTBOUND_FUZZ_FUZZ_INPUT_H_
