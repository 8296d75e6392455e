// SPDX-License-Identifier: Apache-2.0
#include "h2_session.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "../request_check.h"
#include "h2_fields.h"
#include "outbound/internal/ascii.h"

namespace outbound::http::internal::transport {
namespace {

// Streams on one connection at most, whatever the server allows.
constexpr std::uint32_t kMaxStreams = 1000;
// Produce() hands the connection at most this much per call.
constexpr std::size_t kProduceChunk = 64 * 1024;
// Deliver keeps the room of its list of ended streams up to this many.
constexpr std::size_t kKeptEnded = 128;

std::string_view View(const std::uint8_t* p, std::size_t n) {
  return {reinterpret_cast<const char*>(p), n};
}

nghttp2_nv Field(std::string_view name, std::string_view value) {
  return nghttp2_nv{const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>(name.data())),
                    const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>(value.data())),
                    name.size(), value.size(), NGHTTP2_NV_FLAG_NONE};
}

struct CallbacksFree {
  void operator()(nghttp2_session_callbacks* c) const { nghttp2_session_callbacks_del(c); }
};
struct OptionFree {
  void operator()(nghttp2_option* o) const { nghttp2_option_del(o); }
};

// A field's name or value for an error message: quoted, at most 64 bytes,
// bytes outside printable ASCII as \xNN (the server may send any bytes).
std::string Quoted(std::string_view bytes) {
  constexpr std::size_t kShown = 64;
  std::string text = "\"";
  for (char c : bytes.substr(0, kShown)) {
    auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f && c != '"' && c != '\\') {
      text += c;
    } else {
      constexpr std::string_view kHex = "0123456789abcdef";
      text += "\\x";
      text += kHex[byte >> 4];
      text += kHex[byte & 0xf];
    }
  }
  return text + (bytes.size() > kShown ? "...\"" : "\"");
}

AttemptOutcome TooLarge(const std::string& what) {
  return Failed(ErrorKind::kResponseTooLarge, "the response's " + what);
}

}  // namespace

H2Session::H2Session(CodecEvents& events, std::uint64_t connection_id, Clock& clock)
    : events_(events),
      connection_id_(connection_id),
      clock_(clock),
      last_heard_(clock.Now()),
      flood_window_start_(last_heard_) {
  nghttp2_session_callbacks* raw = nullptr;
  nghttp2_session_callbacks_new(&raw);
  std::unique_ptr<nghttp2_session_callbacks, CallbacksFree> callbacks(raw);
  nghttp2_session_callbacks_set_on_begin_frame_callback(raw, OnBeginFrame);
  nghttp2_session_callbacks_set_on_frame_recv_callback(raw, OnFrameRecv);
  nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(raw, OnInvalidFrameRecv);
  nghttp2_session_callbacks_set_on_header_callback2(raw, OnHeader);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(raw, OnDataChunk);
  nghttp2_session_callbacks_set_on_frame_send_callback(raw, OnFrameSend);
  nghttp2_session_callbacks_set_on_frame_not_send_callback(raw, OnFrameNotSend);
  nghttp2_session_callbacks_set_on_stream_close_callback(raw, OnStreamClose);
  nghttp2_option* raw_option = nullptr;
  nghttp2_option_new(&raw_option);
  std::unique_ptr<nghttp2_option, OptionFree> option(raw_option);
  // Until the server's SETTINGS arrive no stream is started anyway; this is
  // what nghttp2 assumes meanwhile.
  nghttp2_option_set_peer_max_concurrent_streams(raw_option, 100);
  nghttp2_option_set_no_closed_streams(raw_option, 1);
  // The session checks HTTP/2's message rules itself (h2_fields.h, and
  // OnHeader, OnFrameRecv and OnDataChunk).
  nghttp2_option_set_no_http_messaging(raw_option, 1);
  // The session acknowledges body bytes itself (OnDataChunk), so a stream
  // whose reader is behind (ReceiveWindow) can leave its own unacknowledged.
  nghttp2_option_set_no_auto_window_update(raw_option, 1);
  nghttp2_session_client_new3(&session_, raw, this, raw_option, memory_.mem());
  nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, kStreamWindow},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, static_cast<std::uint32_t>(kMaxHeaderBytes)},
  };
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings));
  nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, kConnectionWindow);
}

H2Session::~H2Session() {
  nghttp2_session_del(session_);
  // Freed by the session's allocator, which outlives this (memory_).
  for (nghttp2_rcbuf* value : valid_values_) {
    if (value != nullptr) nghttp2_rcbuf_decref(value);
  }
}

bool H2Session::ValidValue(nghttp2_rcbuf* value) {
  // A server sends its fields in the same order every time, so the value
  // after the last one found is looked for first.
  if (valid_values_[next_valid_value_] == value) {
    next_valid_value_ = (next_valid_value_ + 1) % kValidValues;
    return true;
  }
  return CheckValue(value);
}

