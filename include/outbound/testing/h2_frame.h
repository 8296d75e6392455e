// SPDX-License-Identifier: Apache-2.0
// outbound/testing/h2_frame.h
//
// HTTP/2 frames built byte by byte (RFC 9113 §4.1, §6), for the faults a
// well-behaved HTTP/2 library refuses to commit: floods of PING, SETTINGS,
// WINDOW_UPDATE or empty DATA frames, a header block that never ends, a
// reset at a moment of the test's choosing. A FakeServer writes them raw on
// a TLS h2 connection (Reply::Frames, Reply::Flood) after its preface and
// SETTINGS exchange:
//
// example: examples/headers/testing.cc#h2-frame
//   namespace h2 = testing::h2;
//   auto server = testing::FakeServer::Start(
//       {.tls = tls, .handler = [](const auto&) {
//          // The response's headers, then empty DATA frames until the client leaves.
//          return testing::Reply::Flood(
//              h2::Data(h2::kThisStream, ""), /*count=*/0,
//              {h2::Headers(h2::kThisStream, {{":status", "200"}}, false, true)});
//        }});
//
// Header fields are encoded with HPACK's "literal without indexing, new
// name" form and no Huffman coding, so raw header blocks never touch the
// dynamic table the server's own encoder keeps.
#ifndef OUTBOUND_TESTING_H2_FRAME_H_
#define OUTBOUND_TESTING_H2_FRAME_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace outbound::testing::h2 {

// Frame types and flags, as numbered on the wire.
enum FrameType : std::uint8_t {
  kData = 0x0,
  kHeaders = 0x1,
  kRstStream = 0x3,
  kSettings = 0x4,
  kPing = 0x6,
  kGoaway = 0x7,
  kWindowUpdate = 0x8,
  kContinuation = 0x9,
};
inline constexpr std::uint8_t kEndStream = 0x1;
inline constexpr std::uint8_t kAck = 0x1;
inline constexpr std::uint8_t kEndHeaders = 0x4;

// Error codes (RFC 9113 §7).
enum ErrorCode : std::uint32_t {
  kNoError = 0x0,
  kProtocolError = 0x1,
  kInternalError = 0x2,
  kRefusedStream = 0x7,
  kCancel = 0x8,
  kEnhanceYourCalm = 0xb,
};

// Stands for the stream of the request being answered: a FakeServer puts
// that stream's id in its place when it writes the frame. (Not a valid
// stream id: those stop at 2^31-1.)
inline constexpr std::uint32_t kThisStream = 0xffffffff;

// One frame: its 9-byte header's fields and its payload.
struct Frame {
  std::uint8_t type = kData;
  std::uint8_t flags = 0;
  std::uint32_t stream_id = 0;
  std::string payload;

  // The frame as written on the wire: length, type, flags, stream id, payload.
  std::string Encode() const;
};

using Fields = std::vector<std::pair<std::string, std::string>>;

// DATA carrying `bytes` (empty for the "empty DATA" of a flood).
Frame Data(std::uint32_t stream, std::string bytes, bool end_stream = false);
// HEADERS carrying `fields` in order, pseudo-headers included as given.
Frame Headers(std::uint32_t stream, const Fields& fields, bool end_stream, bool end_headers);
// CONTINUATION carrying more of a header block.
Frame Continuation(std::uint32_t stream, const Fields& fields, bool end_headers);
Frame RstStream(std::uint32_t stream, std::uint32_t code);
// SETTINGS with these (identifier, value) pairs; an empty one still asks
// for an acknowledgement.
Frame Settings(const std::vector<std::pair<std::uint16_t, std::uint32_t>>& entries = {});
Frame Ping(std::uint64_t opaque = 0, bool ack = false);
Frame Goaway(std::uint32_t last_stream, std::uint32_t code);
Frame WindowUpdate(std::uint32_t stream, std::uint32_t increment);

// A header block fragment: each field as an HPACK literal without indexing.
std::string EncodeFields(const Fields& fields);

}  // namespace outbound::testing::h2

#endif  // OUTBOUND_TESTING_H2_FRAME_H_
