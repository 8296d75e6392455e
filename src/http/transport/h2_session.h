// SPDX-License-Identifier: Apache-2.0
// HTTP/2 on one connection: nghttp2's client session, fed the bytes the
// connection reads and asked for the bytes it writes. Every HTTP/2 rule of
// the client lives here:
//  - streams: no more at once than the server's SETTINGS_MAX_CONCURRENT_
//    STREAMS (none before its first SETTINGS frame arrives);
//  - a stream the server refused (RST_STREAM REFUSED_STREAM, or above a
//    GOAWAY's last-stream-id) before any header: unprocessed, so the retry
//    layer may send it again whatever its method; a stream whose HEADERS
//    never went out: unprocessed too;
//  - a stream is a response only if it ended with END_STREAM: a reset
//    (even NO_ERROR) before it is an error; one after it, of any code,
//    stops the rest of an upload the server answered early (RFC 9113 §8.1;
//    HAProxy sends CANCEL) and leaves the answer whole;
//  - a GOAWAY with an error code ends a connection that failed (RFC 9113
//    §5.4.1): its streams without an answer's headers end as lost with it,
//    whatever RST_STREAM the server sends each after it; those above its
//    last-stream-id are left out, as by a retired connection, and the
//    first of them (the request the server met as it failed) is marked
//    `met_connection_failure`: the classify layer takes it for the cause
//    if it meets that a second time;
//  - a connection that closes after an answer's END_STREAM, its upload
//    still going, leaves the answer whole;
//  - malformed responses (no or bad :status, conflicting or wrong
//    content-length, connection-specific fields): nghttp2's HTTP messaging
//    checks reset the stream, and the exchange fails as invalid;
//  - limits: a header section over kMaxHeaderBytes (decoded or on the
//    wire), an announced or received body over the limit: the stream is
//    reset (CANCEL) and the exchange fails as too large, at once; a
//    request's header section over the server's
//    SETTINGS_MAX_HEADER_LIST_SIZE is not sent, and fails as invalid;
//  - floods: nghttp2's own bounds (queued SETTINGS/PING acks), and ours:
//    more than kMaxFramesWithoutProgress frames in a row that carry
//    nothing for any exchange (PING, SETTINGS, WINDOW_UPDATE, PRIORITY,
//    empty DATA or CONTINUATION, unknown types) in one window of
//    kFloodWindow (the count starts again each window, so a run across
//    two windows may reach twice the bound) end the connection. A DATA
//    frame this end sends counts as progress too: an upload draws a
//    WINDOW_UPDATE or two per 16 KiB, and is no flood.
// Internal.
#ifndef OUTBOUND_SRC_HTTP_TRANSPORT_H2_SESSION_H_
#define OUTBOUND_SRC_HTTP_TRANSPORT_H2_SESSION_H_

#include <nghttp2/nghttp2.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "codec.h"
#include "h2_memory.h"
#include "outbound/clock.h"

namespace outbound::http::internal::transport {

// Frames in a row that carry nothing for any exchange, within
// kFloodWindow, before the connection is taken for a flood (Envoy counts
// such frames too). The count starts again each window: a server's
// keepalive PINGs on a quiet stream, seconds or even milliseconds apart
// for hours, are no flood; a thousand of them in a second are.
inline constexpr std::uint32_t kMaxFramesWithoutProgress = 1000;
inline constexpr std::chrono::seconds kFloodWindow{1};

// Flow-control windows offered to the server: a 100-byte answer and a
// 64 MiB one both flow without waiting for WINDOW_UPDATEs. A stream whose
// reader is behind (ReceiveWindow) is sent at most kStreamWindow more.
inline constexpr std::int32_t kStreamWindow = 1 << 20;
inline constexpr std::int32_t kConnectionWindow = 1 << 24;

class H2Session final : public Codec {
 public:
  H2Session(CodecEvents& events, std::uint64_t connection_id, Clock& clock);
  ~H2Session() override;
  H2Session(const H2Session&) = delete;
  H2Session& operator=(const H2Session&) = delete;

  bool Ready() const override { return settings_received_; }
  bool HasRoom() const override;
  bool Idle() const override { return streams_.empty(); }
  // Spent stream ids end a connection as a GOAWAY does: it serves out its
  // streams and is closed, rather than hold a connection slot for nothing.
  bool Reusable() const override {
    return !goaway_ && !broken_ && !StreamIdsSpent() && !Degraded();
  }
  // A probe out: until it is found unanswered (the pool closes it then,
  // idle: nothing else would, as no stream goes on it meanwhile).
  std::optional<TimePoint> KeptUntil() const override {
    return ping_sent_ ? std::optional<TimePoint>(*ping_sent_ + kPongTimeout) : std::nullopt;
  }
  bool Start(Exchange& exchange) override;
  bool Cancel(Exchange& exchange) override;
  void Resume(Exchange& exchange) override;
  bool Received(const std::uint8_t* data, std::size_t size) override;
  void PeerClosed() override {}
  bool Produce(std::string& out) override;
  bool Finished() const override;
  bool Closing() override;
  void Closed(const std::string& why, bool cannot_improve) override;