bool H2Session::CheckValue(nghttp2_rcbuf* value) {
  for (std::size_t at = 0; at < kValidValues; ++at) {
    if (valid_values_[at] == value) {
      next_valid_value_ = (at + 1) % kValidValues;
      return true;
    }
  }
  nghttp2_vec bytes = nghttp2_rcbuf_get_buf(value);
  if (!ValidFieldValue(View(bytes.base, bytes.len))) return false;
  if (bytes.len <= kLongestKeptValue) {
    // In the place of the value this one follows (a date that changed, say).
    nghttp2_rcbuf*& slot = valid_values_[next_valid_value_];
    if (slot != nullptr) nghttp2_rcbuf_decref(slot);
    nghttp2_rcbuf_incref(value);
    slot = value;
    next_valid_value_ = (next_valid_value_ + 1) % kValidValues;
  }
  return true;
}

bool H2Session::StreamIdsSpent() const {
  return nghttp2_session_get_next_stream_id(session_) > (1u << 31) - 3;
}

bool H2Session::HasRoom() const {
  if (!settings_received_ || goaway_ || broken_ || StreamIdsSpent() || ping_sent_) return false;
  std::uint32_t allowed = std::min(
      kMaxStreams,
      nghttp2_session_get_remote_settings(session_, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS));
  return streams_.size() < allowed;
}

bool H2Session::Finished() const {
  return broken_ || (!nghttp2_session_want_read(session_) && !nghttp2_session_want_write(session_));
}

bool H2Session::Start(Exchange& exchange) {
  const CallRequest& request = *exchange.request;
  // Four pseudo-header fields, the headers, a user-agent and a
  // content-length. A request with a few headers keeps its fields on the
  // stack (nghttp2 copies them).
  const std::size_t header_count = request.headers.size() + exchange.attempt_headers->size();
  constexpr std::size_t kInlineFields = 24;
  std::array<nghttp2_nv, kInlineFields> inline_fields;
  std::vector<nghttp2_nv> heap_fields;
  std::span<nghttp2_nv> room(inline_fields);
  if (header_count + 6 > kInlineFields) {
    heap_fields.resize(header_count + 6);
    room = heap_fields;
  }
  std::size_t used = 0;
  room[used++] = Field(":method", request.method);
  // h2c (prior knowledge) is plain http; the URL says which.
  room[used++] = Field(":scheme", request.url.starts_with("https:") ? "https" : "http");
  room[used++] = Field(":authority", *exchange.authority);
  room[used++] = Field(":path", exchange.path);
  // Field names go lower case on HTTP/2 (RFC 9113 §8.2.1). A name that is
  // already (the usual case) goes as it is; others are lowered in a copy.
  std::vector<std::string>& names = lowered_names_;
  names.clear();
  const bool traceparent_named = traceparent_named_;  // kept if the request goes nowhere
  ForEachRequestHeader(exchange, [&](std::string_view name, std::string_view value) {
    std::string_view field_name = name;
    if (std::any_of(name.begin(), name.end(),
                    [](char c) { return outbound::internal::IsAsciiUpper(c); })) {
      if (names.empty()) names.reserve(header_count);  // never moved: fields point into it
      std::string& lower = names.emplace_back(name);
      for (char& c : lower) c = outbound::internal::AsciiLower(c);
      field_name = lower;
    }
    nghttp2_nv& field = room[used++] = Field(field_name, value);
    // A traceparent is new on every request, and so is a gRPC attempt's
    // time left: indexing either would only churn the HPACK tables (an
    // insertion and an eviction per request on both ends) for an entry
    // never used again. The session's first traceparent alone is indexed,
    // for its name: the later ones send an index, not the name.
    if (field_name == "traceparent") {
      if (traceparent_named_) field.flags = NGHTTP2_NV_FLAG_NO_INDEX;
      traceparent_named_ = true;
    } else if (field_name == "grpc-timeout") {
      field.flags = NGHTTP2_NV_FLAG_NO_INDEX;
    }
  });
  if (request.default_user_agent) room[used++] = Field("user-agent", kDefaultUserAgent);
  std::optional<std::uint64_t> length;
  if (request.body_source) {
    // A streamed body says its length if it knows it; else END_STREAM ends it.
    exchange.upload.emplace(request.body_source);
    length = request.body_source.length;
  } else if (!request.body.empty() || request.method == "POST" || request.method == "PUT" ||
             request.method == "PATCH") {
    length = request.body.size();
  }
  std::array<char, 20> digits;  // the most a 64-bit length takes
  if (length) {
    auto written = std::to_chars(digits.data(), digits.data() + digits.size(), *length);
    room[used++] = Field("content-length", std::string_view(digits.data(), written.ptr));
  }
  // The server said how large a header section it takes (RFC 9113
  // §6.5.2): one larger would fail the whole connection there (grpc-go
  // closes it), so it is this request's own failure, and goes nowhere.
  std::size_t list_size = 0;
  for (const nghttp2_nv& field : room.first(used)) list_size += field.namelen + field.valuelen + 32;
  std::uint32_t server_takes =
      nghttp2_session_get_remote_settings(session_, NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE);
  if (list_size > server_takes) {
    traceparent_named_ = traceparent_named;
    RefuseUnsent(exchange, list_size, server_takes);
    return true;
  }
  // Streams in flight and the server quiet: this request goes, with a
  // probe, and no other until the probe is answered.
  if (!streams_.empty()) Probe(clock_.Now());
  nghttp2_data_provider body{};
  body.source.ptr = nullptr;  // ReadBody finds the exchange by its stream
  body.read_callback = ReadBody;
  bool sends_data = !request.body.empty() || exchange.upload.has_value();
  std::int32_t id = nghttp2_submit_request(session_, nullptr, room.data(), used,
                                           sends_data ? &body : nullptr, &exchange);
  if (id < 0) {
    goaway_ = true;  // stream ids ran out, or the session is going: no more here
    return false;
  }
  exchange.stream_id = id;
  if (spare_nodes_.empty()) {
    streams_.emplace(id, &exchange);
  } else {
    Streams::node_type node = std::move(spare_nodes_.back());
    spare_nodes_.pop_back();
    node.key() = id;
    node.mapped() = &exchange;
    streams_.insert(std::move(node));
  }
  return true;
}

