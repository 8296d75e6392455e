// SPDX-License-Identifier: Apache-2.0
// A request body made as it is read (Request::StreamBodyFrom), of any size,
// in constant memory: bytes that are not all alike (a piece out of place
// changes the digest), with the SHA-256 of what the last attempt was given,
// to set beside what a stock server says it received.
#ifndef OUTBOUND_TESTS_PEERS_GENERATED_BODY_H_
#define OUTBOUND_TESTS_PEERS_GENERATED_BODY_H_

#include <openssl/evp.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "../http/text_source.h"
#include "outbound/http/message.h"

namespace outbound::peers {

class GeneratedBody {
 public:
  explicit GeneratedBody(std::uint64_t bytes) : state_(std::make_shared<State>(bytes)) {}

  // Opens the body from its first byte (each attempt does).
  std::function<http::BodyReader()> Opener() const {
    return [state = state_]() -> http::BodyReader {
      state->at = 0;
      state->digest.reset(EVP_MD_CTX_new());
      EVP_DigestInit_ex(state->digest.get(), EVP_sha256(), nullptr);
      return [state](std::span<char> buffer) -> Result<std::size_t> {
        std::uint64_t left = state->bytes - state->at;
        std::size_t n = buffer.size() < left ? buffer.size() : static_cast<std::size_t>(left);
        for (std::size_t i = 0; i < n; ++i) buffer[i] = http::PatternByte(state->at + i);
        EVP_DigestUpdate(state->digest.get(), buffer.data(), n);
        state->at += n;
        return n;
      };
    };
  }

  std::uint64_t size() const { return state_->bytes; }

  // "<bytes> <sha256 hex>" of what the last opened reader gave, as the
  // peers' /digest answers.
  std::string Digest() const {
    unsigned char sum[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    EVP_DigestFinal_ex(state_->digest.get(), sum, &length);
    std::string hex;
    char two[3];
    for (unsigned int i = 0; i < length; ++i) {
      std::snprintf(two, sizeof two, "%02x", sum[i]);
      hex += two;
    }
    return std::to_string(state_->at) + " " + hex;
  }

 private:
  struct State {
    explicit State(std::uint64_t n) : bytes(n) {}
    std::uint64_t bytes;
    std::uint64_t at = 0;
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> digest{nullptr, &EVP_MD_CTX_free};
  };
  std::shared_ptr<State> state_;
};

}  // namespace outbound::peers

#endif  // OUTBOUND_TESTS_PEERS_GENERATED_BODY_H_
