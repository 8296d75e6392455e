// SPDX-License-Identifier: Apache-2.0
// fuzz/grpc_response_fuzzer.cc
//
// Fuzzes what the gRPC client reads of an answer, all of it a server's
// bytes: the Deframer that cuts the body into messages (each gzip-inflated
// when its flag says so), StatusOfResponse over the answer's fields, and
// the wire's decoders of field values (grpc-message's percent-encoding,
// grpc-timeout, "-bin" base64, MetadataOf).
//
// Input (fuzz_input.h): the answer's grpc-encoding ("" for none); the
// receive limit (default 65536, at most 1 MiB); the split points, offsets
// into the body at which a DATA piece ends (decimal, separated by anything
// else); the HTTP status (default 200); the header fields, "name: value" a
// line, up to an empty line; the trailer fields the same way; then the
// rest of the input, LFs included, is the body. Checks:
//   - nothing crashes, and no sanitizer reports anything;
//   - the Deframer hands on the same messages and ends with the same
//     status fed split where the input says, in one piece, and (up to
//     4 KiB) a byte at a time; Feed returns status(); messages() counts
//     the messages; none comes after an error, none is over the limit;
//   - the messages are what the body frames, read here independently: a
//     flag-0 message's bytes as they are, a flag-1 message's inflated by
//     GzipDecompress; the status is OK after Finish exactly when the body
//     is whole messages the rules accept, and RESOURCE_EXHAUSTED when the
//     first refused message is announced over the limit;
//   - every message handed on comes back the same through Frame and a new
//     Deframer, and, gzip-coded by FrameForSending, through a gzip one;
//   - StatusOfResponse gives a code from 0 to 16, never OK for an HTTP
//     status other than 200;
//   - for every field value: DecodeStatusMessage never grows it and undoes
//     EncodeStatusMessage, whose output is printable ASCII; a grpc-timeout
//     that decodes is not negative, and a positive duration encoded comes
//     back no shorter, in at most 8 digits and a unit; a base64 value that
//     decodes comes back the same bytes through EncodeBinaryValue;
//     MetadataOf's keys are lower case and leave out pseudo-headers and
//     the fields the wire reads for the caller.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fuzz_input.h"
#include "outbound/http/message.h"
#include "outbound/rpc/settings.h"
#include "rpc/wire/framing.h"
#include "rpc/wire/gzip.h"
#include "rpc/wire/metadata.h"
#include "rpc/wire/status.h"
#include "rpc/wire/timeout.h"

namespace outbound::fuzz {
namespace {

using rpc::Code;
using rpc::Status;
namespace wire = rpc::internal;

constexpr long long kDefaultLimit = 65536;
constexpr long long kMaxLimit = 1 << 20;
constexpr std::size_t kMaxSplits = 64;
constexpr std::size_t kMaxBytewise = 4096;

// What one Deframer run ended with.
struct Deframed {
  std::vector<std::string> messages;
  Status fed;       // the status after the last Feed
  Status finished;  // the status Finish returned