[[gnu::cold, gnu::noinline]] void H2Session::RefuseUnsent(Exchange& exchange, std::size_t list_size,
                                                          std::uint32_t server_takes) {
  exchange.outcome = Failed(
      ErrorKind::kInvalidRequest,
      "the request's header section is " + std::to_string(list_size) + " bytes, over the " +
          std::to_string(server_takes) +
          " the server takes (its SETTINGS_MAX_HEADER_LIST_SIZE, RFC 9113 §6.5.2): nothing was "
          "sent");
  exchange.outcome.connection = connection_id_;
  ended_.push_back(&exchange);  // told at the next Deliver, as every end is
}

bool H2Session::Cancel(Exchange& exchange) {
  // Refused before it had a stream (RefuseUnsent), and not told yet.
  if (exchange.stream_id < 1) {
    std::erase(ended_, &exchange);
    return true;
  }
  Forget(streams_.find(exchange.stream_id));
  nghttp2_session_set_stream_user_data(session_, exchange.stream_id, nullptr);
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, exchange.stream_id, NGHTTP2_CANCEL);
  room_changed_ = true;
  Probe(clock_.Now());
  return true;
}

void H2Session::Probe(TimePoint now) {
  if (may_probe_ && !ping_sent_ && now - last_heard_ >= kQuietBeforePing &&
      nghttp2_submit_ping(session_, NGHTTP2_FLAG_NONE, nullptr) == 0) {
    ping_sent_ = now;
    may_probe_ = false;
  }
}

void H2Session::Resume(Exchange& exchange) {
  if (broken_ || Find(exchange.stream_id) != &exchange) return;
  // Fails harmlessly when the stream's data is not deferred (already resumed).
  nghttp2_session_resume_data(session_, exchange.stream_id);
  // Its reader caught up: the server may send what it held back for.
  if (exchange.withheld > 0 && !exchange.Held()) {
    nghttp2_session_consume_stream(session_, exchange.stream_id, exchange.withheld);
    exchange.withheld = 0;
  }
}

bool H2Session::Received(const std::uint8_t* data, std::size_t size) {
  TimePoint now = clock_.Now();
  if (now - flood_window_start_ >= kFloodWindow) {
    frames_without_progress_ = 0;
    flood_window_start_ = now;
  }
  last_heard_ = now;
  receiving_ = true;
  wall_heard_.reset();
  ssize_t used = nghttp2_session_mem_recv(session_, data, size);
  receiving_ = false;
  if (used < 0 && error_.empty()) {
    error_ = std::string("HTTP/2: ") + nghttp2_strerror(static_cast<int>(used));
  }
  if (used < 0) broken_ = true;
  Deliver();
  return !broken_;
}

bool H2Session::Produce(std::string& out) {
  std::size_t before = out.size();
  while (out.size() - before < kProduceChunk) {
    const std::uint8_t* chunk = nullptr;
    ssize_t n = nghttp2_session_mem_send(session_, &chunk);
    if (n < 0) {
      error_ = std::string("HTTP/2: ") + nghttp2_strerror(static_cast<int>(n));
      broken_ = true;
      break;
    }
    if (n == 0) break;
    out.append(reinterpret_cast<const char*>(chunk), static_cast<std::size_t>(n));
  }
  Deliver();
  return !broken_;
}

bool H2Session::Closing() {
  // From here nghttp2 starts no stream and sends no DATA, and once the
  // GOAWAY is written the session wants neither to read nor to write.
  // Last-stream-id 0: the server opened no stream here to keep.
  return !broken_ && nghttp2_session_terminate_session(session_, NGHTTP2_NO_ERROR) == 0;
}

