// SPDX-License-Identifier: Apache-2.0
// gRPC's Length-Prefixed-Message: a 1-byte compressed flag (0 or 1), the
// message's length in 4 bytes, big-endian, then the message. Framing for
// the request, a Deframer for the response body. No I/O. Internal: the
// gRPC front end's.
//
//   StatusOr<std::string> body = FrameForSending(request, max_send, /*gzip=*/false);
//   if (!body) return body.error();
//   ...
//   Deframer deframer(grpc_encoding, kDefaultReceiveLimit,
//                     [&](std::string message) { replies.push_back(std::move(message)); });
//   // each DATA piece:   if (Status s = deframer.Feed(piece); !s.ok()) return s;
//   // the body's end:    if (Status s = deframer.Finish(); !s.ok()) return s;
#ifndef OUTBOUND_SRC_RPC_WIRE_FRAMING_H_
#define OUTBOUND_SRC_RPC_WIRE_FRAMING_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "status.h"

namespace outbound::rpc::internal {

// The length prefix's size: the flag byte and 4 bytes of length.
inline constexpr std::size_t kFramePrefixSize = 5;

// The largest message a prefix can announce.
inline constexpr std::size_t kMaxFrameLength = 0xFFFF'FFFF;

// The receive limit gRPC clients have by default: 4 MiB.
inline constexpr std::size_t kDefaultReceiveLimit = 4 * 1024 * 1024;

// `message` framed as it is (flag 0), appended to `out`. `message` must be
// at most kMaxFrameLength bytes (FrameForSending checks it).
void FrameTo(std::string& out, std::string_view message);

// `message` framed as it is (flag 0).
std::string Frame(std::string_view message);

// The request body for `message`: refused with RESOURCE_EXHAUSTED ("the
// request message is N bytes, over the send limit of M bytes") when it is
// over `max_send` bytes, the size checked being the message's own, before
// any coding. With `gzip`, the flag is 1 and the message gzip-coded (the
// request then needs "grpc-encoding: gzip"); a coded message too long for
// the prefix is RESOURCE_EXHAUSTED too.
[[nodiscard]] StatusOr<std::string> FrameForSending(std::string_view message, std::size_t max_send,
                                                    bool gzip);

// What is wrong with the `number`-th message of a response (from 1) by its
// prefix alone (its `flag` and announced `length`) under the response's
// grpc-encoding `encoding`, or OK: the prefix rules of Deframer below, with
// the same codes and messages, checked in this order: the flag, the
// encoding, the limit.
[[nodiscard]] Status CheckPrefix(unsigned char flag, std::size_t length, std::string_view encoding,
                                 std::size_t receive_limit, std::size_t number);

// Takes a response body in pieces as they arrive, split anywhere, and hands
// each whole message to its sink, in order, decoded. Each Feed and Finish
// says whether the body is still good; the first error is the call's
// status (all carry the numbers involved):
//   - a message announced over the receive limit: RESOURCE_EXHAUSTED,
//     refused from its prefix, before any of it is held;
//   - a flag other than 0 or 1: INTERNAL;
//   - flag 1 when the response has no grpc-encoding, or identity: INTERNAL;
//   - flag 1 with a grpc-encoding other than identity or gzip:
//     UNIMPLEMENTED (checked at the first compressed message, for a server
//     may send uncompressed messages under any encoding);
//   - gzip that does not inflate: INTERNAL; that inflates past the receive
//     limit: RESOURCE_EXHAUSTED (inflating stops at the limit);
//   - Finish inside a message: INTERNAL ("the response ended inside a
//     message: N of M bytes", M the announced length), or inside a prefix
//     ("... inside a message's prefix: N of 5 bytes").
// After an error the Deframer takes nothing more: every later Feed and
// Finish returns the same error and calls the sink no more. Not
// thread-safe: one response's bytes, fed in order.
class Deframer {
 public:
  // A message whole: decoded, or still gzip-coded (`compressed`) if the
  // Deframer was told to leave it so (LeaveCompressed).
  using MessageSink = std::function<void(std::string message, bool compressed)>;

  // `encoding`: the response's grpc-encoding ("" when it had none). The
  // sink is called from within Feed.
  Deframer(std::string_view encoding, std::size_t receive_limit, MessageSink sink);

  // What the answer's head says, for a Deframer made before it (a
  // stream's): its grpc-encoding decodes the messages from here on.
  void SetEncoding(std::string_view encoding) { encoding_ = encoding; }
  // Messages go to the sink still gzip-coded, for a reader that decodes
  // each as it takes it (GzipDecompress within the receive limit): what
  // waits unread is then the bytes that came, not what they inflate to,
  // which may be a thousand times more (a stream read slowly).
  void LeaveCompressed() { leave_compressed_ = true; }
  // The body is not gRPC's (a proxy's HTML page): it is dropped, not
  // taken for messages, and the answer's head gives the call's status.
  void IgnoreBody() { ignoring_ = true; }

  // The next bytes of the body. Returns the Deframer's status after them.
  [[nodiscard]] Status Feed(std::string_view bytes);

  // The body ended: OK when it ended between messages.
  [[nodiscard]] Status Finish();

  // OK, or the first error.
  const Status& status() const { return status_; }

  // Messages handed to the sink so far.
  std::size_t messages() const { return messages_; }

 private:
  // Decides on a whole prefix: the message's flag and length.
  void StartMessage();
  // Hands on the message held whole in body_.
  void EndMessage();
  void FailAs(Code code, std::string message);

  std::string encoding_;
  std::size_t limit_;
  MessageSink sink_;
  Status status_;
  std::array<unsigned char, kFramePrefixSize> prefix_{};
  std::size_t prefix_have_ = 0;  // bytes of prefix_ received
  bool in_body_ = false;         // the prefix is whole; body_ is filling
  bool compressed_ = false;
  bool leave_compressed_ = false;
  std::size_t length_ = 0;  // the announced length of the message in body_
  std::string body_;
  std::size_t messages_ = 0;
  bool ignoring_ = false;
};

}  // namespace outbound::rpc::internal

#endif  // OUTBOUND_SRC_RPC_WIRE_FRAMING_H_