  bool operator==(const Deframed& o) const {
    return messages == o.messages && fed.code == o.fed.code && fed.message == o.fed.message &&
           finished.code == o.finished.code && finished.message == o.finished.message;
  }
};

// Runs a Deframer over `pieces`, checking the properties every run shares.
Deframed Deframe(std::string_view encoding, std::size_t limit,
                 const std::vector<std::string_view>& pieces) {
  Deframed run;
  bool failed = false;
  wire::Deframer deframer(encoding, limit, [&](std::string message, bool) {
    FUZZ_CHECK(!failed);
    FUZZ_CHECK(message.size() <= limit);
    run.messages.push_back(std::move(message));
  });
  for (std::string_view piece : pieces) {
    Status s = deframer.Feed(piece);
    FUZZ_CHECK(s.code == deframer.status().code && s.message == deframer.status().message);
    failed = !s.ok();
    run.fed = s;
  }
  run.finished = deframer.Finish();
  FUZZ_CHECK(run.finished.code == deframer.status().code);
  FUZZ_CHECK(deframer.messages() == run.messages.size());
  // An error stays: Finish cannot make a failed body good again.
  FUZZ_CHECK(run.fed.ok() || run.finished.code == run.fed.code);
  return run;
}

std::vector<std::string_view> SplitAt(std::string_view body, const std::vector<std::size_t>& at) {
  std::vector<std::string_view> pieces;
  std::size_t from = 0;
  for (std::size_t end : at) {
    if (end <= from || end >= body.size()) continue;
    pieces.push_back(body.substr(from, end - from));
    from = end;
  }
  pieces.push_back(body.substr(from));
  return pieces;
}

std::vector<std::size_t> ReadSplits(std::string_view text) {
  std::vector<std::size_t> at;
  std::size_t i = 0;
  while (i < text.size() && at.size() < kMaxSplits) {
    if (text[i] < '0' || text[i] > '9') {
      ++i;
      continue;
    }
    std::size_t value = 0;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
      value = std::min<std::size_t>(value * 10 + static_cast<std::size_t>(text[i] - '0'), 1 << 30);
    }
    at.push_back(value);
  }
  std::sort(at.begin(), at.end());
  return at;
}

// The body read as the Deframer's contract says, independently: the
// messages it must hand on, and whether it must end OK. `refused_for_size`:
// the first refused message was announced over the limit.
struct Expected {
  std::vector<std::string> messages;
  bool ok = false;
  bool refused_for_size = false;
};

Expected Read(std::string_view encoding, std::size_t limit, std::string_view body) {
  Expected e;
  while (!body.empty()) {
    if (body.size() < wire::kFramePrefixSize) return e;  // cut inside a prefix
    auto byte = [&](std::size_t i) { return static_cast<unsigned char>(body[i]); };
    unsigned char flag = byte(0);
    std::size_t length = (std::size_t{byte(1)} << 24) | (std::size_t{byte(2)} << 16) |
                         (std::size_t{byte(3)} << 8) | std::size_t{byte(4)};
    // The prefix's rules, in the order CheckPrefix applies them.
    if (flag > 1) return e;
    if (flag == 1 && !wire::EqualsIgnoringAsciiCase(encoding, "gzip")) return e;
    if (length > limit) {
      e.refused_for_size = true;
      return e;
    }
    body.remove_prefix(wire::kFramePrefixSize);
    if (body.size() < length) return e;  // cut inside a message
    std::string_view payload = body.substr(0, length);
    body.remove_prefix(length);
    if (flag == 0) {
      e.messages.emplace_back(payload);
      continue;
    }
    auto inflated = wire::GzipDecompress(payload, limit);
    if (!inflated) return e;
    e.messages.push_back(std::move(*inflated));
  }
  e.ok = true;
  return e;
}

// Each message comes back the same through the client's own framing.
void CheckReframed(std::string_view encoding, std::size_t limit,
                   const std::vector<std::string>& messages) {
  std::string plain;
  for (const std::string& m : messages) wire::FrameTo(plain, m);
  Deframed again = Deframe(encoding, limit, {plain});
  FUZZ_CHECK(again.finished.ok());
  FUZZ_CHECK(again.messages == messages);
  if (!wire::EqualsIgnoringAsciiCase(encoding, "gzip") || messages.empty()) return;
  std::string coded;
  // The limit applies to a message as announced too, and an incompressible
  // one grows a little in its coding.
  std::size_t coded_limit = limit;
  for (const std::string& m : messages) {
    auto framed = wire::FrameForSending(m, limit, /*gzip=*/true);
    FUZZ_CHECK(framed.has_value());
    coded_limit = std::max(coded_limit, framed->size() - wire::kFramePrefixSize);
    coded += *framed;
  }
  Deframed inflated = Deframe(encoding, coded_limit, {coded});
  FUZZ_CHECK(inflated.finished.ok());
  FUZZ_CHECK(inflated.messages == messages);
}

void CheckDeframer(std::string_view encoding, std::size_t limit, const std::string& split_text,
                   std::string_view body) {
  Deframed split = Deframe(encoding, limit, SplitAt(body, ReadSplits(split_text)));
  FUZZ_CHECK(split == Deframe(encoding, limit, {body}));
  if (body.size() <= kMaxBytewise) {
    std::vector<std::string_view> bytes;
    for (std::size_t i = 0; i < body.size(); ++i) bytes.push_back(body.substr(i, 1));
    FUZZ_CHECK(split == Deframe(encoding, limit, bytes));
  }

  Expected expected = Read(encoding, limit, body);
  FUZZ_CHECK(split.finished.ok() == expected.ok);
  if (expected.ok) {
    FUZZ_CHECK(split.messages == expected.messages);
  } else {
    // Up to the first refused message, the same messages.
    FUZZ_CHECK(split.messages.size() <= expected.messages.size());
    FUZZ_CHECK(std::equal(split.messages.begin(), split.messages.end(), expected.messages.begin()));
    if (expected.refused_for_size) FUZZ_CHECK(split.finished.code == Code::kResourceExhausted);
  }
  CheckReframed(encoding, limit, split.messages);
}

void CheckValue(std::string_view value) {
  std::string decoded = wire::DecodeStatusMessage(value);
  FUZZ_CHECK(decoded.size() <= value.size());
  std::string encoded = wire::EncodeStatusMessage(value);
  for (char c : encoded) FUZZ_CHECK(c >= 0x20 && c <= 0x7E);
  FUZZ_CHECK(wire::DecodeStatusMessage(encoded) == value);

  if (auto timeout = wire::DecodeTimeout(value)) {
    FUZZ_CHECK(*timeout >= Duration::zero());
    if (*timeout > Duration::zero() && *timeout < Duration::max()) {
      std::string text = wire::EncodeTimeout(*timeout);
      FUZZ_CHECK(text.size() >= 2 && text.size() <= 9);
      auto back = wire::DecodeTimeout(text);
      FUZZ_CHECK(back.has_value() && *back >= *timeout);
    }
  }

  if (auto bytes = wire::DecodeBinaryValue(value)) {
    std::string base64 = wire::EncodeBinaryValue(*bytes);
    FUZZ_CHECK(base64.size() == (bytes->size() * 4 + 2) / 3);
    auto back = wire::DecodeBinaryValue(base64);
    FUZZ_CHECK(back.has_value() && *back == *bytes);
  }
}

// Reads "name: value" lines up to an empty one (or the input's end).
http::ResponseHeaders ReadFields(FuzzFields& fields, std::vector<std::string>& values) {
  http::ResponseHeaders out;
  while (!fields.done()) {
    std::string line = fields.Next();
    if (line.empty()) break;
    // From the second byte: a pseudo-header's name (":status") keeps its colon.
    std::size_t colon = line.find(':', 1);
    std::string_view name = std::string_view(line).substr(0, colon);
    std::string_view value;
    if (colon != std::string::npos) {
      value = std::string_view(line).substr(colon + 1);
      if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    }
    out.Add(name, value);
    values.emplace_back(value);
  }
  return out;
}

void CheckStatus(int http_status, const http::ResponseHeaders& headers,
                 const http::ResponseHeaders& trailers) {
  Status status = wire::StatusOfResponse(http_status, headers, trailers);
  int code = static_cast<int>(status.code);
  FUZZ_CHECK(code >= 0 && code <= 16);
  if (http_status != 200) FUZZ_CHECK(!status.ok());

  for (const http::ResponseHeaders* fields : {&headers, &trailers}) {
    for (const auto& [key, value] : wire::MetadataOf(*fields)) {
      for (char c : key) FUZZ_CHECK(!(c >= 'A' && c <= 'Z'));
      FUZZ_CHECK(key != "grpc-status" && key != "grpc-message" && key != "content-type");
      FUZZ_CHECK(key.empty() || key.front() != ':');
      (void)value;
    }
  }
}

}  // namespace
}  // namespace outbound::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace outbound::fuzz;
  FuzzFields fields(data, size);
  std::string encoding = fields.Next();
  long long limit = fields.NextInteger(kDefaultLimit);
  if (limit < 0 || limit > kMaxLimit) limit = kDefaultLimit;
  std::string splits = fields.Next();
  long long http_status = fields.NextInteger(200);
  if (http_status < 0 || http_status > 999) http_status = 200;

  std::vector<std::string> values;
  outbound::http::ResponseHeaders headers = ReadFields(fields, values);
  outbound::http::ResponseHeaders trailers = ReadFields(fields, values);
  std::string body = fields.Rest();

  CheckDeframer(encoding, static_cast<std::size_t>(limit), splits, body);
  CheckStatus(static_cast<int>(http_status), headers, trailers);
  for (const std::string& value : values) CheckValue(value);
  CheckValue(encoding);
  return 0;
}