void H2Session::Closed(const std::string& why, bool cannot_improve) {
  broken_ = true;
  std::vector<Exchange*> left;
  left.reserve(streams_.size());
  for (auto& [id, exchange] : streams_) left.push_back(exchange);
  std::sort(left.begin(), left.end(),
            [](const Exchange* a, const Exchange* b) { return a->stream_id < b->stream_id; });
  for (Exchange* exchange : left) {
    AttemptOutcome outcome;
    if (exchange->verdict) {
      outcome = std::move(*exchange->verdict);
    } else if (exchange->end_stream && exchange->headers_done) {
      // Answered whole, the upload still going: the close only ends that.
      TakeAnswer(*exchange, outcome);
    } else if (!exchange->request_sent && !cannot_improve) {
      outcome =
          Failed(ErrorKind::kTransport, "the connection ended before the request was sent: " + why);
      outcome.unprocessed = true;
      outcome.connection_retired = Retiring();
    } else {
      outcome = Failed(ErrorKind::kTransport, why);
      outcome.body_failed = exchange->headers_done;
      outcome.connection_lost = !exchange->headers_done;
      outcome.cannot_improve = cannot_improve;
    }
    End(exchange->stream_id, std::move(outcome));
  }
  Deliver();
}

void H2Session::Forget(Streams::iterator stream) {
  if (stream == streams_.end()) return;
  if (stream->first == found_id_) {
    found_id_ = 0;  // stream 0 is the connection's: never in streams_
    found_ = nullptr;
  }
  spare_nodes_.push_back(streams_.extract(stream));
}

Exchange* H2Session::Search(std::int32_t stream_id) const {
  auto it = streams_.find(stream_id);
  if (it == streams_.end()) return nullptr;
  found_id_ = stream_id;
  found_ = it->second;
  return found_;
}

void H2Session::End(std::int32_t stream_id, AttemptOutcome&& outcome) {
  Exchange* exchange = Find(stream_id);
  if (exchange == nullptr) return;
  exchange->outcome = std::move(outcome);
  Queue(stream_id);
}

void H2Session::Queue(std::int32_t stream_id) {
  auto it = streams_.find(stream_id);
  if (it == streams_.end()) return;
  Exchange* exchange = it->second;
  Forget(it);
  if (!broken_) nghttp2_session_set_stream_user_data(session_, stream_id, nullptr);
  AttemptOutcome& outcome = exchange->outcome;
  // An end read off the wire ended when its bytes came (Attempt::End
  // reads the clock for the others).
  if (receiving_) outcome.ended = last_heard_;
  outcome.connection = connection_id_;
  if (!outcome.result && exchange->headers_done) outcome.body_failed = true;
  outcome.body_streamed = exchange->streamed;
  ended_.push_back(exchange);
  room_changed_ = true;
}

void H2Session::Refuse(Exchange& exchange, AttemptOutcome&& verdict, std::uint32_t error_code) {
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, exchange.stream_id, error_code);
  End(exchange.stream_id, std::move(verdict));
}

[[gnu::cold, gnu::noinline]] void H2Session::RefuseMalformed(Exchange& exchange,
                                                             std::string_view why) {
  Refuse(exchange, Malformed(std::string(why)), NGHTTP2_PROTOCOL_ERROR);
}

[[gnu::cold, gnu::noinline]] void H2Session::RefuseMalformed(Exchange& exchange,
                                                             std::string_view why,
                                                             std::string_view field,
                                                             std::string_view after) {
  RefuseMalformed(exchange, std::string(why) + Quoted(field) + std::string(after));
}

// The answer's fields were read into room made ahead: the caller gets a
// copy at their size, and the exchange keeps the room for its next answer.
// Made here, just before the caller hears the answer (and most often frees
// it), the copy takes the block the previous answer's copy gave back: the
// answers of a batch of streams, read all at once, are not each a block of
// their own that malloc's per-thread cache cannot keep.
void H2Session::KeepHeaderRoom(Exchange& exchange) {
  ResponseHeaders& answer = exchange.outcome.result->headers;
  exchange.response.headers = std::move(answer);
  answer = exchange.response.headers;
}

void H2Session::Deliver() {
  while (!ended_.empty()) {
    std::vector<Exchange*> ended;
    ended.swap(ended_);
    for (Exchange* e : ended) {
      if (e->outcome.result) KeepHeaderRoom(*e);
      events_.ExchangeEnded(*e, std::move(e->outcome));
    }
    // Its room back for the next ends, unless some came meanwhile or it
    // grew past what a usual batch needs.
    ended.clear();
    if (ended_.empty() && ended.capacity() <= kKeptEnded) ended_.swap(ended);
  }
  if (room_changed_) {
    room_changed_ = false;
    events_.RoomChanged();
  }
}

// --- nghttp2's callbacks: they record, and End() defers telling the pool ---

