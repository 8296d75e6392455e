// SPDX-License-Identifier: Apache-2.0
#include "h1_exchange.h"

#include <algorithm>
#include <array>
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/rfc7230.hpp>
#include <boost/optional.hpp>
#include <charconv>
#include <chrono>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "../request_check.h"
#include "outbound/internal/ascii.h"

namespace outbound::http::internal::transport {
namespace beast_http = boost::beast::http;

namespace {

// The timeout parameter of a Keep-Alive field's value ("timeout=5,
// max=100"): comma-separated name=value pairs, names in any case, a value
// perhaps quoted; the smallest if several say. None if none says it in
// whole seconds. A day at most: longer is as good as none, and must not
// overflow the clock.
std::optional<std::chrono::seconds> KeepAliveTimeout(std::string_view value) {
  constexpr std::int64_t kDay = 24 * 3600;
  std::optional<std::int64_t> smallest;
  while (!value.empty()) {
    std::size_t comma = value.find(',');
    std::string_view param = value.substr(0, comma);
    value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
    std::size_t equals = param.find('=');
    if (equals == std::string_view::npos) continue;
    if (!SameHeaderName(outbound::internal::TrimOws(param.substr(0, equals)), "timeout")) continue;
    std::string_view number = outbound::internal::TrimOws(param.substr(equals + 1));
    if (number.size() >= 2 && number.front() == '"' && number.back() == '"') {
      number = number.substr(1, number.size() - 2);
    }
    if (number.empty() ||
        !std::all_of(number.begin(), number.end(), outbound::internal::IsAsciiDigit)) {
      continue;
    }
    std::int64_t seconds = 0;
    // Digits only: the number fits, or it is past int64's (a day, then).
    if (std::from_chars(number.data(), number.data() + number.size(), seconds).ec != std::errc()) {
      seconds = kDay;
    }
    smallest = std::min(std::min(seconds, kDay), smallest.value_or(kDay));
  }
  if (!smallest) return std::nullopt;
  return std::chrono::seconds(*smallest);
}

}  // namespace

// Beast's parser of one response, its callbacks the exchange's: the final
// head's fields go straight into the response (Beast keeps no copy of
// them), and the body to the exchange as it arrives (TakeWireBody: decoded
// if gzip-coded, to the sink or into the response within the limit). One
// per response: a Beast parser reads one message.
class H1Parser final : public beast_http::basic_parser<false> {
 public:
  explicit H1Parser(Exchange& exchange) : exchange_(exchange) {}

  int status() const { return status_; }
  int version() const { return version_; }
  // Both a Transfer-Encoding and a Content-Length came in the final head.
  bool both_lengths() const { return transfer_encoding_ && content_length_; }
  // Whether the connection may carry another exchange after this one: by
  // the version and the Connection fields, every one of them (RFC 9110
  // §5.3: several are one list), a "close" in any winning.
  bool KeepAlive() const {
    if (connection_close_) return false;
    return version_ >= 11 || connection_keep_alive_;
  }
  // How long the server keeps the connection open while idle, by its
  // Keep-Alive field's timeout (the smallest, if several say); none if no
  // field says it in whole seconds.
  std::optional<std::chrono::seconds> keep_alive_timeout() const { return keep_alive_timeout_; }
  // Why the body cannot go on (too large, the caller stopped reading).
  std::optional<AttemptOutcome>& verdict() { return verdict_; }

 private:
  using string_view = boost::beast::string_view;
  using error_code = boost::system::error_code;

