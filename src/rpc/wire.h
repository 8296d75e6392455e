// SPDX-License-Identifier: Apache-2.0
// gRPC's wire format as pure functions, no I/O: length-prefixed messages,
// grpc-timeout, grpc-message's percent-encoding and the HTTP status
// mapping. Internal.
#ifndef OUTBOUND_SRC_RPC_WIRE_H_
#define OUTBOUND_SRC_RPC_WIRE_H_

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "outbound/clock.h"
#include "outbound/rpc/settings.h"
#include "tl/expected.hpp"

namespace outbound::rpc::internal {

// `message` with its 5-byte prefix: not compressed, its length big-endian.
std::string FrameMessage(std::string_view message);

// The one message of a body that must hold exactly one (a unary answer),
// at most `limit` bytes.
tl::expected<std::string, Status> OnlyMessage(std::string_view body, std::size_t limit);

// Splits a body into its messages as its bytes arrive, in any pieces.
class Deframer {
 public:
  explicit Deframer(std::size_t limit) : limit_(limit) {}
  // Hands each whole message to `on_message`; false once the body is
  // malformed (`status()` says how), after which it takes nothing more.
  bool Feed(std::string_view bytes, const std::function<void(std::string_view)>& on_message);
  // Whether the body may end here (no message cut short); else status().
  bool Finish();
  const Status& status() const { return status_; }

 private:
  std::size_t limit_;
  std::string pending_;
  Status status_;
};

// grpc-timeout's value: at most 8 digits and a unit, rounded up so a
// positive time never reads as 0; "1n" for none at all.
std::string EncodeTimeout(Duration timeout);

// grpc-message's value as text: %XX decoded; a '%' not followed by two
// hex digits kept as it is.
std::string DecodeStatusMessage(std::string_view text);

// The code gRPC gives an HTTP status (its HTTP to gRPC status mapping).
Code CodeForHttpStatus(int http_status);

}  // namespace outbound::rpc::internal

#endif  // OUTBOUND_SRC_RPC_WIRE_H_