 private:
  using Streams = std::unordered_map<std::int32_t, Exchange*>;

  static int OnBeginFrame(nghttp2_session*, const nghttp2_frame_hd* hd, void* self);
  static int OnFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* self);
  static int OnInvalidFrameRecv(nghttp2_session*, const nghttp2_frame* frame, int error,
                                void* self);
  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, nghttp2_rcbuf* name,
                      nghttp2_rcbuf* value, std::uint8_t flags, void* self);
  static int OnDataChunk(nghttp2_session*, std::uint8_t flags, std::int32_t stream_id,
                         const std::uint8_t* data, std::size_t len, void* self);
  static int OnFrameSend(nghttp2_session*, const nghttp2_frame* frame, void* self);
  static int OnFrameNotSend(nghttp2_session*, const nghttp2_frame* frame, int error, void* self);
  static int OnStreamClose(nghttp2_session*, std::int32_t stream_id, std::uint32_t error_code,
                           void* self);
  static ssize_t ReadBody(nghttp2_session*, std::int32_t stream_id, std::uint8_t* buf,
                          std::size_t length, std::uint32_t* flags, nghttp2_data_source* source,
                          void* self);

  // The exchange on `stream_id`, or null. Inline for the stream the last
  // call found: a response's frames and fields come one stream at a time.
  Exchange* Find(std::int32_t stream_id) const {
    return stream_id == found_id_ ? found_ : Search(stream_id);
  }
  Exchange* Search(std::int32_t stream_id) const;
  // Takes the stream out of streams_, keeping its node.
  void Forget(Streams::iterator stream);
  // Ends the exchange on `stream_id` with `outcome`, once it is safe to
  // tell the pool (after nghttp2 returns).
  void End(std::int32_t stream_id, AttemptOutcome&& outcome);
  // The same with the outcome already in the exchange's `outcome`, where it
  // stays until the pool takes it (Deliver): an answer is not moved on the way.
  void Queue(std::int32_t stream_id);
  // How the exchange on `stream_id` ends as its stream closes with
  // `error_code`: written to its `outcome`.
  void Closing(Exchange& exchange, std::int32_t stream_id, std::uint32_t error_code);
  // Resets the stream with `error_code` and ends its exchange with
  // `verdict` now.
  void Refuse(Exchange& exchange, AttemptOutcome&& verdict,
              std::uint32_t error_code = NGHTTP2_CANCEL);
  // Refuses a response that breaks HTTP/2's message rules (RFC 9113
  // §8.1.1): a stream error of type PROTOCOL_ERROR, the exchange malformed,
  // saying `why`, or why + `field` quoted + `after`. Out of line, so the
  // checks on every field build no string.
  void RefuseMalformed(Exchange& exchange, std::string_view why);
  void RefuseMalformed(Exchange& exchange, std::string_view why, std::string_view field,
                       std::string_view after);
  // Ends, unsent, a request whose header section (`list_size` bytes, as
  // RFC 9113 §6.5.2 counts them) is over the `server_takes` the server
  // announced: the request's own failure (kInvalidRequest), not retried and
  // not the dependency's.
  void RefuseUnsent(Exchange& exchange, std::size_t list_size, std::uint32_t server_takes);
  // Tells the pool what happened while nghttp2 was running.
  void Deliver();
  // Before an answer goes up: the caller's copy of its fields, the room
  // kept by the exchange.
  static void KeepHeaderRoom(Exchange& exchange);
  // Whether a response field's value is valid (ValidFieldValue), checking
  // each value HPACK's dynamic table repeats once per session, not on
  // every response.
  bool ValidValue(nghttp2_rcbuf* value);
  // ValidValue's slow way: every kept value, then the grammar.
  bool CheckValue(nghttp2_rcbuf* value);

  CodecEvents& events_;
  std::uint64_t connection_id_;
  Clock& clock_;
  H2Memory memory_;  // the session's heap: declared first, freed last
  nghttp2_session* session_ = nullptr;
  Streams streams_;
  // The nodes of ended streams, for the next ones: no allocation per stream.
  std::vector<Streams::node_type> spare_nodes_;
  // The stream Find found last (0 and null: none, as the connection's own
  // stream 0 is): nghttp2 calls back for one stream several times in a row.
  mutable std::int32_t found_id_ = 0;
  mutable Exchange* found_ = nullptr;
  // Start's lower-cased copies of field names, kept so their room is
  // reused (nghttp2 copies the fields it is given).
  std::vector<std::string> lowered_names_;
  // A traceparent went out indexed, so its name is in the HPACK table for
  // the never-indexed ones after it to refer to (no name sent, nor coded).
  bool traceparent_named_ = false;
  // Values found valid (ValidValue), each held by a reference of ours so
  // that no other value can come at its address while it is here: a field
  // the server's HPACK table repeats comes as the same buffer every time.
  // Short ones only, so what is held stays small.
  static constexpr std::size_t kValidValues = 16;
  static constexpr std::size_t kLongestKeptValue = 256;
  std::array<nghttp2_rcbuf*, kValidValues> valid_values_{};
  std::size_t next_valid_value_ = 0;  // where ValidValue looks first
  std::vector<Exchange*> ended_;      // each with its `outcome`, for Deliver
  bool settings_received_ = false;
  bool room_changed_ = false;
  bool goaway_ = false;
  std::int32_t goaway_last_stream_ = 0;            // the GOAWAY's last-stream-id, once one came
  std::uint32_t goaway_error_ = NGHTTP2_NO_ERROR;  // and its error code
  // The server retires a connection it used (a GOAWAY that kept streams,
  // as nginx's keepalive_requests, or one that ended it for an error
  // after taking others): a request it left out, sent or not, is no
  // refusal of the dependency's (but for FailedTheConnection's).
  bool Retiring() const { return goaway_ && goaway_last_stream_ > 0; }
  // `stream_id` is the first after the last-stream-id of a GOAWAY whose
  // error can be a request's doing (what it sent broke the server's
  // framing, its header coding or a limit of its own): the request the
  // server met as it failed. Not after ENHANCE_YOUR_CALM, FLOW_CONTROL_ERROR
  // or SETTINGS_TIMEOUT, which are about the connection, not a request.
  // Only a suspect: nghttp2's servers (Node's, Apache's) send INTERNAL_ERROR
  // too when a client resets too many streams (RFC 9113 §10.5).
  bool FailedTheConnection(std::int32_t stream_id) const {
    bool a_requests_doing =
        goaway_error_ == NGHTTP2_PROTOCOL_ERROR || goaway_error_ == NGHTTP2_INTERNAL_ERROR ||
        goaway_error_ == NGHTTP2_FRAME_SIZE_ERROR || goaway_error_ == NGHTTP2_COMPRESSION_ERROR;
    return goaway_ && a_requests_doing &&
           stream_id == (goaway_last_stream_ == 0 ? 1 : goaway_last_stream_ + 2);
  }
  // No stream id is left for another request.
  bool StreamIdsSpent() const;
  bool broken_ = false;
  std::uint32_t frames_without_progress_ = 0;
  // A connection whose peer is gone without a FIN (a NAT's dropped flow, a
  // dead host) would take every new stream until the kernel gives up on
  // it, many minutes on. So a stream cancelled, or a new one started
  // beside others, while the server has been quiet for kQuietBeforePing
  // sends a PING (Probe): no new stream goes here until it is answered
  // (one more connection, at most, on a healthy server; the retries and
  // the calls of that second, else) and, unanswered for kPongTimeout, the
  // connection is degraded: not reused, closed once it is idle.
  static constexpr Duration kQuietBeforePing = std::chrono::seconds(1);
  static constexpr Duration kPongTimeout = std::chrono::seconds(1);
  void Probe(TimePoint now);
  bool Degraded() const { return ping_sent_ && clock_.Now() - *ping_sent_ >= kPongTimeout; }
  TimePoint last_heard_;          // when the server's last bytes came
  TimePoint flood_window_start_;  // frames_without_progress_ counts from here
  // Received is running: the frames it hands nghttp2 all came at
  // last_heard_ (the clock read once a read), and at wall_heard_ on the
  // wall clock (read when the read's first answer needs it).
  bool receiving_ = false;
  std::optional<std::chrono::system_clock::time_point> wall_heard_;
  std::optional<TimePoint> ping_sent_;  // a PING awaits its ACK since then
  // One probe until the server sends HEADERS or DATA again: gRPC servers
  // (grpc-go, grpc-core) count each PING after the first that comes while
  // they write nothing as a strike and, at the third (grpc-go 1.33: the
  // fourth PING), close the connection with GOAWAY ENHANCE_YOUR_CALM
  // "too_many_pings", failing every call on it.
  bool may_probe_ = true;
};

}  // namespace outbound::http::internal::transport

#endif  // OUTBOUND_SRC_HTTP_TRANSPORT_H2_SESSION_H_
