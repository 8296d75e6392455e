// SPDX-License-Identifier: Apache-2.0
#include "framing.h"

#include <algorithm>

#include "gzip.h"
#include "metadata.h"

namespace outbound::rpc::internal {
namespace {

void AppendPrefix(std::string& out, bool compressed, std::size_t length) {
  out += static_cast<char>(compressed ? 1 : 0);
  out += static_cast<char>((length >> 24) & 0xFF);
  out += static_cast<char>((length >> 16) & 0xFF);
  out += static_cast<char>((length >> 8) & 0xFF);
  out += static_cast<char>(length & 0xFF);
}

bool IsIdentity(std::string_view encoding) {
  return encoding.empty() || EqualsIgnoringAsciiCase(encoding, "identity");
}

}  // namespace

void FrameTo(std::string& out, std::string_view message) {
  out.reserve(out.size() + kFramePrefixSize + message.size());
  AppendPrefix(out, false, message.size());
  out.append(message);
}

std::string Frame(std::string_view message) {
  std::string framed;
  FrameTo(framed, message);
  return framed;
}

StatusOr<std::string> FrameForSending(std::string_view message, std::size_t max_send, bool gzip) {
  std::size_t limit = std::min(max_send, kMaxFrameLength);
  if (message.size() > limit) {
    return FailWith(Code::kResourceExhausted,
                    "the request message is " + std::to_string(message.size()) +
                        " bytes, over the send limit of " + std::to_string(limit) + " bytes");
  }
  if (!gzip) return Frame(message);
  StatusOr<std::string> coded = GzipCompress(message);
  if (!coded) return tl::unexpected(std::move(coded).error());
  if (coded->size() > kMaxFrameLength) {
    return FailWith(Code::kResourceExhausted, "the request message is " +
                                                  std::to_string(coded->size()) +
                                                  " bytes gzip-coded, over the frame limit of " +
                                                  std::to_string(kMaxFrameLength) + " bytes");
  }
  std::string framed;
  framed.reserve(kFramePrefixSize + coded->size());
  AppendPrefix(framed, true, coded->size());
  framed.append(*coded);
  return framed;
}

Deframer::Deframer(std::string_view encoding, std::size_t receive_limit, MessageSink sink)
    : encoding_(encoding), limit_(receive_limit), sink_(std::move(sink)) {}

Status Deframer::Feed(std::string_view bytes) {
  if (ignoring_) return status_;
  while (status_.ok() && !bytes.empty()) {
    if (!in_body_) {
      std::size_t take = std::min(kFramePrefixSize - prefix_have_, bytes.size());
      std::copy_n(bytes.data(), take, prefix_.data() + prefix_have_);
      prefix_have_ += take;
      bytes.remove_prefix(take);
      if (prefix_have_ == kFramePrefixSize) StartMessage();
      continue;
    }
    std::size_t take = std::min(length_ - body_.size(), bytes.size());
    body_.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
    if (body_.size() == length_) EndMessage();
  }
  return status_;
}

Status Deframer::Finish() {
  if (!status_.ok() || ignoring_) return status_;
  if (in_body_) {
    FailAs(Code::kInternal, "the response ended inside a message: " + std::to_string(body_.size()) +
                                " of " + std::to_string(length_) + " bytes");
  } else if (prefix_have_ > 0) {
    FailAs(Code::kInternal,
           "the response ended inside a message's prefix: " + std::to_string(prefix_have_) +
               " of " + std::to_string(kFramePrefixSize) + " bytes");
  }
  return status_;
}

Status CheckPrefix(unsigned char flag, std::size_t length, std::string_view encoding,
                   std::size_t receive_limit, std::size_t number) {
  // Built only for a prefix refused: every message of every answer passes here.
  auto which = [number] { return "message " + std::to_string(number) + " of the response"; };
  if (flag > 1) {
    return {Code::kInternal,
            which() + " has compressed flag " + std::to_string(flag) + ", not 0 or 1"};
  }
  if (flag == 1 && IsIdentity(encoding)) {
    return {Code::kInternal,
            which() + " is compressed, but the response's grpc-encoding is " +
                (encoding.empty() ? std::string("absent") : "\"" + std::string(encoding) + "\"")};
  }
  if (flag == 1 && !EqualsIgnoringAsciiCase(encoding, "gzip")) {
    return {Code::kUnimplemented, which() + " is compressed with \"" + std::string(encoding) +
                                      "\", which this client cannot decode (it takes gzip)"};
  }
  if (length > receive_limit) {
    return {Code::kResourceExhausted, "the response message is " + std::to_string(length) +
                                          " bytes, over the receive limit of " +
                                          std::to_string(receive_limit) + " bytes"};
  }
  return {};
}

void Deframer::StartMessage() {
  unsigned char flag = prefix_[0];
  length_ = (std::size_t{prefix_[1]} << 24) | (std::size_t{prefix_[2]} << 16) |
            (std::size_t{prefix_[3]} << 8) | std::size_t{prefix_[4]};
  if (Status wrong = CheckPrefix(flag, length_, encoding_, limit_, messages_ + 1); !wrong.ok()) {
    return FailAs(wrong.code, std::move(wrong.message));
  }
  compressed_ = flag == 1;
  in_body_ = true;
  body_.clear();
  body_.reserve(length_);
  if (length_ == 0) EndMessage();
}

void Deframer::EndMessage() {
  in_body_ = false;
  prefix_have_ = 0;
  std::string message = std::move(body_);
  body_ = std::string();
  if (compressed_ && !leave_compressed_) {
    StatusOr<std::string> inflated = GzipDecompress(message, limit_);
    if (!inflated) {
      status_ = std::move(inflated).error();
      return;
    }
    message = std::move(*inflated);
  }
  ++messages_;
  sink_(std::move(message), compressed_ && leave_compressed_);
}

void Deframer::FailAs(Code code, std::string message) {
  status_ = Status{code, std::move(message)};
}

}  // namespace outbound::rpc::internal
