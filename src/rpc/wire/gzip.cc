// SPDX-License-Identifier: Apache-2.0
#include "gzip.h"

#include <zlib.h>

#include <algorithm>
#include <limits>

namespace outbound::rpc::internal {
namespace {

// 16 + 15: a gzip header and trailer around a deflate stream with the
// largest window.
constexpr int kGzipWindowBits = 16 + MAX_WBITS;

// zlib counts in uInt: a larger piece goes in several calls.
constexpr std::size_t kMaxPiece = std::numeric_limits<uInt>::max();

constexpr std::size_t kOutputStep = std::size_t{16} * 1024;

// Owns a z_stream set up for inflating or deflating.
class ZStream {
 public:
  enum class Kind { kInflate, kDeflate };
  explicit ZStream(Kind kind) : kind_(kind) {
    ready_ = kind == Kind::kInflate ? inflateInit2(&stream_, kGzipWindowBits) == Z_OK
                                    : deflateInit2(&stream_, Z_DEFAULT_COMPRESSION, Z_DEFLATED,
                                                   kGzipWindowBits, 8, Z_DEFAULT_STRATEGY) == Z_OK;
  }
  ~ZStream() {
    if (!ready_) return;
    if (kind_ == Kind::kInflate) {
      inflateEnd(&stream_);
    } else {
      deflateEnd(&stream_);
    }
  }
  ZStream(const ZStream&) = delete;
  ZStream& operator=(const ZStream&) = delete;

  bool ready() const { return ready_; }
  z_stream& get() { return stream_; }

 private:
  Kind kind_;
  z_stream stream_{};
  bool ready_ = false;
};

// Gives zlib as much of `rest` as it takes at once and moves `rest` past it.
void FeedInput(z_stream& stream, std::string_view& rest) {
  std::size_t piece = std::min(rest.size(), kMaxPiece);
  // zlib's interface is not const-correct; it only reads next_in.
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(rest.data()));
  stream.avail_in = static_cast<uInt>(piece);
  rest.remove_prefix(piece);
}

}  // namespace

StatusOr<std::string> GzipCompress(std::string_view message) {
  ZStream zs(ZStream::Kind::kDeflate);
  if (!zs.ready()) return FailWith(Code::kInternal, "zlib could not start deflating");
  z_stream& stream = zs.get();
  std::string coded;
  std::string_view rest = message;
  for (;;) {
    if (stream.avail_in == 0) FeedInput(stream, rest);
    int flush = rest.empty() ? Z_FINISH : Z_NO_FLUSH;
    std::size_t before = coded.size();
    coded.resize(before + kOutputStep);
    stream.next_out = reinterpret_cast<Bytef*>(coded.data() + before);
    stream.avail_out = static_cast<uInt>(kOutputStep);
    int code = deflate(&stream, flush);
    coded.resize(before + kOutputStep - stream.avail_out);
    if (code == Z_STREAM_END) return coded;
    if (code != Z_OK && code != Z_BUF_ERROR) {
      return FailWith(Code::kInternal, "zlib could not deflate the message");
    }
  }
}

StatusOr<std::string> GzipDecompress(std::string_view coded, std::size_t limit) {
  ZStream zs(ZStream::Kind::kInflate);
  if (!zs.ready()) return FailWith(Code::kInternal, "zlib could not start inflating");
  z_stream& stream = zs.get();
  std::string message;
  std::string_view rest = coded;
  bool at_member_end = false;
  for (;;) {
    if (stream.avail_in == 0 && !rest.empty()) FeedInput(stream, rest);
    if (at_member_end) {
      if (stream.avail_in == 0) break;
      // Another member follows the one that ended.
      if (inflateReset(&stream) != Z_OK) {
        return FailWith(Code::kInternal, "the gzip message could not be inflated");
      }
      at_member_end = false;
    }
    // One byte past the limit at most: enough to know it is over.
    std::size_t left = limit - message.size();
    std::size_t room = left < kOutputStep ? left + 1 : kOutputStep;
    std::size_t before = message.size();
    if (before + room > message.capacity()) {
      // Grown by doubling, but never past limit + 1: a fresh string, for
      // reserve on a full one may double past what is asked.
      std::string grown;
      grown.reserve(std::min(std::max(message.capacity() * 2, before + room), before + left + 1));
      grown.append(message);
      message.swap(grown);
    }
    message.resize(before + room);
    stream.next_out = reinterpret_cast<Bytef*>(message.data() + before);
    stream.avail_out = static_cast<uInt>(room);
    int code = inflate(&stream, Z_NO_FLUSH);
    bool filled = stream.avail_out == 0;
    message.resize(before + room - stream.avail_out);
    if (message.size() > limit) {
      return FailWith(Code::kResourceExhausted,
                      "the response message inflates to more than the receive limit of " +
                          std::to_string(limit) + " bytes");
    }
    switch (code) {
      case Z_STREAM_END:
        at_member_end = true;
        break;
      case Z_OK:
        break;
      case Z_BUF_ERROR:  // no progress: fine only for want of input
        if (stream.avail_in > 0) {
          return FailWith(Code::kInternal, "the gzip message could not be inflated");
        }
        break;
      case Z_MEM_ERROR:
        return FailWith(Code::kInternal, "zlib ran out of memory inflating the message");
      default:  // Z_DATA_ERROR, Z_NEED_DICT, Z_STREAM_ERROR
        return FailWith(Code::kInternal, "the gzip message could not be inflated: " +
                                             std::string(stream.msg ? stream.msg : "corrupt"));
    }
    // Out of input, mid-member, and zlib holds no more output: cut short.
    if (!at_member_end && stream.avail_in == 0 && rest.empty() && !filled) break;
  }
  if (!at_member_end) {
    return FailWith(Code::kInternal, "the gzip message ended before its gzip stream did (" +
                                         std::to_string(coded.size()) + " bytes)");
  }
  return message;
}

}  // namespace outbound::rpc::internal
