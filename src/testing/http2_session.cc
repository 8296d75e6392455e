// SPDX-License-Identifier: Apache-2.0
// HTTP/2 for the FakeServer: nghttp2's server session does the protocol; this
// file moves its bytes to and from the socket and plays each stream's Reply.
#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <map>

#include "fake_server_internal.h"
#include "outbound/internal/ascii.h"

namespace outbound::testing {
namespace {

class Http2Session final : public Session, public std::enable_shared_from_this<Http2Session> {
 public:
  Http2Session(FakeServer::Impl& server, std::unique_ptr<ByteStream> stream, int connection_id)
      : server_(server), stream_(std::move(stream)), connection_id_(connection_id) {
    nghttp2_session_callbacks* callbacks = nullptr;
    nghttp2_session_callbacks_new(&callbacks);
    nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, OnBeginHeaders);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, OnHeader);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, OnData);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, OnFrame);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, OnStreamClose);
    // A scripted header bomb must be sent, not refused by our own side.
    nghttp2_option* option = nullptr;
    nghttp2_option_new(&option);
    nghttp2_option_set_max_send_header_block_length(option, 16 * 1024 * 1024);
    nghttp2_session_server_new2(&session_, callbacks, this, option);
    nghttp2_option_del(option);
    nghttp2_session_callbacks_del(callbacks);
  }

  ~Http2Session() override {
    End();
    nghttp2_session_del(session_);
  }

  void Start() override {
    nghttp2_settings_entry settings[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, server_.options.max_concurrent_streams}};
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, 1);
    Flush();
    Read();
  }

  void Shutdown() override {
    if (raw_mode_) return End();
    nghttp2_session_terminate_session(session_, NGHTTP2_NO_ERROR);  // GOAWAY
    closing_ = true;
    Flush();
  }

 private:
  struct Stream {
    ServerRequest request;
    Reply reply;
    std::size_t offset = 0;  // body bytes handed to nghttp2
    bool answered = false;   // the server finished with it, well or badly
    bool trickle_ready = true;
    Timer timer;
    std::optional<ReadCut> cut;  // Options::cut_reading's, once the head is in
  };

  static Http2Session& Self(void* user_data) { return *static_cast<Http2Session*>(user_data); }

  static int OnBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    Http2Session& self = Self(user_data);
    Stream& stream = self.streams_[frame->hd.stream_id];
    stream.request.version = "2";
    stream.request.connection_id = self.connection_id_;
    stream.request.stream_id = frame->hd.stream_id;
    return 0;
  }

  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                      size_t namelen, const uint8_t* value, size_t valuelen, uint8_t,
                      void* user_data) {
    auto it = Self(user_data).streams_.find(frame->hd.stream_id);
    if (it == Self(user_data).streams_.end()) return 0;
    std::string key(reinterpret_cast<const char*>(name), namelen);
    std::string val(reinterpret_cast<const char*>(value), valuelen);
    ServerRequest& request = it->second.request;
    if (key == ":method") {
      request.method = std::move(val);
    } else if (key == ":path") {
      request.target = std::move(val);
    } else if (key == ":authority") {
      request.headers.emplace_back("host", std::move(val));
    } else if (key == ":scheme") {
      request.scheme = std::move(val);
    } else if (key[0] != ':') {
      request.headers.emplace_back(std::move(key), std::move(val));
    }
    return 0;
  }

  static int OnData(nghttp2_session*, uint8_t, int32_t stream_id, const uint8_t* data, size_t len,
                    void* user_data) {
    Http2Session& self = Self(user_data);
    auto it = self.streams_.find(stream_id);
    if (it == self.streams_.end() || it->second.answered) return 0;
    it->second.request.body.append(reinterpret_cast<const char*>(data), len);
    if (it->second.cut && it->second.request.body.size() >= it->second.cut->body_bytes) {
      self.Cut(stream_id);
    }
    return 0;
  }

  static int OnFrame(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    Http2Session& self = Self(user_data);
    if (frame->hd.type == NGHTTP2_RST_STREAM) {
      self.server_.Record([&] { ++self.server_.client_resets; });
    }
    if (frame->hd.type == NGHTTP2_PING && (frame->hd.flags & NGHTTP2_FLAG_ACK) == 0) {
      self.server_.Record([&] { ++self.server_.client_pings; });
    }
    if (frame->hd.type == NGHTTP2_GOAWAY) {
      self.client_goaway_ = true;
      self.server_.Record([&] {
        ++self.server_.client_goaways;
        if (frame->goaway.error_code != NGHTTP2_NO_ERROR) ++self.server_.client_goaway_errors;
      });
    }
    bool request_done = (frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
                        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM);
    auto it = self.streams_.find(frame->hd.stream_id);
    if (it == self.streams_.end() || it->second.answered) return 0;
    bool head = frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST;
    if (head && self.server_.options.cut_reading && it->first <= self.goaway_last_stream_) {
      it->second.cut = self.server_.options.cut_reading(it->second.request);
      if (it->second.cut && (request_done || it->second.cut->body_bytes == 0)) {
        self.Cut(it->first);
        return 0;
      }
    }
    if (request_done && it->second.cut) {
      self.Cut(it->first);  // the whole body was shorter than the cut
    } else if (request_done) {
      self.OnRequest(frame->hd.stream_id);
    }
    return 0;
  }

  // Stops reading stream `id` as its ReadCut says: records what was read
  // and ends the exchange.
  void Cut(int32_t id) {
    Stream& stream = streams_[id];
    ReadCut cut = std::move(*stream.cut);
    stream.cut.reset();
    stream.answered = true;
    ++requests_;
    ServerRequest request = stream.request;
    request.body.resize(std::min(request.body.size(), cut.body_bytes));
    request.whole = false;
    server_.Received(std::move(request));
    using B = Reply::Behaviour;
    if (cut.end.behaviour == B::kResetConnection) return End(/*reset=*/true);
    if (cut.end.behaviour != B::kResetBeforeHeaders) return End();
    ResetStream(id, cut.end, /*answer_begun=*/false);
  }

  // A reset of stream `id`, as `reply.h2_reset` says.
  void ResetStream(int32_t id, const Reply& reply, bool answer_begun) {
    switch (reply.h2_reset) {
      case Reply::H2Reset::kStream:
        nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, reply.rst_code);
        return;
      case Reply::H2Reset::kGoaway:
        goaway_last_stream_ = answer_begun ? id : std::max(0, id - 2);
        nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, goaway_last_stream_, reply.rst_code,
                              nullptr, 0);
        end_after_write_ = true;
        return;
      case Reply::H2Reset::kConnection:
        return End();
    }
  }

  static int OnStreamClose(nghttp2_session*, int32_t stream_id, uint32_t, void* user_data) {
    Http2Session& self = Self(user_data);
    auto it = self.streams_.find(stream_id);
    if (it == self.streams_.end()) return 0;
    if (!it->second.answered) self.server_.Record([&] { ++self.server_.cancelled; });
    self.streams_.erase(it);
    return 0;
  }

  void OnRequest(int32_t id) {
    ++requests_;
    if (id > goaway_last_stream_) {  // after our GOAWAY: received, left unprocessed
      streams_[id].answered = true;
      server_.Received(streams_[id].request);
      return;
    }
    int goaway_after = server_.options.goaway_after_streams;
    int unprocessed = server_.options.goaway_unprocessed;
    if (goaway_after > 0 && requests_ > goaway_after - unprocessed && requests_ < goaway_after) {
      // One of the streams the coming GOAWAY leaves out: held unanswered
      // until it goes, however the requests were batched on the wire.
      server_.Received(streams_[id].request);
      streams_[id].answered = true;
      return;
    }
    if (goaway_after > 0 && requests_ == goaway_after) {
      goaway_last_stream_ = id - 2 * server_.options.goaway_unprocessed;
      nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, goaway_last_stream_, NGHTTP2_NO_ERROR,
                            nullptr, 0);
      closing_ = true;
      if (id > goaway_last_stream_) {
        streams_[id].answered = true;  // refused by the GOAWAY, not cancelled by the client
        server_.Received(streams_[id].request);
        return;
      }
    }
    Stream& stream = streams_[id];
    stream.reply = server_.Answer(stream.request);
    if (stream.reply.header_delay > Duration::zero()) {
      stream.timer = server_.After(stream.reply.header_delay, shared_from_this(), [this, id] {
        if (streams_.count(id)) Act(id);
        Flush();
      });
      server_.Received(stream.request);
    } else {
      server_.Received(stream.request);
      Act(id);
    }
  }

  void Act(int32_t id) {
    Stream& stream = streams_[id];
    const Reply& reply = stream.reply;
    using B = Reply::Behaviour;
    switch (reply.behaviour) {
      case B::kHang:
        return;
      case B::kCloseBeforeHeaders:
        stream.answered = true;
        return End();
      case B::kResetConnection:
        stream.answered = true;
        return End(/*reset=*/true);
      case B::kFrames:
        return StartRaw(id, reply);
      case B::kResetBeforeHeaders:
        stream.answered = true;
        return ResetStream(id, reply, /*answer_begun=*/false);
      default:
        break;
    }
    Headers fields;
    if (!reply.status_line) {
      fields.emplace_back(":status", std::to_string(reply.status));
    } else if (!reply.status_line->empty()) {
      fields.emplace_back(":status", *reply.status_line);
    }
    fields.insert(fields.end(), reply.headers.begin(), reply.headers.end());
    if (reply.framing == Reply::Framing::kContentLength && !reply.headers_only) {
      fields.emplace_back("content-length",
                          std::to_string(reply.announced_length.value_or(reply.body.size())));
    }
    std::vector<std::string> storage;
    std::vector<nghttp2_nv> nva = Fields(fields, storage);
    if (stream.request.method == "HEAD" || reply.headers_only) {  // END_STREAM on HEADERS
      stream.answered = true;
      nghttp2_submit_response(session_, id, nva.data(), nva.size(), nullptr);
      return;
    }
    nghttp2_data_provider provider{};
    provider.read_callback = ReadBody;
    nghttp2_submit_response(session_, id, nva.data(), nva.size(), &provider);
  }

  // `fields` as nghttp2 takes them, names lower-cased; `storage` holds
  // the bytes the entries point at (nghttp2 copies them on submit).
  static std::vector<nghttp2_nv> Fields(const Headers& fields, std::vector<std::string>& storage) {
    storage.clear();
    storage.reserve(fields.size() * 2);
    for (const auto& [name, value] : fields) {
      storage.push_back(outbound::internal::AsciiLowered(name));
      storage.push_back(value);
    }
    std::vector<nghttp2_nv> nva;
    for (std::size_t i = 0; i < storage.size(); i += 2) {
      nva.push_back({reinterpret_cast<uint8_t*>(storage[i].data()),
                     reinterpret_cast<uint8_t*>(storage[i + 1].data()), storage[i].size(),
                     storage[i + 1].size(), NGHTTP2_NV_FLAG_NONE});
    }
    return nva;
  }

  static ssize_t ReadBody(nghttp2_session*, int32_t id, uint8_t* buf, size_t length,
                          uint32_t* flags, nghttp2_data_source*, void* user_data) {
    Http2Session& self = Self(user_data);
    auto it = self.streams_.find(id);
    if (it == self.streams_.end()) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    Stream& stream = it->second;
    const Reply& reply = stream.reply;
    using B = Reply::Behaviour;
    // Cut short: ResetMidBody and TruncateChunked then reset the stream;
    // ShortBody ends it cleanly, short of its content-length.
    bool resets = reply.behaviour == B::kResetMidBody || reply.behaviour == B::kTruncateChunked;
    bool stalls = reply.behaviour == B::kStall;
    bool cut = resets || stalls || reply.behaviour == B::kShortBody;
    std::size_t end = cut ? reply.cut_after : reply.body.size();
    if (stalls && stream.offset == end) return NGHTTP2_ERR_DEFERRED;  // and never resumed
    if (resets && stream.offset == end) {
      stream.answered = true;
      asio::post(self.server_.io, [weak = self.weak_from_this(), id, reply] {
        if (auto alive = weak.lock()) {
          alive->ResetStream(id, reply, /*answer_begun=*/true);
          alive->Flush();
        }
      });
      return NGHTTP2_ERR_DEFERRED;
    }
    if (reply.behaviour == B::kTrickle) {
      if (!stream.trickle_ready) return NGHTTP2_ERR_DEFERRED;
      length = std::min(length, reply.trickle_bytes);
      stream.trickle_ready = false;
      stream.timer = self.server_.After(reply.trickle_every, self.shared_from_this(), [&self, id] {
        auto again = self.streams_.find(id);
        if (again == self.streams_.end()) return;
        again->second.trickle_ready = true;
        nghttp2_session_resume_data(self.session_, id);
        self.Flush();
      });
    }
    std::size_t n = std::min(length, end - stream.offset);
    std::memcpy(buf, reply.body.data() + stream.offset, n);
    stream.offset += n;
    if (stream.offset == end && !resets && !stalls) {
      *flags |= NGHTTP2_DATA_FLAG_EOF;
      stream.answered = true;
      if (!reply.trailers.empty()) {
        // END_STREAM goes on the trailers' HEADERS frame instead.
        *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
        std::vector<std::string> storage;
        std::vector<nghttp2_nv> nva = Fields(reply.trailers, storage);
        if (nghttp2_submit_trailer(self.session_, id, nva.data(), nva.size()) != 0) {
          return NGHTTP2_ERR_CALLBACK_FAILURE;
        }
      }
    }
    return static_cast<ssize_t>(n);
  }

  void Read() {
    stream_->async_read_some(
        asio::buffer(input_), [self = shared_from_this()](boost::system::error_code ec, size_t n) {
          if (ec) {
            self->server_.ReadFailed(*self->stream_, ec);
            return self->End();
          }
          if (self->raw_mode_) {  // the test's frames own the connection
            self->server_.Record([&] { self->server_.raw_bytes_read += n; });
            return self->Read();
          }
          ssize_t rv = nghttp2_session_mem_recv(
              self->session_, reinterpret_cast<const uint8_t*>(self->input_.data()), n);
          if (rv < 0) return self->End();
          self->Flush();
          if (!self->ended_) self->Read();
        });
  }

  void Flush() {
    if (writing_ || ended_) return;
    std::string out;
    for (;;) {
      const uint8_t* data = nullptr;
      ssize_t n = nghttp2_session_mem_send(session_, &data);
      if (n < 0) return End();
      if (n == 0) break;
      out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
      if (out.size() >= 64 * 1024) break;
    }
    std::uint64_t raw_frames = 0;
    if (raw_mode_) raw_frames = TakeRaw(out);
    if (out.empty()) {
      if (raw_mode_) return;  // the script is done: wait for the client to leave
      bool done = !nghttp2_session_want_read(session_) && !nghttp2_session_want_write(session_);
      // The client said GOAWAY: it closes next, and the server reads on to
      // see how (close_notifies counts a TLS end).
      if (done && client_goaway_ && !end_after_write_ && !closing_) return;
      if (done || end_after_write_ || (closing_ && streams_.empty())) End();
      return;
    }
    writing_ = true;
    auto buffer = std::make_shared<std::string>(std::move(out));
    asio::async_write(
        *stream_, asio::buffer(*buffer),
        [self = shared_from_this(), buffer, raw_frames](boost::system::error_code ec, size_t) {
          self->writing_ = false;
          if (ec) return self->End();
          if (raw_frames > 0) self->server_.Record([&] { self->server_.raw_frames += raw_frames; });
          self->Flush();
        });
  }

  // Hands the connection to the reply's raw frames: nghttp2 writes what it
  // has queued and is then fed nothing more.
  void StartRaw(int32_t id, const Reply& reply) {
    streams_[id].answered = true;
    raw_mode_ = true;
    auto encode = [id](h2::Frame frame) {
      if (frame.stream_id == h2::kThisStream) frame.stream_id = static_cast<std::uint32_t>(id);
      return frame.Encode();
    };
    for (const h2::Frame& frame : reply.frames) raw_first_ += encode(frame);
    raw_first_count_ = reply.frames.size();
    if (reply.flood) {
      raw_flood_ = encode(*reply.flood);
      raw_flood_left_ = reply.flood_count == 0 ? SIZE_MAX : reply.flood_count;
    }
  }

  // Appends the next raw frames to `out`, up to about 64 KiB; how many.
  std::uint64_t TakeRaw(std::string& out) {
    std::uint64_t frames = raw_first_count_;
    out += raw_first_;
    raw_first_.clear();
    raw_first_count_ = 0;
    while (raw_flood_left_ > 0 && out.size() < 64 * 1024) {
      out += raw_flood_;
      if (raw_flood_left_ != SIZE_MAX) --raw_flood_left_;
      ++frames;
    }
    return frames;
  }

  // The connection is over: streams still unanswered were abandoned.
  void End(bool reset = false) {
    if (ended_) return;
    ended_ = true;
    reset ? stream_->Reset() : stream_->Close();
    int abandoned = 0;
    for (auto& [id, stream] : streams_) {
      stream.timer.Cancel();
      if (!stream.answered) ++abandoned;
    }
    streams_.clear();
    server_.Record([&] {
      --server_.open;
      server_.cancelled += abandoned;
    });
  }

  FakeServer::Impl& server_;
  std::unique_ptr<ByteStream> stream_;
  int connection_id_;
  nghttp2_session* session_ = nullptr;
  std::map<int32_t, Stream> streams_;
  std::array<char, 16384> input_{};
  int requests_ = 0;
  int32_t goaway_last_stream_ = INT32_MAX;
  bool writing_ = false;
  bool closing_ = false;
  bool ended_ = false;
  bool end_after_write_ = false;  // a GOAWAY reset: close once it is written
  // Reply::Frames and Reply::Flood: what is left to write raw.
  bool raw_mode_ = false;
  bool client_goaway_ = false;  // the client sent GOAWAY
  std::string raw_first_;
  std::size_t raw_first_count_ = 0;
  std::string raw_flood_;
  std::size_t raw_flood_left_ = 0;
};

}  // namespace

std::shared_ptr<Session> MakeHttp2Session(FakeServer::Impl& server,
                                          std::unique_ptr<ByteStream> stream, int connection_id) {
  return std::make_shared<Http2Session>(server, std::move(stream), connection_id);
}

}  // namespace outbound::testing
