// SPDX-License-Identifier: Apache-2.0
// Inflates a gzip-coded response body as it arrives (Settings::gzip), on
// the transport's loop. Internal.
#ifndef OUTBOUND_SRC_HTTP_GZIP_DECODER_H_
#define OUTBOUND_SRC_HTTP_GZIP_DECODER_H_

#include <zlib.h>

#include <array>
#include <cstddef>
#include <functional>
#include <string_view>

namespace outbound::http::internal {

class GzipDecoder {
 public:
  enum class Status {
    kOk,        // all of the input was taken
    kStopped,   // `out` returned false
    kCorrupt,   // not gzip, or bytes after the gzip stream's end
    kNoMemory,  // zlib could not have its state
  };

  // Takes a decoded piece; false to stop.
  using Output = std::function<bool(std::string_view)>;

  // Whether a Content-Encoding value is the gzip coding ("gzip", or
  // "x-gzip" as RFC 9110 §8.4.1.3 asks a recipient to take it), any case.
  static bool IsGzip(std::string_view content_encoding);

  GzipDecoder();
  ~GzipDecoder();
  GzipDecoder(const GzipDecoder&) = delete;
  GzipDecoder& operator=(const GzipDecoder&) = delete;

  // Decodes `in`, handing each decoded piece to `out` (at most 16 KiB at a
  // time), so memory never holds more decoded bytes than `out` keeps. A body
  // of several gzip members back to back (RFC 1952 §2.2) decodes as their
  // concatenation.
  Status Feed(std::string_view in, const Output& out);

  // Whether the body may end here: nothing of it came (an empty body), or
  // the last gzip member ended (its trailer checked). A body that ends
  // elsewhere is cut short.
  bool complete() const { return !started_ || at_member_end_; }

 private:
  z_stream stream_{};
  bool ready_ = false;          // inflateInit2 succeeded
  bool started_ = false;        // some coded bytes came
  bool at_member_end_ = false;  // the last byte fed ended a gzip member
  std::array<unsigned char, 16 * 1024> buffer_{};
};

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_GZIP_DECODER_H_
