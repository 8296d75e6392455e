// SPDX-License-Identifier: Apache-2.0
#include "wire.h"

#include <array>
#include <cstdint>
#include <optional>

namespace outbound::rpc::internal {
namespace {

constexpr std::size_t kPrefix = 5;

std::uint32_t LengthAt(std::string_view bytes) {
  return static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[1])) << 24 |
         static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[2])) << 16 |
         static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[3])) << 8 |
         static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[4]));
}

// What is wrong with a message prefix, if anything.
std::optional<Status> BadPrefix(std::string_view prefix, std::size_t limit) {
  if (prefix[0] == 1) {
    return Status{Code::kInternal, "a message was compressed, and the answer named no encoding"};
  }
  if (prefix[0] != 0) {
    return Status{Code::kInternal, "a message's compressed flag was " +
                                       std::to_string(static_cast<unsigned char>(prefix[0]))};
  }
  std::uint32_t length = LengthAt(prefix);
  if (length > limit) {
    return Status{Code::kResourceExhausted, "a message of " + std::to_string(length) +
                                                " bytes is over the receive limit of " +
                                                std::to_string(limit) + " bytes"};
  }
  return std::nullopt;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string FrameMessage(std::string_view message) {
  auto n = static_cast<std::uint32_t>(message.size());
  std::string framed;
  framed.reserve(kPrefix + message.size());
  framed += '\0';
  framed += static_cast<char>(n >> 24);
  framed += static_cast<char>(n >> 16);
  framed += static_cast<char>(n >> 8);
  framed += static_cast<char>(n);
  framed += message;
  return framed;
}

tl::expected<std::string, Status> OnlyMessage(std::string_view body, std::size_t limit) {
  if (body.size() < kPrefix) {
    return tl::unexpected(Status{Code::kInternal, body.empty()
                                                      ? "the answer had no message"
                                                      : "the answer ended inside a message"});
  }
  if (auto bad = BadPrefix(body, limit)) return tl::unexpected(std::move(*bad));
  std::size_t length = LengthAt(body);
  if (body.size() - kPrefix < length) {
    return tl::unexpected(Status{Code::kInternal, "the answer ended inside a message"});
  }
  if (body.size() - kPrefix > length) {
    return tl::unexpected(Status{Code::kInternal, "the answer had more than one message"});
  }
  return std::string(body.substr(kPrefix));
}

bool Deframer::Feed(std::string_view bytes,
                    const std::function<void(std::string_view)>& on_message) {
  if (!status_.ok()) return false;
  pending_.append(bytes);
  std::size_t at = 0;
  while (pending_.size() - at >= kPrefix) {
    std::string_view rest(pending_.data() + at, pending_.size() - at);
    if (auto bad = BadPrefix(rest, limit_)) {
      status_ = std::move(*bad);
      return false;
    }
    std::size_t length = LengthAt(rest);
    if (rest.size() - kPrefix < length) break;
    on_message(rest.substr(kPrefix, length));
    at += kPrefix + length;
  }
  pending_.erase(0, at);
  return true;
}

bool Deframer::Finish() {
  if (status_.ok() && !pending_.empty()) {
    status_ = Status{Code::kInternal, "the answer ended inside a message"};
  }
  return status_.ok();
}

std::string EncodeTimeout(Duration timeout) {
  using std::chrono::nanoseconds;
  auto ns = std::chrono::duration_cast<nanoseconds>(timeout).count();
  if (ns <= 0) return "1n";
  constexpr std::int64_t kMax = 99'999'999;
  struct Unit {
    std::int64_t ns;
    char name;
  };
  static constexpr std::array<Unit, 6> kUnits = {{{1, 'n'},
                                                  {1'000, 'u'},
                                                  {1'000'000, 'm'},
                                                  {1'000'000'000, 'S'},
                                                  {60'000'000'000, 'M'},
                                                  {3'600'000'000'000, 'H'}}};
  for (const Unit& unit : kUnits) {
    std::int64_t value = (ns + unit.ns - 1) / unit.ns;
    if (value <= kMax) return std::to_string(value) + unit.name;
  }
  return std::to_string(kMax) + "H";
}

std::string DecodeStatusMessage(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && HexValue(text[i + 1]) >= 0 &&
        HexValue(text[i + 2]) >= 0) {
      out += static_cast<char>(HexValue(text[i + 1]) * 16 + HexValue(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

Code CodeForHttpStatus(int http_status) {
  switch (http_status) {
    case 400:
      return Code::kInternal;
    case 401:
      return Code::kUnauthenticated;
    case 403:
      return Code::kPermissionDenied;
    case 404:
      return Code::kUnimplemented;
    case 429:
    case 502:
    case 503:
    case 504:
      return Code::kUnavailable;
    default:
      return Code::kUnknown;
  }
}

}  // namespace outbound::rpc::internal