  void on_request_impl(beast_http::verb, string_view, string_view, int, error_code&) override {}
  void on_response_impl(int code, string_view, int version, error_code& ec) override {
    ec = {};
    status_ = code;
    version_ = version;
  }
  void on_field_impl(beast_http::field name, string_view name_string, string_view value,
                     error_code& ec) override {
    ec = {};
    // The bound Beast's own field container sets (FieldTooLarge).
    if (name_string.size() + 2 > kMaxFieldBytes || value.size() + 2 > kMaxFieldBytes) {
      throw std::length_error("a field larger than 65533 bytes");
    }
    // An interim head's fields, and trailer fields, are not the answer's.
    if (status_ < 200 || is_header_done()) return;
    if (name == beast_http::field::transfer_encoding) transfer_encoding_ = true;
    if (name == beast_http::field::content_length) content_length_ = true;
    if (name == beast_http::field::connection) {
      beast_http::token_list tokens(value);
      connection_close_ = connection_close_ || tokens.exists("close");
      connection_keep_alive_ = connection_keep_alive_ || tokens.exists("keep-alive");
    }
    if (name == beast_http::field::keep_alive) {
      if (auto timeout = KeepAliveTimeout(std::string_view(value.data(), value.size()))) {
        keep_alive_timeout_ = std::min(*timeout, keep_alive_timeout_.value_or(*timeout));
      }
    }
    Response& response = exchange_.response;
    if (response.headers.empty()) response.headers.reserve(512);
    response.headers.Add(std::string_view(name_string.data(), name_string.size()),
                         std::string_view(value.data(), value.size()));
  }
  void on_header_impl(error_code& ec) override { ec = {}; }
  void on_body_init_impl(const boost::optional<std::uint64_t>&, error_code& ec) override {
    ec = {};  // room is made once the head has been judged (H1Exchange::Parse)
  }
  std::size_t on_body_impl(string_view body, error_code& ec) override { return Take(body, ec); }
  void on_chunk_header_impl(std::uint64_t, string_view, error_code& ec) override { ec = {}; }
  std::size_t on_chunk_body_impl(std::uint64_t, string_view body, error_code& ec) override {
    return Take(body, ec);
  }
  void on_finish_impl(error_code& ec) override { ec = {}; }

  std::size_t Take(string_view body, error_code& ec) {
    ec = {};
    verdict_ = TakeWireBody(exchange_, std::string_view(body.data(), body.size()));
    if (verdict_) {
      ec = boost::system::errc::make_error_code(boost::system::errc::operation_canceled);
      return 0;
    }
    return body.size();
  }

  static constexpr std::size_t kMaxFieldBytes = 65535;

  Exchange& exchange_;
  int status_ = 0;
  int version_ = 0;
  bool transfer_encoding_ = false;
  bool content_length_ = false;
  bool connection_close_ = false;
  bool connection_keep_alive_ = false;
  std::optional<std::chrono::seconds> keep_alive_timeout_;
  std::optional<AttemptOutcome> verdict_;
};

// The parser of the response being read, made again in place for each:
// one allocation per connection, not one per response.
struct H1Reader {
  std::optional<H1Parser> parser;
};

namespace {

// A buffer of the connection's keeps its room up to this for the next
// exchange: a request's head, a response's; a larger one (a request body)
// gives it back.
constexpr std::size_t kKeptBytes = 4 * 1024;

// A request body goes to the connection this much at a time.
constexpr std::size_t kBodyPiece = 64 * 1024;

// A kept-alive connection that closes before any answer within this of its
// request's hand-over is taken for its server's close crossing the request
// (AttemptOutcome::kept_alive_closed): a round trip, with room to spare.
constexpr Duration kKeptAliveCloseWindow = std::chrono::seconds(1);

// Beast holds a field's name and value in at most 65533 bytes each and
// throws std::length_error past that, within kMaxHeaderBytes.
AttemptOutcome FieldTooLarge() {
  return Failed(ErrorKind::kResponseTooLarge,
                "a field of the response's header section is larger than 65533 bytes");
}

// What is wrong in `part`, the start of a head (its first kMaxHeaderBytes
// + 1 bytes at most), read in one piece; empty if nothing is yet. Beast
// finds a fault in a line it has whole, but once it has asked for more it
// waits for the head's end: a head cut short, or over the bound, is judged
// again this way, so that the verdict does not depend on how its bytes
// arrived.
std::optional<AttemptOutcome> HeadFault(std::string_view part, bool head) {
  beast_http::response_parser<beast_http::empty_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(kMaxHeaderBytes) + 1);
  parser.eager(false);
  parser.skip(head);
  part = part.substr(0, kMaxHeaderBytes + 1);
  boost::system::error_code ec;
  try {
    parser.put(boost::asio::buffer(part.data(), part.size()), ec);
  } catch (const std::length_error&) {
    return FieldTooLarge();
  }
  if (!ec || ec == beast_http::error::need_more || ec == beast_http::error::header_limit) {
    return std::nullopt;
  }
  return Malformed(ec.message());
}

}  // namespace