int H2Session::OnBeginFrame(nghttp2_session*, const nghttp2_frame_hd* hd, void* user) {
  auto& self = *static_cast<H2Session*>(user);
  // Progress is a header field or body bytes for an exchange; everything
  // else counts towards the flood bound, reset by progress.
  if (++self.frames_without_progress_ > kMaxFramesWithoutProgress) {
    self.error_ = "HTTP/2: the server sent " + std::to_string(kMaxFramesWithoutProgress) +
                  " frames in a row that carried nothing (a flood): the connection is closed";
    self.broken_ = true;
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  if (hd->type == NGHTTP2_HEADERS || hd->type == NGHTTP2_CONTINUATION) {
    if (Exchange* exchange = self.Find(hd->stream_id); exchange != nullptr) {
      exchange->header_wire_bytes += hd->length;
      exchange->header_block_open = (hd->flags & NGHTTP2_FLAG_END_HEADERS) == 0;
      if (exchange->header_wire_bytes > kMaxHeaderBytes) {
        self.Refuse(*exchange, TooLarge("header section is larger than " +
                                        std::to_string(kMaxHeaderBytes) + " bytes"));
      }
    }
  }
  return 0;
}

int H2Session::OnHeader(nghttp2_session*, const nghttp2_frame* frame, nghttp2_rcbuf* name,
                        nghttp2_rcbuf* value, std::uint8_t, void* user) {
  auto& self = *static_cast<H2Session*>(user);
  Exchange* exchange = self.Find(frame->hd.stream_id);
  if (exchange == nullptr) return 0;
  self.frames_without_progress_ = 0;
  nghttp2_vec name_bytes = nghttp2_rcbuf_get_buf(name);
  nghttp2_vec value_bytes = nghttp2_rcbuf_get_buf(value);
  std::string_view n = View(name_bytes.base, name_bytes.len);
  std::string_view v = View(value_bytes.base, value_bytes.len);
  // RFC 9113 §6.5.2's measure: name, value and 32 bytes per field.
  exchange->header_bytes += n.size() + v.size() + 32;
  if (exchange->header_bytes > kMaxHeaderBytes) {
    self.Refuse(*exchange, TooLarge("header section is larger than " +
                                    std::to_string(kMaxHeaderBytes) + " bytes"));
    return 0;
  }
  if (!n.empty() && n.front() == ':') {
    // A response has one pseudo-header, :status, before its regular fields;
    // trailers have none (RFC 9113 §8.3.2).
    if (n != ":status" || exchange->status_seen || exchange->regular_seen ||
        exchange->headers_done) {
      self.RefuseMalformed(*exchange, "its pseudo-header field ", n,
                           " is out of place (RFC 9113 §8.3.2)");
      return 0;
    }
    exchange->status_seen = true;
    int status = ParseStatus(v);
    if (status == 0 || status == 101) {
      self.RefuseMalformed(*exchange, status == 0 ? "its :status is not a status code"
                                                  : "its :status 101 has no place in HTTP/2");
      return 0;
    }
    exchange->informational = status < 200;
    if (!exchange->informational) {
      exchange->response.status = status;
      exchange->response.headers.reserve(512);
    }
    return 0;
  }
  exchange->regular_seen = true;
  bool content_length = n == "content-length";
  // A name from HPACK's static table (RFC 7541 Appendix A) is valid. A
  // content-length must be digits alone (below), stricter than the grammar.
  if ((!nghttp2_rcbuf_is_static(name) && !ValidFieldName(n)) ||
      (!content_length && !self.ValidValue(value))) {
    self.RefuseMalformed(*exchange, "its field ", n, " breaks the field grammar (RFC 9113 §8.2.1)");
    return 0;
  }
  if (ForbiddenField(n, v)) {
    self.RefuseMalformed(*exchange, "it has the connection-specific field ", n,
                         " (RFC 9113 §8.2.2)");
    return 0;
  }
  if (content_length && (exchange->headers_done || exchange->informational)) {
    // Framing belongs to the final header block alone.
    self.RefuseMalformed(*exchange, exchange->headers_done
                                        ? "it has a content-length in its trailers"
                                        : "it has a content-length in a 1xx answer");
    return 0;
  }
  if (exchange->headers_done) {
    exchange->response.trailers.Add(n, v);
    return 0;
  }
  if (exchange->informational) return 0;
  if (content_length) {
    std::uint64_t length = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), length);
    if (ec != std::errc() || end != v.data() + v.size() || exchange->content_length ||
        (exchange->response.status == 204 && length != 0)) {
      self.RefuseMalformed(*exchange, "its content-length ", v,
                           exchange->content_length ? " is its second one" : " cannot be right");
      return 0;
    }
    exchange->content_length = length;
  }
  exchange->response.headers.Add(n, v);
  return 0;
}

