// SPDX-License-Identifier: Apache-2.0
// HTTP/1.1 on one connection: one exchange at a time, the request written
// once and never again, the response read by Boost.Beast's parser. Every
// HTTP/1.1 rule of the client lives here:
//  - the status line: HTTP/1.x, a three-digit status 100-599 (Beast, and
//    the range check here); an answer without one is invalid;
//  - framing: conflicting Content-Lengths, Transfer-Encoding with
//    Content-Length, a malformed chunk: invalid (RFC 9112 §6.3), and the
//    connection is not used again;
//  - limits: a header section over kMaxHeaderBytes (the status line
//    counted), one field over 65533 bytes (Beast's), a body (announced or
//    received) over the limit: too large, at once;
//  - the end: a body shorter than its length or its chunks, cut by the
//    connection's end, is an error; a body delimited by the end is whole;
//  - reuse: only after a response read whole that keeps the connection
//    alive; never after an error, a cut attempt, or bytes nobody asked for;
//    and while idle, only until the server's Keep-Alive timeout (less a
//    second, or half of it when under two), if it gave one; after a
//    timeout of 0, not at all.
// Internal.
#ifndef OUTBOUND_SRC_HTTP_TRANSPORT_H1_EXCHANGE_H_
#define OUTBOUND_SRC_HTTP_TRANSPORT_H1_EXCHANGE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codec.h"
#include "outbound/clock.h"

namespace outbound::http::internal::transport {

class H1Parser;   // Beast's response parser, kept out of this header
struct H1Reader;  // the room it is made in, once per response

class H1Exchange final : public Codec {
 public:
  H1Exchange(CodecEvents& events, std::uint64_t connection_id, Clock& clock);
  ~H1Exchange() override;
  H1Exchange(const H1Exchange&) = delete;
  H1Exchange& operator=(const H1Exchange&) = delete;

  // Not past the server's Keep-Alive timeout either: the pool closes such
  // a connection, but the timer that says so may not have run yet.
  bool HasRoom() const override {
    return current_ == nullptr && reusable_ && (!kept_until_ || clock_.Now() < *kept_until_);
  }
  bool Idle() const override { return current_ == nullptr; }
  bool Reusable() const override { return reusable_; }
  std::optional<TimePoint> KeptUntil() const override { return kept_until_; }
  bool Start(Exchange& exchange) override;
  bool Cancel(Exchange& exchange) override;
  bool Received(const std::uint8_t* data, std::size_t size) override;
  // No exchange, or one whose request is not written yet.
  bool Quiet() const override { return current_ == nullptr || !request_.empty(); }
  bool Held() const override { return current_ != nullptr && current_->Held(); }
  void PeerClosed() override;
  bool Produce(std::string& out) override;
  bool Finished() const override { return false; }
  void Closed(const std::string& why, bool cannot_improve) override;

 private:
  // Parses what `in_` holds; false if the exchange failed (`current_`'s
  // verdict says how).
  bool Parse();
  void NewParser();
  H1Parser& parser();  // the current response's
  // The response is whole: the exchange ends with it.
  void Answered();
  void Fail(AttemptOutcome&& outcome);
  void End(AttemptOutcome&& outcome);
  // Appends the next piece of a streamed request body; false if its reader
  // failed (the exchange has failed with it).
  bool ProduceUploadPiece(std::string& out);

  CodecEvents& events_;
  std::uint64_t connection_id_;
  Clock& clock_;
  Exchange* current_ = nullptr;
  bool reusable_ = true;
  std::uint64_t answered_ = 0;           // exchanges answered on this connection
  bool answer_begun_ = false;            // a byte of the current exchange's answer came
  TimePoint reused_at_{};                // when the current exchange came, if not the first
  std::optional<TimePoint> kept_until_;  // by the last answer's Keep-Alive timeout
  bool head_ = false;
  std::string request_;              // the request's head, written once, by Produce
  std::string_view body_left_;       // of the request's body, what is not written yet
  std::vector<char> upload_buffer_;  // a streamed body's piece being written
  std::string in_;                   // read, not yet taken by the parser
  std::string head_read_;            // of the head being read, what the parser took
  std::unique_ptr<H1Reader> reader_;
};

}  // namespace outbound::http::internal::transport

#endif  // OUTBOUND_SRC_HTTP_TRANSPORT_H1_EXCHANGE_H_
