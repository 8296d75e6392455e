// SPDX-License-Identifier: Apache-2.0
// fuzz/response_head_fuzzer.cc
//
// Fuzzes the native transport's HTTP/1.1 response handling: H1Exchange,
// the codec that feeds what a server sent to Boost.Beast's parser and
// applies the client's own rules on top (the status line, framing, the
// header-section bound, the body limit). The codec does no I/O, so the
// target drives it as a Connection does: one GET (or HEAD) started, the
// server's bytes handed to Received() in pieces, then, if the exchange has
// not ended, the peer's close (PeerClosed, then Closed).
//
// Input (fuzz_input.h): the body limit (Settings::max_response_bytes;
// default 4096, at most 1 MiB); the method ("HEAD", or anything else for a
// GET); the split points, offsets into the response at which a read ends
// (decimal, separated by anything else); repeats "N P L ...": the
// response's bytes [P, P+L) repeated N more times in place, so a small
// input can make a header bomb or a long status line (up to four, at most
// 256 KiB added); then the rest of the input, LFs included, is the
// response. Checks:
//   - nothing crashes, and no sanitizer reports anything;
//   - the exchange ends exactly once, with a response or with an error of
//     kind kInvalidResponse (never retried: cannot_improve), too large or
//     transport; after an error the connection is not reused;
//   - a response has a status 200-599 (an interim 1xx is never the answer),
//     a body no longer than the limit, an empty body for HEAD, 204 and 304,
//     not both Transfer-Encoding and Content-Length, no two Content-Lengths
//     that differ; its body is the bytes its Content-Length announced, or
//     without either header every byte after the head; and each head read
//     (interim ones too) fits in kMaxHeaderBytes;
//   - the same bytes give the same outcome (whether it is a response, the
//     error kind, status, version, headers, body, and the outcome's flags)
//     split where the input says, in one read, and (up to 4 KiB) a byte per
//     read.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attempt.h"
#include "fuzz_input.h"
#include "outbound/clock.h"
#include "transport/codec.h"
#include "transport/exchange.h"
#include "transport/h1_exchange.h"

namespace outbound::fuzz {
namespace {

using http::internal::AttemptOutcome;
using http::internal::transport::Codec;
using http::internal::transport::CodecEvents;
using http::internal::transport::Exchange;
using http::internal::transport::H1Exchange;
using http::internal::transport::kMaxHeaderBytes;

constexpr long long kDefaultLimit = 4096;
constexpr long long kMaxLimit = 1 << 20;
constexpr std::size_t kMaxRepeated = 256 * 1024;
constexpr std::size_t kMaxSplits = 64;
// Past this, a byte per read costs more than it finds (each read parses
// the unfinished head again).
constexpr std::size_t kMaxBytewise = 4096;

// A clock that stands still; the codec reads only WallNow.
class StillClock final : public Clock {
 public:
  TimePoint Now() const override { return TimePoint(std::chrono::hours(1)); }
  std::chrono::system_clock::time_point WallNow() const override {
    return std::chrono::system_clock::time_point(std::chrono::seconds(1795996800));
  }
  Timer ScheduleAt(TimePoint, std::function<void()>) override { return Timer(); }
};

// What one run ended with, in a form two runs can be compared in.
struct Summary {
  int ended = 0;  // times ExchangeEnded was called
  bool ok = false;
  std::string kind;  // the error's kind, when !ok
  int status = 0;
  std::string version;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  bool cannot_improve = false;
  bool connection_lost = false;
  bool body_failed = false;
  bool reusable = false;  // the codec's, after the exchange

  bool SameOutcome(const Summary& o) const {
    return ended == o.ended && ok == o.ok && kind == o.kind && status == o.status &&
           version == o.version && headers == o.headers && body == o.body &&
           cannot_improve == o.cannot_improve && connection_lost == o.connection_lost &&
           body_failed == o.body_failed;
  }
};

class Recorder final : public CodecEvents {
 public:
  void ExchangeEnded(Exchange&, AttemptOutcome&& outcome) override {
    ++summary.ended;
    summary.ok = static_cast<bool>(outcome.result);
    if (outcome.result) {
      const http::Response& r = *outcome.result;
      summary.status = r.status;
      summary.version = r.version;
      for (const auto& field : r.headers) summary.headers.emplace_back(field.name, field.value);
      summary.body = r.body;
    } else {
      summary.kind = std::string(ToString(outcome.result.error().kind()));
    }
    summary.cannot_improve = outcome.cannot_improve;
    summary.connection_lost = outcome.connection_lost;
    summary.body_failed = outcome.body_failed;
  }
  void RoomChanged() override {}