int H2Session::OnFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  auto& self = *static_cast<H2Session*>(user);
  switch (frame->hd.type) {
    case NGHTTP2_SETTINGS:
      if ((frame->hd.flags & NGHTTP2_FLAG_ACK) == 0) {
        self.settings_received_ = true;
        self.room_changed_ = true;
      }
      return 0;
    case NGHTTP2_PING:
      if ((frame->hd.flags & NGHTTP2_FLAG_ACK) != 0 && self.ping_sent_) {
        self.ping_sent_.reset();  // still there
        self.room_changed_ = true;
      }
      return 0;
    case NGHTTP2_GOAWAY:
      // No new stream here; those above last-stream-id are closed by
      // nghttp2 as refused (unprocessed).
      self.goaway_ = true;
      self.goaway_last_stream_ = frame->goaway.last_stream_id;
      self.goaway_error_ = frame->goaway.error_code;
      self.room_changed_ = true;
      return 0;
    case NGHTTP2_HEADERS:
    case NGHTTP2_DATA:
      self.may_probe_ = true;
      break;
    default:
      return 0;
  }
  Exchange* exchange = self.Find(frame->hd.stream_id);
  if (exchange == nullptr) return 0;
  bool end_stream = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
  if (frame->hd.type == NGHTTP2_HEADERS) {
    // The message rules of RFC 9113 §8.1: a final header block with its
    // :status, after any number of 1xx ones, and trailers that end the
    // stream.
    bool had_status = exchange->status_seen;
    exchange->status_seen = exchange->regular_seen = false;  // the next block's own
    if (exchange->headers_done) {
      if (!end_stream) {
        self.RefuseMalformed(*exchange, "its trailers do not end the stream (RFC 9113 §8.1)");
        return 0;
      }
    } else if (!had_status) {
      self.RefuseMalformed(*exchange, "a header block has no :status (RFC 9113 §8.3.2)");
      return 0;
    } else if (exchange->informational) {
      if (end_stream) {
        self.RefuseMalformed(*exchange, "the stream ended after a 1xx answer (RFC 9113 §8.1)");
        return 0;
      }
      exchange->informational = false;  // a 1xx: the final header block is still to come
      exchange->header_bytes = exchange->header_wire_bytes = 0;
      return 0;
    } else {
      exchange->headers_done = true;
      // The trailers are a field section of their own (RFC 9113 §6.5.2):
      // measured from nothing, not on top of the headers.
      exchange->header_bytes = exchange->header_wire_bytes = 0;
      exchange->response.version = "2";
      if (!self.wall_heard_) self.wall_heard_ = self.clock_.WallNow();
      exchange->response.received_at = *self.wall_heard_;
      HeadWhole(*exchange);
      if (exchange->content_length && !exchange->Streams() && !exchange->decoder &&
          !exchange->body_dropped && !HasNoBody(*exchange)) {
        if (*exchange->content_length > exchange->BodyLimit()) {
          // Announced: fail now, read nothing of it.
          self.Refuse(*exchange, TooLarge(exchange->TooLargeText()));
          return 0;
        }
        exchange->response.body.reserve(static_cast<std::size_t>(*exchange->content_length));
      }
      exchange->events->HeadersArrived(self.last_heard_);
      if (exchange->Streams()) exchange->events->BodyStreaming(self.last_heard_);
    }
  }
  if (end_stream) {
    // RFC 9113 §8.1.1: a body of another length than its content-length
    // says is malformed (one too long failed as it came, OnDataChunk).
    if (exchange->content_length && !HasNoBody(*exchange) &&
        exchange->body_received != *exchange->content_length) {
      self.RefuseMalformed(*exchange, "its body ended after " +
                                          std::to_string(exchange->body_received) + " of the " +
                                          std::to_string(*exchange->content_length) +
                                          " bytes its content-length says");
      return 0;
    }
    exchange->end_stream = true;
    if (exchange->upload && exchange->upload->piped() && !exchange->upload->done() &&
        exchange->verdict == nullptr) {
      // The answer is whole while the caller may still write: the stream
      // would stay half open until it closed the pipe. RFC 9113 §8.1: the
      // client stops sending; the exchange ends with the answer now.
      std::int32_t id = frame->hd.stream_id;
      self.Closing(*exchange, id, NGHTTP2_NO_ERROR);
      nghttp2_submit_rst_stream(self.session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_NO_ERROR);
      self.Queue(id);
    }
  }
  return 0;
}

int H2Session::OnInvalidFrameRecv(nghttp2_session*, const nghttp2_frame* frame, int error,
                                  void* user) {
  auto& self = *static_cast<H2Session*>(user);
  Exchange* exchange = self.Find(frame->hd.stream_id);
  if (exchange == nullptr || exchange->verdict) return 0;
  // nghttp2 resets the stream itself (PROTOCOL_ERROR); it ends as invalid.
  exchange->verdict = std::make_unique<AttemptOutcome>(Malformed(nghttp2_strerror(error)));
  return 0;
}

