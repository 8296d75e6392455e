// SPDX-License-Identifier: Apache-2.0
#include "body_upload.h"

#include <algorithm>
#include <exception>
#include <string>
#include <utility>

#include "body_pipe_link.h"

namespace outbound::http::internal {
namespace {

std::string WhatWasThrown() {
  try {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

}  // namespace

BodyUpload::BodyUpload(const BodySource& source) : pipe_(source.pipe), length_(source.length) {
  if (pipe_ != nullptr) return;  // read by PipeLink::Take, not by `open`'s reader
  // The reader runs on the event loop: a throw must not leave it.
  try {
    reader_ = source.open();
  } catch (...) {
    error_ = Error(ErrorKind::kInvalidRequest,
                   "the request body's source threw on opening: " + WhatWasThrown());
    return;
  }
  if (!reader_) {
    error_ = Error(ErrorKind::kInvalidRequest, "the request body's source gave no reader");
  }
}

Result<std::size_t> BodyUpload::Read(std::span<char> buffer) {
  if (error_) return tl::unexpected(*error_);
  if (done_ || buffer.empty()) return 0;
  if (pipe_ != nullptr) {
    PipeLink::Taken taken = PipeLink::Take(*pipe_, buffer);
    done_ = taken.end;
    waiting_ = taken.size == 0 && !taken.end;
    return taken.size;
  }
  if (length_) {
    buffer = buffer.first(
        static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), *length_ - sent_)));
    if (buffer.empty()) {
      done_ = true;
      return 0;
    }
  }
  Result<std::size_t> got = 0;
  try {
    got = reader_(buffer);
  } catch (...) {
    return Failed("the request body's reader threw: " + WhatWasThrown());
  }
  if (!got) return Failed("the request body's reader failed: " + got.error().message());
  if (*got > buffer.size()) {
    return Failed("the request body's reader said it gave " + std::to_string(*got) +
                  " bytes into a buffer of " + std::to_string(buffer.size()));
  }
  sent_ += *got;
  if (*got == 0) {
    if (length_ && sent_ < *length_) {
      return Failed("the request body ended after " + std::to_string(sent_) + " of the " +
                    std::to_string(*length_) + " bytes it announced");
    }
    done_ = true;
  } else if (length_ && sent_ == *length_) {
    done_ = true;  // no need to ask a reader for the end it has reached
  }
  return got;
}

Result<std::size_t> BodyUpload::Failed(std::string message) {
  error_ = Error(ErrorKind::kInvalidRequest, std::move(message));
  return tl::unexpected(*error_);
}

AttemptOutcome BodyUpload::Failure() const {
  AttemptOutcome outcome;
  outcome.result = tl::unexpected(
      error_.value_or(Error(ErrorKind::kInvalidRequest, "the request body could not be read")));
  return outcome;
}

}  // namespace outbound::http::internal
