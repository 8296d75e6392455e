// SPDX-License-Identifier: Apache-2.0
#include "outbound/telemetry/propagation.h"

#include <algorithm>
#include <cstdio>

#include "outbound/internal/ascii.h"

namespace outbound::telemetry {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // upper case is not allowed in traceparent
}

// Lower-case hex of exactly 2 * N digits into `bytes`.
template <std::size_t N>
bool ParseHex(std::string_view text, std::array<std::uint8_t, N>& bytes) {
  if (text.size() != 2 * N) return false;
  for (std::size_t i = 0; i < N; ++i) {
    int high = HexValue(text[2 * i]);
    int low = HexValue(text[2 * i + 1]);
    if (high < 0 || low < 0) return false;
    bytes[i] = static_cast<std::uint8_t>(high * 16 + low);
  }
  return true;
}

// RFC 9110 token characters.
bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    bool ok =
        (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
        std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

// Baggage values: printable ASCII except space, '"', ',', ';', '\\' and
// '%' are sent as is; everything else percent-encoded.
bool KeepInValue(unsigned char c) {
  return c > 0x20 && c < 0x7f && c != '"' && c != ',' && c != ';' && c != '\\' && c != '%';
}

// The length of the well-formed UTF-8 sequence at the front of `s`
// (RFC 3629: no overlong form, no surrogate, nothing past U+10FFFF), or 0.
std::size_t Utf8SequenceAt(std::string_view s) {
  auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  auto continuation = [&](std::size_t i) { return i < s.size() && (byte(i) & 0xc0) == 0x80; };
  unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) return continuation(1) ? 2 : 0;
  if (lead >= 0xe0 && lead <= 0xef) {
    if (!continuation(1) || !continuation(2)) return 0;
    if (lead == 0xe0 && byte(1) < 0xa0) return 0;   // overlong
    if (lead == 0xed && byte(1) >= 0xa0) return 0;  // a surrogate
    return 3;
  }
  if (lead >= 0xf0 && lead <= 0xf4) {
    if (!continuation(1) || !continuation(2) || !continuation(3)) return 0;
    if (lead == 0xf0 && byte(1) < 0x90) return 0;   // overlong
    if (lead == 0xf4 && byte(1) >= 0x90) return 0;  // past U+10FFFF
    return 4;
  }
  return 0;
}

// W3C Baggage: decoded bytes that are not UTF-8 are each replaced with
// U+FFFD.
std::string ReplacingInvalidUtf8(std::string text) {
  std::string out;
  std::string_view rest = text;
  while (!rest.empty()) {
    std::size_t length = Utf8SequenceAt(rest);
    if (length == 0) {
      out += "\xEF\xBF\xBD";
      length = 1;
    } else {
      out.append(rest.substr(0, length));
    }
    rest.remove_prefix(length);
  }
  return out;
}

std::string PercentDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      auto digit = [](char c) {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
      };
      int high = digit(s[i + 1]);
      int low = digit(s[i + 2]);
      if (high >= 0 && low >= 0) {
        out.push_back(static_cast<char>(high * 16 + low));
        i += 2;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

// A tracestate key's characters after its first (W3C Trace Context).
bool IsKeyChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '*' ||
         c == '/';
}

// key: lcalpha then up to 255 of lcalpha, digits, "_-*/"; or tenant "@"
// system, the tenant (up to 241) starting with lcalpha or a digit, the
// system (up to 14) with lcalpha.
bool IsTracestateKey(std::string_view key) {
  auto part = [](std::string_view text, std::size_t most, bool digit_first) {
    if (text.empty() || text.size() > most) return false;
    char first = text.front();
    if (!((first >= 'a' && first <= 'z') || (digit_first && first >= '0' && first <= '9'))) {
      return false;
    }
    return std::all_of(text.begin() + 1, text.end(), IsKeyChar);
  };
  std::size_t at = key.find('@');
  if (at == std::string_view::npos) return part(key, 256, false);
  return part(key.substr(0, at), 241, true) && part(key.substr(at + 1), 14, false);
}

// value: 1 to 256 printable ASCII characters but "," and "=", the last
// not a space.
bool IsTracestateValue(std::string_view value) {
  if (value.empty() || value.size() > 256 || value.back() == ' ') return false;
  return std::all_of(value.begin(), value.end(),
                     [](char c) { return c >= 0x20 && c <= 0x7e && c != ',' && c != '='; });
}

// W3C Trace Context: at most 32 members "key=value", joined by "," with
// optional spaces or tabs around; empty members are allowed.
bool IsTracestate(std::string_view list) {
  int members = 0;
  while (true) {
    std::size_t comma = list.find(',');
    std::string_view member = outbound::internal::TrimOws(list.substr(0, comma));
    if (!member.empty()) {
      std::size_t equals = member.find('=');
      if (equals == std::string_view::npos || ++members > 32 ||
          !IsTracestateKey(member.substr(0, equals)) ||
          !IsTracestateValue(member.substr(equals + 1))) {
        return false;
      }
    }
    if (comma == std::string_view::npos) return true;
    list.remove_prefix(comma + 1);
  }
}

}  // namespace

