// SPDX-License-Identifier: Apache-2.0
// fuzz/trace_context_fuzzer.cc
//
// Fuzzes the W3C Trace Context and Baggage parsers
// (outbound/telemetry/propagation.h), which read what a program's own
// callers sent: ParseTraceparent with its tracestate, and ParseBaggage,
// each against its formatter. Input (fuzz_input.h): the traceparent
// value, the tracestate value, then the rest of the input, LFs included,
// is the baggage value. Checks:
//   - nothing crashes, and no sanitizer reports anything;
//   - a parsed context is valid; formatted, it is 55 characters of lower
//     -case hex and dashes, and parses back to the same context; for a
//     version-00 value it is the value itself but for flag bits other than
//     sampled; its trace_state is empty or the tracestate as sent, trimmed;
//   - a version-00 value of other than 55 characters (once trimmed) never
//     parses;
//   - every baggage member parsed has a key that is a token and a value
//     that is UTF-8; the members formatted stay within W3C's bounds, parse
//     back to the same keys and values (the first members, when the bounds
//     cut them), and format again to the same text.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz_input.h"
#include "outbound/internal/ascii.h"
#include "outbound/telemetry/propagation.h"

namespace outbound::fuzz {
namespace {

using telemetry::Baggage;
using telemetry::SpanContext;

bool IsTokenChar(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

// Whether `s` is well-formed UTF-8 (RFC 3629), written here on its own.
bool IsUtf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    unsigned char lead = b(i);
    std::size_t n = lead < 0x80                    ? 1
                    : lead >= 0xc2 && lead <= 0xdf ? 2
                    : lead >= 0xe0 && lead <= 0xef ? 3
                    : lead >= 0xf0 && lead <= 0xf4 ? 4
                                                   : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (std::size_t k = 1; k < n; ++k) {
      if ((b(i + k) & 0xc0) != 0x80) return false;
    }
    std::uint32_t code = n == 1   ? lead
                         : n == 2 ? lead & 0x1fu
                         : n == 3 ? lead & 0x0fu
                                  : lead & 0x07u;
    for (std::size_t k = 1; k < n; ++k) code = (code << 6) | (b(i + k) & 0x3fu);
    if ((n == 3 && code < 0x800) || (n == 4 && code < 0x10000) || code > 0x10ffff ||
        (code >= 0xd800 && code <= 0xdfff)) {
      return false;
    }
    i += n;
  }
  return true;
}

void CheckTraceparent(std::string_view traceparent, std::string_view tracestate) {
  std::optional<SpanContext> context = telemetry::ParseTraceparent(traceparent, tracestate);
  std::string_view trimmed = internal::TrimOws(traceparent);
  if (trimmed.substr(0, 3) == "00-" && trimmed.size() != telemetry::kTraceparentSize) {
    FUZZ_CHECK(!context);
  }
  if (!context) return;
  FUZZ_CHECK(context->valid());
  FUZZ_CHECK(context->trace_state.empty() || context->trace_state == internal::TrimOws(tracestate));

  std::string formatted = telemetry::FormatTraceparent(*context);
  FUZZ_CHECK(formatted.size() == telemetry::kTraceparentSize);
  for (std::size_t i = 0; i < formatted.size(); ++i) {
    char c = formatted[i];
    bool dash = i == 2 || i == 35 || i == 52;
    FUZZ_CHECK(dash ? c == '-' : (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
  }
  FUZZ_CHECK(telemetry::ParseTraceparent(formatted, context->trace_state) == context);
  if (trimmed.substr(0, 3) == "00-") {
    FUZZ_CHECK(formatted.substr(0, 53) == trimmed.substr(0, 53));
    FUZZ_CHECK(formatted.substr(53) == (context->sampled ? "01" : "00"));
  }
}

// Whether two lists' members have the same keys and values, in order.
bool SameMembers(const Baggage& a, const Baggage& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].key != b[i].key || a[i].value != b[i].value) return false;
  }
  return true;
}

void CheckBaggage(std::string_view header) {
  Baggage parsed = telemetry::ParseBaggage(header);
  for (const auto& entry : parsed) {
    FUZZ_CHECK(!entry.key.empty());
    for (unsigned char c : entry.key) FUZZ_CHECK(IsTokenChar(c));
    FUZZ_CHECK(IsUtf8(entry.value));
  }

  std::string formatted = telemetry::FormatBaggage(parsed);
  FUZZ_CHECK(formatted.size() <= telemetry::kMaxBaggageBytes);
  Baggage again = telemetry::ParseBaggage(formatted);
  FUZZ_CHECK(again.size() <= telemetry::kMaxBaggageMembers);
  FUZZ_CHECK(again.size() <= parsed.size());
  FUZZ_CHECK(SameMembers(again, Baggage(parsed.begin(), parsed.begin() + again.size())));
  FUZZ_CHECK(telemetry::FormatBaggage(again) == formatted);
}

}  // namespace
}  // namespace outbound::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace outbound::fuzz;
  FuzzFields fields(data, size);
  std::string traceparent = fields.Next();
  std::string tracestate = fields.Next();
  std::string baggage = fields.Rest();
  CheckTraceparent(traceparent, tracestate);
  CheckBaggage(baggage);
  return 0;
}