H1Exchange::H1Exchange(CodecEvents& events, std::uint64_t connection_id, Clock& clock)
    : events_(events),
      connection_id_(connection_id),
      clock_(clock),
      reader_(std::make_unique<H1Reader>()) {}

H1Exchange::~H1Exchange() = default;

bool H1Exchange::Start(Exchange& exchange) {
  const CallRequest& request = *exchange.request;
  current_ = &exchange;
  answer_begun_ = false;
  if (answered_ > 0) reused_at_ = clock_.Now();
  head_ = request.method == "HEAD";
  request_.clear();
  request_.reserve(128 + exchange.path.size());
  request_.append(request.method).append(" ").append(exchange.path).append(" HTTP/1.1\r\nHost: ");
  request_.append(*exchange.authority).append("\r\n");
  ForEachRequestHeader(exchange, [&](std::string_view name, std::string_view value) {
    // `TE: trailers` is HTTP/2's (a hop-by-hop field here, and HTTP/1.1's
    // trailer fields are dropped): not sent.
    if (SameHeaderName(name, "TE")) return;
    request_.append(name).append(": ").append(value).append("\r\n");
  });
  if (request.default_user_agent) {
    request_.append("User-Agent: ").append(kDefaultUserAgent).append("\r\n");
  }
  bool has_body = !request.body.empty() || request.method == "POST" || request.method == "PUT" ||
                  request.method == "PATCH";
  if (request.body_source) {
    // Produce writes the body as the connection takes it, chunked unless
    // its length is known.
    exchange.upload.emplace(request.body_source);
    if (const auto& length = request.body_source.length) {
      request_.append("Content-Length: ").append(std::to_string(*length)).append("\r\n");
    } else {
      request_.append("Transfer-Encoding: chunked\r\n");
    }
  } else if (has_body) {
    request_.append("Content-Length: ").append(std::to_string(request.body.size())).append("\r\n");
  }
  request_.append("\r\n");
  body_left_ = request.body;  // written after the head, by Produce
  NewParser();
  exchange.request_sent = true;
  return true;
}

H1Parser& H1Exchange::parser() { return *reader_->parser; }

void H1Exchange::NewParser() {
  reader_->parser.reset();
  reader_->parser.emplace(*current_);
  head_read_.clear();
  parser().header_limit(static_cast<std::uint32_t>(kMaxHeaderBytes));
  // The body's limit is TakeBody's: a 2xx answer a sink takes has none.
  parser().body_limit(boost::none);
  // The head alone first, so that Parse takes it before any of the body is
  // read: however the bytes arrive, a body's error comes after the headers
  // and the trailer fields never join them. Parse turns eager on after it.
  parser().eager(false);
  parser().skip(head_);
}

bool H1Exchange::Cancel(Exchange&) {
  // The response would still come on this connection: it goes.
  current_ = nullptr;
  body_left_ = {};
  reusable_ = false;
  return false;
}

bool H1Exchange::Produce(std::string& out) {
  if (!request_.empty()) {
    out.append(request_);
    request_.clear();
    if (request_.capacity() > kKeptBytes) request_.shrink_to_fit();
    if (current_ != nullptr && current_->TimedUpload()) {
      current_->events->RequestHeadersSent(clock_.Now());
    }
  }
  if (current_ != nullptr && !body_left_.empty()) {
    // A piece at a time, as a streamed body's: the body is not copied
    // whole into the connection's buffer. With the head, a small one goes
    // in the same write.
    std::size_t n = std::min(body_left_.size(), kBodyPiece);
    out.append(body_left_.substr(0, n));
    body_left_.remove_prefix(n);
    if (body_left_.empty() && current_->TimedUpload()) {
      current_->events->RequestBodySent(clock_.Now());
    }
    return true;
  }
  if (current_ == nullptr || !current_->upload || current_->upload->done()) return true;
  return ProduceUploadPiece(out);
}

