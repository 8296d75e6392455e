// SPDX-License-Identifier: Apache-2.0
#include "outbound/testing/h2_frame.h"

namespace outbound::testing::h2 {
namespace {

void PutUint32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((v >> shift) & 0xff));
  }
}

// An HPACK integer (RFC 7541 §5.1) with an N-bit prefix, the prefix's
// other bits taken from `first`.
void PutHpackInteger(std::string& out, std::uint8_t first, int prefix_bits, std::size_t value) {
  const std::size_t max_prefix = (std::size_t{1} << prefix_bits) - 1;
  if (value < max_prefix) {
    out.push_back(static_cast<char>(first | value));
    return;
  }
  out.push_back(static_cast<char>(first | max_prefix));
  value -= max_prefix;
  while (value >= 128) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void PutHpackString(std::string& out, const std::string& s) {
  PutHpackInteger(out, 0x00, 7, s.size());  // H bit clear: no Huffman
  out += s;
}

}  // namespace

std::string Frame::Encode() const {
  std::string out;
  out.reserve(9 + payload.size());
  const auto length = static_cast<std::uint32_t>(payload.size());
  out.push_back(static_cast<char>((length >> 16) & 0xff));
  out.push_back(static_cast<char>((length >> 8) & 0xff));
  out.push_back(static_cast<char>(length & 0xff));
  out.push_back(static_cast<char>(type));
  out.push_back(static_cast<char>(flags));
  PutUint32(out, stream_id & 0x7fffffff);
  out += payload;
  return out;
}

std::string EncodeFields(const Fields& fields) {
  std::string out;
  for (const auto& [name, value] : fields) {
    out.push_back(0x00);  // literal header field without indexing, new name
    PutHpackString(out, name);
    PutHpackString(out, value);
  }
  return out;
}

Frame Data(std::uint32_t stream, std::string bytes, bool end_stream) {
  return Frame{kData, static_cast<std::uint8_t>(end_stream ? kEndStream : 0), stream,
               std::move(bytes)};
}

Frame Headers(std::uint32_t stream, const Fields& fields, bool end_stream, bool end_headers) {
  std::uint8_t flags = (end_stream ? kEndStream : 0) | (end_headers ? kEndHeaders : 0);
  return Frame{kHeaders, flags, stream, EncodeFields(fields)};
}

Frame Continuation(std::uint32_t stream, const Fields& fields, bool end_headers) {
  return Frame{kContinuation, static_cast<std::uint8_t>(end_headers ? kEndHeaders : 0), stream,
               EncodeFields(fields)};
}

Frame RstStream(std::uint32_t stream, std::uint32_t code) {
  Frame frame{kRstStream, 0, stream, ""};
  PutUint32(frame.payload, code);
  return frame;
}

Frame Settings(const std::vector<std::pair<std::uint16_t, std::uint32_t>>& entries) {
  Frame frame{kSettings, 0, 0, ""};
  for (const auto& [id, value] : entries) {
    frame.payload.push_back(static_cast<char>(id >> 8));
    frame.payload.push_back(static_cast<char>(id & 0xff));
    PutUint32(frame.payload, value);
  }
  return frame;
}

Frame Ping(std::uint64_t opaque, bool ack) {
  Frame frame{kPing, static_cast<std::uint8_t>(ack ? kAck : 0), 0, ""};
  PutUint32(frame.payload, static_cast<std::uint32_t>(opaque >> 32));
  PutUint32(frame.payload, static_cast<std::uint32_t>(opaque));
  return frame;
}

Frame Goaway(std::uint32_t last_stream, std::uint32_t code) {
  Frame frame{kGoaway, 0, 0, ""};
  PutUint32(frame.payload, last_stream & 0x7fffffff);
  PutUint32(frame.payload, code);
  return frame;
}

Frame WindowUpdate(std::uint32_t stream, std::uint32_t increment) {
  Frame frame{kWindowUpdate, 0, stream, ""};
  PutUint32(frame.payload, increment & 0x7fffffff);
  return frame;
}

}  // namespace outbound::testing::h2