int H2Session::OnDataChunk(nghttp2_session*, std::uint8_t flags, std::int32_t stream_id,
                           const std::uint8_t* data, std::size_t len, void* user) {
  auto& self = *static_cast<H2Session*>(user);
  Exchange* exchange = self.Find(stream_id);
  if (exchange == nullptr) {
    // A stream this end no longer reads (nghttp2 drops most such bytes
    // itself, once the reset is queued): its bytes count as read.
    nghttp2_session_consume(self.session_, stream_id, len);
    return 0;
  }
  if (len == 0) return 0;
  self.frames_without_progress_ = 0;
  exchange->body_received += len;
  // RFC 9113 §8.1.1: body bytes come after the final header block, within
  // its content-length, and never for HEAD, 204 or 304.
  if (!exchange->headers_done) {
    self.RefuseMalformed(*exchange, "DATA came before the final header block (RFC 9113 §8.1)");
  } else if (HasNoBody(*exchange) ||
             (exchange->content_length && exchange->body_received > *exchange->content_length)) {
    self.RefuseMalformed(*exchange,
                         "its body is longer than the " +
                             std::to_string(HasNoBody(*exchange) ? 0 : *exchange->content_length) +
                             " bytes it may have");
  } else if (auto verdict = TakeWireBody(
                 *exchange, std::string_view(reinterpret_cast<const char*>(data), len))) {
    self.Refuse(*exchange, std::move(*verdict));
  }
  // Acknowledged as taken, unless the sink's reader is behind: then only
  // the connection's window is, so the connection's other streams go on.
  // The stream's last frame needs no acknowledgement on the stream.
  if ((flags & NGHTTP2_FLAG_END_STREAM) != 0) {
    nghttp2_session_consume_connection(self.session_, len);
  } else if (exchange->Held()) {
    nghttp2_session_consume_connection(self.session_, len);
    exchange->withheld += len;
  } else {
    nghttp2_session_consume(self.session_, stream_id, len);
  }
  return 0;
}

int H2Session::OnFrameSend(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  auto& self = *static_cast<H2Session*>(user);
  if (frame->hd.type == NGHTTP2_DATA) self.frames_without_progress_ = 0;
  if (frame->hd.type == NGHTTP2_RST_STREAM &&
      frame->rst_stream.error_code == NGHTTP2_PROTOCOL_ERROR) {
    // nghttp2 reset a stream whose frames broke HTTP/2's rules, and said
    // nothing of it before (OnInvalidFrameRecv).
    Exchange* exchange = self.Find(frame->hd.stream_id);
    if (exchange != nullptr && !exchange->verdict) {
      exchange->verdict = std::make_unique<AttemptOutcome>(
          Malformed("it breaks HTTP/2's message rules (RFC 9113 §8.1)"));
    }
    return 0;
  }
  if (frame->hd.type == NGHTTP2_GOAWAY && frame->goaway.error_code == NGHTTP2_COMPRESSION_ERROR) {
    // nghttp2 gave up on a header block: a field larger than its HPACK
    // decoder holds (64 KiB), which a block spread over CONTINUATION frames
    // is; the exchanges reading one fail as too large.
    for (auto& [id, exchange] : self.streams_) {
      if (exchange->header_block_open && !exchange->verdict) {
        exchange->verdict = std::make_unique<AttemptOutcome>(
            TooLarge("header section has a field larger than 64 KiB"));
      }
    }
    return 0;
  }
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  if (Exchange* exchange = self.Find(frame->hd.stream_id); exchange != nullptr) {
    exchange->request_sent = true;
    if (exchange->TimedUpload()) exchange->events->RequestHeadersSent(self.clock_.Now());
  }
  return 0;
}

int H2Session::OnFrameNotSend(nghttp2_session*, const nghttp2_frame* frame, int error, void* user) {
  auto& self = *static_cast<H2Session*>(user);
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  if (Exchange* exchange = self.Find(frame->hd.stream_id); exchange != nullptr) {
    // A header section nghttp2 cannot send (over the 64 KiB it writes, or
    // one HPACK cannot code) is the request's own failure: it would fail
    // on any connection, so it is not sent again.
    bool the_requests_own =
        error == NGHTTP2_ERR_FRAME_SIZE_ERROR || error == NGHTTP2_ERR_HEADER_COMP;
    AttemptOutcome outcome =
        Failed(the_requests_own ? ErrorKind::kInvalidRequest : ErrorKind::kTransport,
               std::string("the request was not sent: ") + nghttp2_strerror(error));
    outcome.unprocessed = !the_requests_own;
    outcome.connection_retired = !the_requests_own && self.Retiring();
    self.End(frame->hd.stream_id, std::move(outcome));
  }
  return 0;
}

int H2Session::OnStreamClose(nghttp2_session*, std::int32_t stream_id, std::uint32_t error_code,
                             void* user) {
  auto& self = *static_cast<H2Session*>(user);
  Exchange* exchange = self.Find(stream_id);
  if (exchange == nullptr) return 0;
  self.Closing(*exchange, stream_id, error_code);
  self.Queue(stream_id);
  return 0;
}

