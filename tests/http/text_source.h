// SPDX-License-Identifier: Apache-2.0
// Request bodies for the tests: a byte pattern that is not all alike, so a
// piece out of place shows, and readers over a text that give it a piece
// at a time (Request::StreamBodyFrom).
#ifndef OUTBOUND_TESTS_HTTP_TEXT_SOURCE_H_
#define OUTBOUND_TESTS_HTTP_TEXT_SOURCE_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "outbound/http/message.h"

namespace outbound::http {

// The pattern's byte at offset `k`.
inline char PatternByte(std::uint64_t k) { return static_cast<char>('a' + (k * 7 + k / 251) % 26); }

// The pattern's first `size` bytes.
inline std::string Pattern(std::size_t size) {
  std::string text(size, '\0');
  for (std::size_t i = 0; i < size; ++i) text[i] = PatternByte(i);
  return text;
}

// Opens readers over `text` that give at most `piece` bytes a call, and
// counts how often it was opened.
struct TextSource {
  std::string text;
  std::size_t piece = 1000;
  std::shared_ptr<std::atomic<int>> opened = std::make_shared<std::atomic<int>>(0);

  std::function<BodyReader()> Opener() const {
    return [text = text, piece = piece, opened = opened]() -> BodyReader {
      ++*opened;
      auto at = std::make_shared<std::size_t>(0);
      return [text, piece, at](std::span<char> buffer) -> Result<std::size_t> {
        std::size_t n = std::min({buffer.size(), piece, text.size() - *at});
        text.copy(buffer.data(), n, *at);
        *at += n;
        return n;
      };
    };
  }
};

}  // namespace outbound::http

#endif  // OUTBOUND_TESTS_HTTP_TEXT_SOURCE_H_
