// SPDX-License-Identifier: Apache-2.0
#include "gzip_decoder.h"

#include "outbound/http/message.h"

namespace outbound::http::internal {

bool GzipDecoder::IsGzip(std::string_view content_encoding) {
  auto trimmed = content_encoding;
  while (!trimmed.empty() && (trimmed.front() == ' ' || trimmed.front() == '\t')) {
    trimmed.remove_prefix(1);
  }
  while (!trimmed.empty() && (trimmed.back() == ' ' || trimmed.back() == '\t')) {
    trimmed.remove_suffix(1);
  }
  return SameHeaderName(trimmed, "gzip") || SameHeaderName(trimmed, "x-gzip");
}

GzipDecoder::GzipDecoder() {
  // 16 + 15: a gzip header and trailer around a deflate stream with the
  // largest window.
  ready_ = inflateInit2(&stream_, 16 + MAX_WBITS) == Z_OK;
}

GzipDecoder::~GzipDecoder() {
  if (ready_) inflateEnd(&stream_);
}

GzipDecoder::Status GzipDecoder::Feed(std::string_view in, const Output& out) {
  if (!ready_) return Status::kNoMemory;
  if (in.empty()) return Status::kOk;
  started_ = true;
  // zlib's interface is not const-correct; it only reads next_in.
  stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  stream_.avail_in = static_cast<uInt>(in.size());
  for (;;) {
    if (at_member_end_ && stream_.avail_in > 0) {
      // Another member follows the one that ended.
      if (inflateReset(&stream_) != Z_OK) return Status::kCorrupt;
      at_member_end_ = false;
    }
    stream_.next_out = buffer_.data();
    stream_.avail_out = static_cast<uInt>(buffer_.size());
    int code = inflate(&stream_, Z_NO_FLUSH);
    std::size_t produced = buffer_.size() - stream_.avail_out;
    if (produced > 0 &&
        !out(std::string_view(reinterpret_cast<const char*>(buffer_.data()), produced))) {
      return Status::kStopped;
    }
    switch (code) {
      case Z_STREAM_END:
        at_member_end_ = true;
        break;
      case Z_OK:
        break;
      case Z_BUF_ERROR:  // no progress was possible: fine only for want of input
        if (stream_.avail_in > 0) return Status::kCorrupt;
        break;
      case Z_MEM_ERROR:
        return Status::kNoMemory;
      default:  // Z_DATA_ERROR, Z_NEED_DICT, Z_STREAM_ERROR
        return Status::kCorrupt;
    }
    // Done once the input is taken and zlib holds no more output (a buffer
    // it did not fill, or a member's end).
    if (stream_.avail_in == 0 && (produced < buffer_.size() || at_member_end_)) {
      return Status::kOk;
    }
  }
}

}  // namespace outbound::http::internal