void H2Session::Closing(Exchange& exchange, std::int32_t stream_id, std::uint32_t error_code) {
  AttemptOutcome& outcome = exchange.outcome;
  if (exchange.verdict) {
    outcome = std::move(*exchange.verdict);
    outcome.body_failed = exchange.headers_done;
  } else if (exchange.end_stream && exchange.headers_done) {
    // The answer was whole at its END_STREAM. A server that answers before
    // the request's body has all come stops the upload with a reset (RFC
    // 9113 §8.1): NO_ERROR in the RFC's words, CANCEL from HAProxy.
    TakeAnswer(exchange, outcome);
  } else if (!exchange.request_sent) {
    outcome = Failed(ErrorKind::kTransport, "the request was not sent");
    outcome.unprocessed = true;
  } else if (error_code == NGHTTP2_REFUSED_STREAM && !exchange.headers_done &&
             FailedTheConnection(stream_id)) {
    // The stream the server met as it failed the connection may be the
    // cause (HAProxy ends a connection whose next request's fields are
    // over its buffer, where over HTTP/1.1 it answers 400), or an innocent
    // that crossed the failure (nghttp2 ends one whose client reset too
    // many streams). Not processed, so left out as the others above it;
    // the classify layer decides the second time the call meets this.
    outcome = Failed(ErrorKind::kTransport,
                     std::string("the server ended the connection with an error (GOAWAY ") +
                         nghttp2_http2_strerror(goaway_error_) + ") as this request reached it");
    outcome.unprocessed = true;
    outcome.connection_retired = Retiring();
    outcome.met_connection_failure = true;
  } else if (error_code == NGHTTP2_REFUSED_STREAM && !exchange.headers_done) {
    // RST_STREAM REFUSED_STREAM, or a stream above a GOAWAY's last one:
    // RFC 9113 §8.7 says the server did not process it.
    // Above a GOAWAY that kept others (last-stream-id > 0): the server is
    // retiring a connection it used, not refusing work.
    bool retired = Retiring() && stream_id > goaway_last_stream_;
    outcome =
        Failed(ErrorKind::kTransport,
               retired ? "the server ended the connection (GOAWAY) before processing the stream"
                       : "the server refused the stream without processing it");
    outcome.unprocessed = true;
    outcome.connection_retired = retired;
  } else if (exchange.end_stream && !exchange.headers_done) {
    outcome = Malformed("the stream ended without a final header block");
  } else if (goaway_ && goaway_error_ != NGHTTP2_NO_ERROR) {
    // The server ended the connection for an error (RFC 9113 §5.4.1), and
    // with it this stream (HAProxy resets each after its GOAWAY): the
    // connection's loss, which the breaker counts once however many
    // streams it carried.
    outcome =
        Failed(ErrorKind::kTransport,
               std::string("the server ended the connection with an error (GOAWAY ") +
                   nghttp2_http2_strerror(goaway_error_) +
                   (exchange.headers_done ? ") before the body ended" : ") before any header"));
    outcome.body_failed = exchange.headers_done;
    outcome.connection_lost = !exchange.headers_done;
  } else {
    // A reset before END_STREAM, NO_ERROR included, is never a whole answer.
    outcome =
        Failed(ErrorKind::kTransport,
               std::string("the server reset the stream (") + nghttp2_http2_strerror(error_code) +
                   (exchange.headers_done ? ") before the body ended" : ") before any header"));
    if (!outcome.result) outcome.result.error().set_stream_reset_code(error_code);
    outcome.body_failed = exchange.headers_done;
  }
}

ssize_t H2Session::ReadBody(nghttp2_session*, std::int32_t stream_id, std::uint8_t* buf,
                            std::size_t length, std::uint32_t* flags, nghttp2_data_source*,
                            void* user) {
  // Looked up by stream, not kept as a pointer: an exchange cut short is
  // gone, though nghttp2 may still hold its stream until its RST_STREAM
  // is written.
  Exchange* exchange = static_cast<H2Session*>(user)->Find(stream_id);
  if (exchange == nullptr) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  if (exchange->upload) {
    Result<std::size_t> n =
        exchange->upload->Read(std::span<char>(reinterpret_cast<char*>(buf), length));
    // A pipe with nothing yet: its next Write or Close wakes the stream
    // (Resume), as the pipe marked it waiting under the Write's own lock.
    if (n && exchange->upload->waiting()) return NGHTTP2_ERR_DEFERRED;
    if (!n) {
      // nghttp2 resets the stream; OnStreamClose ends the exchange with this.
      if (!exchange->verdict) {
        exchange->verdict = std::make_unique<AttemptOutcome>(exchange->upload->Failure());
      }
      return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    if (exchange->upload->done()) {
      *flags |= NGHTTP2_DATA_FLAG_EOF;
      exchange->events->RequestBodySent(static_cast<H2Session*>(user)->clock_.Now());
    }
    return static_cast<ssize_t>(*n);
  }
  const std::string& body = exchange->request->body;
  std::size_t n = std::min(length, body.size() - exchange->body_offset);
  // memcpy, not std::copy_n: from char to std::uint8_t the latter copies
  // byte by byte.
  if (n > 0) std::memcpy(buf, body.data() + exchange->body_offset, n);
  exchange->body_offset += n;
  if (exchange->body_offset == body.size()) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    if (exchange->TimedUpload()) {
      exchange->events->RequestBodySent(static_cast<H2Session*>(user)->clock_.Now());
    }
  }
  return static_cast<ssize_t>(n);
}

}  // namespace outbound::http::internal::transport