std::string FormatTraceparent(const SpanContext& context) {
  std::string out(kTraceparentSize, '\0');  // one allocation
  FormatTraceparent(context, std::span<char, kTraceparentSize>(out.data(), kTraceparentSize));
  return out;
}

void FormatTraceparent(const SpanContext& context, std::span<char, kTraceparentSize> out) {
  constexpr std::string_view kUnsampled = "00-00000000000000000000000000000000-0000000000000000-00";
  static_assert(kUnsampled.size() == kTraceparentSize);
  std::copy(kUnsampled.begin(), kUnsampled.end(), out.begin());
  outbound::internal::WriteHex(context.trace_id.bytes, out.data() + 3);
  outbound::internal::WriteHex(context.span_id.bytes, out.data() + 36);
  if (context.sampled) out[54] = '1';
}

std::optional<SpanContext> ParseTraceparent(std::string_view traceparent,
                                            std::string_view tracestate) {
  traceparent = outbound::internal::TrimOws(traceparent);
  // version "-" trace-id "-" parent-id "-" flags: 2 + 1 + 32 + 1 + 16 + 1 + 2.
  if (traceparent.size() < 55) return std::nullopt;
  std::array<std::uint8_t, 1> version{};
  std::array<std::uint8_t, 1> flags{};
  SpanContext context;
  if (!ParseHex(traceparent.substr(0, 2), version) || version[0] == 0xff) return std::nullopt;
  if (traceparent[2] != '-' || traceparent[35] != '-' || traceparent[52] != '-') {
    return std::nullopt;
  }
  if (!ParseHex(traceparent.substr(3, 32), context.trace_id.bytes)) return std::nullopt;
  if (!ParseHex(traceparent.substr(36, 16), context.span_id.bytes)) return std::nullopt;
  if (!ParseHex(traceparent.substr(53, 2), flags)) return std::nullopt;
  // Version 00 has exactly these fields; a later version may add more after a "-".
  if (version[0] == 0 ? traceparent.size() != 55
                      : traceparent.size() > 55 && traceparent[55] != '-') {
    return std::nullopt;
  }
  if (!context.valid()) return std::nullopt;
  context.sampled = (flags[0] & 1) != 0;
  // One that does not parse is dropped whole, as the spec lets a vendor do:
  // a member cannot be told apart from the rest of a malformed list.
  if (tracestate = outbound::internal::TrimOws(tracestate); IsTracestate(tracestate)) {
    context.trace_state = std::string(tracestate);
  }
  return context;
}

std::string FormatBaggage(const Baggage& baggage) {
  std::string header;
  std::size_t members = 0;
  for (const BaggageEntry& entry : baggage) {
    if (!IsToken(entry.key)) continue;
    if (members == kMaxBaggageMembers) break;
    std::size_t before = header.size();
    if (!header.empty()) header += ',';
    header += entry.key;
    header += '=';
    for (unsigned char c : entry.value) {
      if (KeepInValue(c)) {
        header.push_back(static_cast<char>(c));
      } else {
        char encoded[4];
        std::snprintf(encoded, sizeof encoded, "%%%02X", c);
        header += encoded;
      }
    }
    bool properties_fit =
        std::none_of(entry.properties.begin(), entry.properties.end(),
                     [](unsigned char c) { return c == ',' || c < 0x20 || c == 0x7f; });
    if (!entry.properties.empty() && properties_fit) {
      header += ';';
      header += entry.properties;
    }
    // Whole members only: one that would pass the bound is left out, and
    // so is every later one, which would reorder what the caller gave.
    if (header.size() > kMaxBaggageBytes) {
      header.resize(before);
      break;
    }
    ++members;
  }
  return header;
}

Baggage ParseBaggage(std::string_view header) {
  Baggage baggage;
  while (!header.empty()) {
    std::size_t comma = header.find(',');
    std::string_view member = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    std::size_t semicolon = member.find(';');
    std::string_view pair = member.substr(0, semicolon);
    std::size_t equals = pair.find('=');
    if (equals == std::string_view::npos) continue;
    std::string_view key = outbound::internal::TrimOws(pair.substr(0, equals));
    if (!IsToken(key)) continue;
    BaggageEntry entry{
        std::string(key),
        ReplacingInvalidUtf8(PercentDecode(outbound::internal::TrimOws(pair.substr(equals + 1)))),
        ""};
    if (semicolon != std::string_view::npos) {
      entry.properties = std::string(outbound::internal::TrimOws(member.substr(semicolon + 1)));
    }
    baggage.push_back(std::move(entry));
  }
  return baggage;
}

const std::string* FindBaggage(const Baggage& baggage, std::string_view key) {
  for (const BaggageEntry& entry : baggage) {
    if (entry.key == key) return &entry.value;
  }
  return nullptr;
}

}  // namespace outbound::telemetry
