// SPDX-License-Identifier: Apache-2.0
#include "metadata.h"

#include <array>
#include <cstdint>

#include "status.h"

namespace outbound::rpc::internal {
namespace {

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Each byte's 6-bit value in kAlphabet, or -1.
constexpr std::array<std::int8_t, 256> MakeDecodeTable() {
  std::array<std::int8_t, 256> table{};
  for (auto& entry : table) entry = -1;
  for (std::size_t i = 0; i < kAlphabet.size(); ++i) {
    table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<std::int8_t>(i);
  }
  return table;
}
constexpr std::array<std::int8_t, 256> kDecodeTable = MakeDecodeTable();

bool Hidden(std::string_view name) {
  static constexpr std::array<std::string_view, 5> kRead = {
      "content-type", "grpc-status", "grpc-message", "grpc-encoding", "grpc-accept-encoding"};
  if (name.starts_with(':')) return true;
  for (std::string_view read : kRead) {
    if (EqualsIgnoringAsciiCase(name, read)) return true;
  }
  return false;
}

// Why `name` cannot be a request's metadata name, or empty when it can.
std::string_view NameProblem(std::string_view name) {
  if (name.empty()) return "is empty";
  for (char c : name) {
    using outbound::internal::IsAsciiAlpha;
    using outbound::internal::IsAsciiDigit;
    bool allowed = IsAsciiAlpha(c) || IsAsciiDigit(c) || c == '-' || c == '_' || c == '.';
    if (!allowed) return "holds a character other than a letter, a digit, '-', '_' or '.'";
  }
  if (outbound::internal::StartsWithIgnoringAsciiCase(name, "grpc-")) return "is reserved by gRPC";
  if (EqualsIgnoringAsciiCase(name, "content-type") || EqualsIgnoringAsciiCase(name, "te")) {
    return "is written by the client itself";
  }
  return {};
}

bool PrintableAscii(std::string_view value) {
  for (char c : value) {
    if (c < 0x20 || c > 0x7E) return false;
  }
  return true;
}

}  // namespace

Status AppendRequestMetadata(const Metadata& metadata, http::Headers& fields) {
  for (const auto& [name, value] : metadata) {
    if (std::string_view problem = NameProblem(name); !problem.empty()) {
      return {Code::kInternal, "the call's metadata name \"" + name + "\" " + std::string(problem)};
    }
    if (!IsBinaryKey(name) && !PrintableAscii(value)) {
      return {Code::kInternal, "the call's metadata \"" + name +
                                   "\" has a byte outside printable ASCII in its value (binary "
                                   "values need a name ending in \"-bin\")"};
    }
  }
  for (const auto& [name, value] : metadata) {
    fields.emplace_back(outbound::internal::AsciiLowered(name),
                        IsBinaryKey(name) ? EncodeBinaryValue(value) : value);
  }
  return {};
}

std::optional<std::string_view> FindField(const http::ResponseHeaders& fields,
                                          std::string_view lower) {
  for (const auto& [field, value] : fields) {
    if (EqualsIgnoringAsciiCase(field, lower)) return value;
  }
  return std::nullopt;
}

bool IsBinaryKey(std::string_view key) {
  return key.size() >= 4 && EqualsIgnoringAsciiCase(key.substr(key.size() - 4), "-bin");
}

std::string EncodeBinaryValue(std::string_view bytes) {
  std::string encoded;
  encoded.reserve((bytes.size() * 4 + 2) / 3);
  std::size_t i = 0;
  auto at = [&](std::size_t k) { return std::uint32_t{static_cast<unsigned char>(bytes[k])}; };
  for (; i + 3 <= bytes.size(); i += 3) {
    std::uint32_t group = (at(i) << 16) | (at(i + 1) << 8) | at(i + 2);
    encoded += kAlphabet[(group >> 18) & 0x3F];
    encoded += kAlphabet[(group >> 12) & 0x3F];
    encoded += kAlphabet[(group >> 6) & 0x3F];
    encoded += kAlphabet[group & 0x3F];
  }
  std::size_t left = bytes.size() - i;
  if (left == 1) {
    std::uint32_t group = at(i) << 16;
    encoded += kAlphabet[(group >> 18) & 0x3F];
    encoded += kAlphabet[(group >> 12) & 0x3F];
  } else if (left == 2) {
    std::uint32_t group = (at(i) << 16) | (at(i + 1) << 8);
    encoded += kAlphabet[(group >> 18) & 0x3F];
    encoded += kAlphabet[(group >> 12) & 0x3F];
    encoded += kAlphabet[(group >> 6) & 0x3F];
  }
  return encoded;
}

std::optional<std::string> DecodeBinaryValue(std::string_view base64) {
  std::string_view data = base64;
  if (data.ends_with('=')) {
    // Padded: whole groups of 4, ending in one or two '='.
    if (data.size() % 4 != 0) return std::nullopt;
    data.remove_suffix(1);
    if (data.ends_with('=')) data.remove_suffix(1);
  }
  if (data.size() % 4 == 1) return std::nullopt;
  std::string bytes;
  bytes.reserve(data.size() * 3 / 4);
  std::uint32_t bits = 0;
  int bit_count = 0;
  for (char c : data) {
    std::int8_t value = kDecodeTable[static_cast<unsigned char>(c)];
    if (value < 0) return std::nullopt;  // '=' in the middle lands here too
    bits = (bits << 6) | static_cast<std::uint32_t>(value);
    bit_count += 6;
    if (bit_count >= 8) {
      bit_count -= 8;
      bytes += static_cast<char>((bits >> bit_count) & 0xFF);
    }
  }
  return bytes;
}

Trailers MetadataOf(const http::ResponseHeaders& fields) {
  Trailers metadata;
  for (const auto& [name, value] : fields) {
    if (Hidden(name)) continue;
    std::string key = outbound::internal::AsciiLowered(std::string(name));
    if (!IsBinaryKey(key)) {
      metadata.emplace(std::move(key), value);
      continue;
    }
    std::string_view rest = value;
    for (;;) {
      std::size_t comma = rest.find(',');
      std::string_view part = rest.substr(0, comma);
      while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
      while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
      if (auto bytes = DecodeBinaryValue(part)) metadata.emplace(key, std::move(*bytes));
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return metadata;
}

}  // namespace outbound::rpc::internal