bool H1Exchange::ProduceUploadPiece(std::string& out) {
  // One piece per call: the connection asks again once it has written it,
  // so the body is never held whole, however long it is.
  BodyUpload& upload = *current_->upload;
  upload_buffer_.resize(kBodyPiece);
  Result<std::size_t> n = upload.Read(upload_buffer_);
  if (!n) {
    // Part of the request is on the wire: the connection cannot carry
    // another, and the exchange ends with the reader's failure.
    Fail(upload.Failure());
    return false;
  }
  // A pipe with nothing yet: its next Write or Close wakes the connection
  // (Resume), which asks again.
  if (upload.waiting()) return true;
  bool chunked = !upload.length().has_value();
  if (chunked && *n > 0) {
    char size[20];
    auto [end, ec] = std::to_chars(std::begin(size), std::end(size), *n, 16);
    out.append(size, end).append("\r\n");
  }
  out.append(upload_buffer_.data(), *n);
  if (chunked && *n > 0) out.append("\r\n");
  if (upload.done()) {
    if (chunked) out.append("0\r\n\r\n");
    current_->events->RequestBodySent(clock_.Now());
    upload_buffer_.clear();
    upload_buffer_.shrink_to_fit();
  }
  return true;
}

bool H1Exchange::Received(const std::uint8_t* data, std::size_t size) {
  if (current_ == nullptr) {
    // Bytes nobody asked for: the connection cannot be trusted after them.
    reusable_ = false;
    error_ = "HTTP/1.1: the server sent bytes with no request outstanding";
    return false;
  }
  answer_begun_ = true;
  in_.append(reinterpret_cast<const char*>(data), size);
  return Parse();
}

bool H1Exchange::Parse() {
  while (current_ != nullptr && !in_.empty()) {
    boost::system::error_code ec;
    std::size_t used = 0;
    try {
      used = parser().put(boost::asio::buffer(in_.data(), in_.size()), ec);
    } catch (const std::length_error&) {
      Fail(FieldTooLarge());
      return false;
    }
    if (!current_->headers_done) head_read_.append(in_, 0, used);
    in_.erase(0, used);
    if (auto& verdict = parser().verdict()) {
      Fail(std::move(*verdict));
      return false;
    }
    bool need_more = ec == beast_http::error::need_more;
    // Beast bounds the status line and the fields each on its own; the
    // bound is the whole head's. Until the head is whole, all the parser
    // took was head (it is not eager until then).
    if (ec == beast_http::error::header_limit ||
        (!current_->headers_done &&
         head_read_.size() + (parser().is_header_done() ? 0 : in_.size()) > kMaxHeaderBytes)) {
      if (auto fault = HeadFault(head_read_ + in_, head_)) {
        Fail(std::move(*fault));
        return false;
      }
      Fail(Failed(ErrorKind::kResponseTooLarge, "the response's header section is larger than " +
                                                    std::to_string(kMaxHeaderBytes) + " bytes"));
      return false;
    }
    // Past the head the parser is eager: what it leaves is an unfinished
    // chunk-size line or trailer section, held to the head's bound (else a
    // server could fill the client's memory with one endless line).
    if (current_->headers_done && in_.size() > kMaxHeaderBytes) {
      Fail(Failed(ErrorKind::kResponseTooLarge,
                  "the response's chunk-size line or trailer section is larger than " +
                      std::to_string(kMaxHeaderBytes) + " bytes"));
      return false;
    }
    if (ec && !need_more) {
      Fail(Malformed(ec.message()));
      return false;
    }
    if (parser().is_header_done() && !current_->headers_done) {
      int status = parser().status();
      if (status < 100 || status > 599 || status == 101) {
        Fail(Malformed("its status is not one a client can take"));
        return false;
      }
      if (status < 200) {  // an interim answer: the final one follows
        if (!parser().is_done()) {
          Fail(Malformed("an interim answer with a body"));
          return false;
        }
        NewParser();
        continue;
      }
      // Beast refuses Transfer-Encoding after Content-Length, and chunked
      // before it, but not another coding before it.
      if (parser().both_lengths()) {
        Fail(Malformed("both Content-Length and Transfer-Encoding"));
        return false;
      }
      Response& response = current_->response;
      response.status = status;
      response.version = parser().version() == 10 ? "1.0" : "1.1";
      response.received_at = clock_.WallNow();
      HeadWhole(*current_);
      if (current_->Streams() || current_->decoder || current_->body_dropped ||
          HasNoBody(*current_)) {
        // No announced length to judge: a streamed or dropped body has no
        // limit, a decoded one is judged by its decoded size, and a HEAD's
        // or a 304's length is of a body that does not come.
      } else if (auto length = parser().content_length()) {
        if (*length > current_->BodyLimit()) {
          // Announced: fail now, read nothing of it.
          Fail(Failed(ErrorKind::kResponseTooLarge, "the response's " + current_->TooLargeText()));
          return false;
        }
        current_->response.body.reserve(static_cast<std::size_t>(*length));
      }
      current_->headers_done = true;
      current_->events->HeadersArrived(clock_.Now());
      if (current_->Streams()) current_->events->BodyStreaming(clock_.Now());
      parser().eager(true);
      head_read_.clear();
      if (head_read_.capacity() > kKeptBytes) head_read_.shrink_to_fit();
    }
    if (parser().is_done()) {
      if (!in_.empty()) reusable_ = false;  // bytes after the response
      Answered();
      return true;
    }
    if (need_more || used == 0) return true;
  }
  return true;
}