  Summary summary;
};

// Runs one exchange: `response` handed to the codec in the pieces that
// `ends` (increasing offsets) mark, then the peer's close.
Summary Run(const std::string& response, const std::vector<std::size_t>& ends, bool head,
            std::size_t limit) {
  StillClock clock;
  Recorder recorder;
  H1Exchange codec(recorder, 1, clock);
  auto request = std::make_shared<http::internal::CallRequest>();
  request->method = head ? "HEAD" : "GET";
  request->url = "http://payments/x";
  const std::string authority = "payments";
  Exchange exchange;
  exchange.id = 1;
  // An attempt on a path with no layers: the codec only tells it events.
  static const http::internal::AttemptPath kNoLayers({}, {}, nullptr);
  auto attempt = std::make_shared<http::internal::Attempt>(kNoLayers, clock);
  http::internal::AttemptFields no_attempt_headers;  // none
  exchange.events = attempt;
  exchange.request = request.get();
  exchange.attempt_headers = &no_attempt_headers;
  exchange.path = "/x";
  exchange.authority = &authority;
  exchange.max_body = limit;
  FUZZ_CHECK(codec.Start(exchange));
  std::string written;
  FUZZ_CHECK(codec.Produce(written));
  FUZZ_CHECK(!written.empty());

  const auto* bytes = reinterpret_cast<const std::uint8_t*>(response.data());
  std::size_t at = 0;
  bool going = true;
  for (std::size_t i = 0; i <= ends.size() && going && recorder.summary.ended == 0; ++i) {
    std::size_t end = i < ends.size() ? ends[i] : response.size();
    if (end <= at) continue;
    going = codec.Received(bytes + at, end - at);
    if (!going) FUZZ_CHECK(!codec.error().empty());
    at = end;
  }
  if (recorder.summary.ended == 0) {
    // The connection's end, as Connection reports it: an orderly close
    // first, when the read did not fail.
    if (going) codec.PeerClosed();
    codec.Closed(going ? "the server closed the connection" : codec.error(),
                 /*cannot_improve=*/false);
  }
  recorder.summary.reusable = codec.Reusable();
  return recorder.summary;
}

// The runs of decimal digits in `text`, in order, at most `most` of them
// (a run too long for a long long counts as 0).
std::vector<long long> Numbers(std::string_view text, std::size_t most) {
  std::vector<long long> numbers;
  std::size_t i = 0;
  while (i < text.size() && numbers.size() < most) {
    if (text[i] < '0' || text[i] > '9') {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < text.size() && text[j] >= '0' && text[j] <= '9') ++j;
    numbers.push_back(FuzzFields::ParseInteger(text.substr(i, j - i)).value_or(0));
    i = j;
  }
  return numbers;
}

// Where the reads of a `size`-byte response end: the offsets `text` names
// inside it, in increasing order.
std::vector<std::size_t> SplitPoints(std::string_view text, std::size_t size) {
  std::vector<std::size_t> ends;
  for (long long n : Numbers(text, kMaxSplits)) {
    if (n > 0 && static_cast<unsigned long long>(n) < size)
      ends.push_back(static_cast<std::size_t>(n));
  }
  std::sort(ends.begin(), ends.end());
  ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
  return ends;
}

// `response` with, for each "times at length" in `spec` (at most four, in
// order, each on the bytes the one before left), its bytes [at, at +
// length) repeated `times` more times in place; kMaxRepeated bytes added in
// all, at most.
std::string Repeat(std::string response, std::string_view spec) {
  std::vector<long long> n = Numbers(spec, 12);
  std::size_t budget = kMaxRepeated;
  for (std::size_t i = 0; i + 2 < n.size(); i += 3) {
    if (n[i] <= 0 || n[i + 1] < 0 || n[i + 2] <= 0 ||
        static_cast<unsigned long long>(n[i + 1]) >= response.size()) {
      continue;
    }
    auto at = static_cast<std::size_t>(n[i + 1]);
    std::size_t length = std::min(static_cast<std::size_t>(n[i + 2]), response.size() - at);
    std::size_t times = std::min(static_cast<std::size_t>(n[i]), budget / length);
    std::string piece = response.substr(at, length);
    std::string repeated;
    repeated.reserve(piece.size() * times);
    for (std::size_t j = 0; j < times; ++j) repeated += piece;
    response.insert(at, repeated);
    budget -= repeated.size();
  }
  return response;
}

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool SameIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Checks the properties of one run's outcome on `response` alone.
void CheckOutcome(const Summary& s, const std::string& response, bool head, std::size_t limit) {
  FUZZ_CHECK(s.ended == 1);
  if (!s.ok) {
    FUZZ_CHECK(s.kind == ToString(ErrorKind::kInvalidResponse) ||
               s.kind == ToString(ErrorKind::kResponseTooLarge) ||
               s.kind == ToString(ErrorKind::kTransport));
    if (s.kind == ToString(ErrorKind::kInvalidResponse)) FUZZ_CHECK(s.cannot_improve);
    FUZZ_CHECK(!s.reusable);
    return;
  }
  FUZZ_CHECK(s.status >= 200 && s.status <= 599);
  FUZZ_CHECK(s.version == "1.0" || s.version == "1.1");
  FUZZ_CHECK(s.body.size() <= limit);
  bool no_body = head || s.status == 204 || s.status == 304;
  if (no_body) FUZZ_CHECK(s.body.empty());

  // Each head the codec read, interim ones included, within the bound; and
  // where the final one ends.
  std::size_t start = 0;
  std::size_t head_end = 0;
  for (;;) {
    std::size_t blank = response.find("\r\n\r\n", start);
    FUZZ_CHECK(blank != std::string::npos);
    head_end = blank + 4;
    FUZZ_CHECK(head_end - start <= kMaxHeaderBytes);
    int status = response.size() >= start + 12
                     ? http::internal::transport::ParseStatus(
                           std::string_view(response).substr(start + 9, 3))
                     : 0;
    if (status < 100 || status > 199) break;
    start = head_end;
  }

  bool transfer_encoding = false;
  std::optional<std::string_view> length;
  bool lengths_agree = true;
  for (const auto& [name, value] : s.headers) {
    if (SameIgnoringCase(name, "Transfer-Encoding")) transfer_encoding = true;
    if (!SameIgnoringCase(name, "Content-Length")) continue;
    std::string_view rest = value;
    for (;;) {
      std::size_t comma = rest.find(',');
      std::string_view token = TrimSpace(rest.substr(0, comma));
      if (length && *length != token) lengths_agree = false;
      if (!length) length = token;
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  FUZZ_CHECK(!(transfer_encoding && length));
  FUZZ_CHECK(lengths_agree);
  if (no_body || transfer_encoding) return;
  std::string_view after = std::string_view(response).substr(head_end);
  if (length) {
    std::optional<long long> n = FuzzFields::ParseInteger(*length);
    FUZZ_CHECK(n && *n >= 0 && static_cast<std::size_t>(*n) <= after.size());
    FUZZ_CHECK(s.body == after.substr(0, static_cast<std::size_t>(*n)));
  } else {
    FUZZ_CHECK(s.body == after);
  }
}

void CheckOne(const std::uint8_t* data, std::size_t size) {
  FuzzFields fields(data, size);
  auto limit =
      static_cast<std::size_t>(std::clamp(fields.NextInteger(kDefaultLimit), 0LL, kMaxLimit));
  bool head = fields.Next() == "HEAD";
  std::string splits = fields.Next();
  std::string repeat = fields.Next();
  std::string response = Repeat(fields.Rest(), repeat);

  Summary split = Run(response, SplitPoints(splits, response.size()), head, limit);
  CheckOutcome(split, response, head, limit);
  Summary whole = Run(response, {}, head, limit);
  FUZZ_CHECK(whole.SameOutcome(split));
  if (response.size() <= kMaxBytewise) {
    std::vector<std::size_t> every(response.size());
    for (std::size_t i = 0; i < every.size(); ++i) every[i] = i + 1;
    Summary bytewise = Run(response, every, head, limit);
    FUZZ_CHECK(bytewise.SameOutcome(split));
  }
}

}  // namespace
}  // namespace outbound::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  outbound::fuzz::CheckOne(data, size);
  return 0;
}
