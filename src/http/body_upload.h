// SPDX-License-Identifier: Apache-2.0
// One attempt's reading of a streamed request body (Request::StreamBodyFrom),
// the same for both transports: it opens the source, keeps the reader to
// the length it announced, and turns a reader's failure or throw into the
// attempt's outcome. Internal.
#ifndef OUTBOUND_SRC_HTTP_BODY_UPLOAD_H_
#define OUTBOUND_SRC_HTTP_BODY_UPLOAD_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "client_transport.h"
#include "outbound/http/message.h"

namespace outbound::http::internal {

class BodyUpload {
 public:
  // Opens `source` (calls its `open`) for one attempt.
  explicit BodyUpload(const BodySource& source);

  // Reads the body's next bytes into `buffer`: how many, 0 once the body
  // has ended (and is as long as it said) or, from a pipe, while none has
  // come yet (waiting()). Never more than is left of an announced length.
  // After an error, Read keeps returning it.
  Result<std::size_t> Read(std::span<char> buffer);

  // Whether the body has been read to its end.
  bool done() const { return done_; }
  // A pipe's body (Request::StreamBodyFromPipe): the last Read found no
  // bytes yet. The transport waits to be woken (Carrier::Resume).
  bool waiting() const { return waiting_; }
  // Whether the body is a pipe's, written while the call runs.
  bool piped() const { return pipe_ != nullptr; }
  // The body's announced length, if any.
  const std::optional<std::uint64_t>& length() const { return length_; }
  // The attempt's outcome once Read has failed.
  AttemptOutcome Failure() const;

 private:
  Result<std::size_t> Failed(std::string message);

  BodyReader reader_;
  std::shared_ptr<BodyPipe> pipe_;
  bool waiting_ = false;
  std::optional<std::uint64_t> length_;
  std::uint64_t sent_ = 0;
  bool done_ = false;
  std::optional<Error> error_;
};

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_BODY_UPLOAD_H_