void H1Exchange::Answered() {
  ++answered_;
  if (!parser().KeepAlive()) reusable_ = false;
  if (current_->decoder && !current_->decoder->complete()) reusable_ = false;
  kept_until_.reset();
  if (auto timeout = parser().keep_alive_timeout(); timeout && reusable_) {
    // The server closes the connection once it has been idle that long:
    // it is not chosen again once near it, so that a request is not
    // written as the server closes (the server's time starts as it writes
    // the answer's end, ours as we read it).
    Duration timeout_for_us = *timeout;
    timeout_for_us -= std::min<Duration>(std::chrono::seconds(1), timeout_for_us / 2);
    if (timeout_for_us <= Duration::zero()) {
      reusable_ = false;
    } else {
      kept_until_ = clock_.Now() + timeout_for_us;
    }
  }
  AttemptOutcome outcome;
  TakeAnswer(*current_, outcome);
  End(std::move(outcome));
}

void H1Exchange::PeerClosed() {
  reusable_ = false;
  if (current_ == nullptr) return;
  if (current_->headers_done && parser().need_eof()) {
    boost::system::error_code ec;
    parser().put_eof(ec);
    if (!ec && parser().is_done()) return Answered();
  }
  if (!current_->headers_done && !current_->verdict && !(head_read_.empty() && in_.empty())) {
    // The head was cut short: what came of it is judged in one piece.
    if (auto fault = HeadFault(head_read_ + in_, head_)) return Fail(std::move(*fault));
  }
  // Closed() reports it.
}

void H1Exchange::Fail(AttemptOutcome&& outcome) {
  reusable_ = false;
  current_->verdict = std::make_unique<AttemptOutcome>(std::move(outcome));
  error_ = current_->verdict->result.error().message();
}

void H1Exchange::Closed(const std::string& why, bool cannot_improve) {
  reusable_ = false;
  if (current_ == nullptr) return;
  AttemptOutcome outcome;
  if (current_->verdict) {
    outcome = std::move(*current_->verdict);
  } else if (current_->headers_done) {
    outcome = Failed(ErrorKind::kTransport, "the response's body was cut short: " + why);
  } else {
    outcome = Failed(ErrorKind::kTransport, "no response: " + why);
    // Every HTTP/1.1 attempt has its own connection: its end is this one's.
    outcome.connection_lost = true;
    // A kept-alive connection's end crossing the request: a close that
    // comes with no byte of any answer (an interim one neither), soon
    // after the request was handed over. Later, the server was at work on
    // it, and its end is the dependency's failure.
    outcome.kept_alive_closed =
        answered_ > 0 && !answer_begun_ && clock_.Now() - reused_at_ <= kKeptAliveCloseWindow;
    outcome.cannot_improve = cannot_improve;
  }
  End(std::move(outcome));
}

void H1Exchange::End(AttemptOutcome&& outcome) {
  Exchange* exchange = current_;
  current_ = nullptr;
  // Answered before its body was all sent (a 413, say): the rest of the
  // body would be read as the next request.
  if ((exchange->upload && !exchange->upload->done()) || !body_left_.empty()) reusable_ = false;
  body_left_ = {};
  outcome.body_streamed = exchange->streamed;
  reader_->parser.reset();
  outcome.connection = connection_id_;
  if (!outcome.result && exchange->headers_done) outcome.body_failed = true;
  events_.ExchangeEnded(*exchange, std::move(outcome));
  events_.RoomChanged();
}

}  // namespace outbound::http::internal::transport
