// SPDX-License-Identifier: Apache-2.0
// HTTP/1.1 for the FakeServer: Beast parses each request; well-behaved
// responses are written by Beast, and the scripted misbehaviours write the
// bytes a broken server would.
#include <algorithm>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <optional>

#include "fake_server_internal.h"
#include "outbound/internal/ascii.h"

namespace outbound::testing {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;

class Http1Session final : public Session, public std::enable_shared_from_this<Http1Session> {
 public:
  Http1Session(FakeServer::Impl& server, std::unique_ptr<ByteStream> stream, int connection_id)
      : server_(server), stream_(std::move(stream)), connection_id_(connection_id) {}

  ~Http1Session() override { Close(); }

  void Start() override { ReadRequest(); }

  void Shutdown() override { Close(); }

 private:
  void ReadRequest() {
    parser_.emplace();
    parser_->body_limit(256 * 1024 * 1024);
    if (!server_.options.cut_reading) return ReadBody();
    http::async_read_header(
        *stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->OnHead(ec); });
  }

  void ReadBody() {
    http::async_read(
        *stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->OnRequest(ec); });
  }

  // The head has arrived: read the rest, or as much as a ReadCut says.
  void OnHead(beast::error_code ec) {
    if (ec) {
      server_.ReadFailed(*stream_, ec);
      return Close();
    }
    std::optional<ReadCut> cut = server_.options.cut_reading(Received());
    if (!cut) return ReadBody();
    ReadPart(std::move(*cut));
  }

  void ReadPart(ReadCut cut) {
    if (parser_->is_done() || parser_->get().body().size() >= cut.body_bytes) {
      ServerRequest request = Received();
      request.body.resize(std::min(request.body.size(), cut.body_bytes));
      request.whole = false;
      ++requests_;
      server_.Received(std::move(request));
      if (cut.end.behaviour == Reply::Behaviour::kCloseBeforeHeaders) return Close();
      return Reset();
    }
    http::async_read_some(*stream_, buffer_, *parser_,
                          [self = shared_from_this(), cut](beast::error_code ec, std::size_t) {
                            if (ec) return self->Close();
                            self->ReadPart(cut);
                          });
  }

  void OnRequest(beast::error_code ec) {
    if (ec) {
      server_.ReadFailed(*stream_, ec);
      Close();
      return;
    }
    ServerRequest request = Received();
    ++requests_;
    keep_alive_ = parser_->get().keep_alive();
    awaiting_reply_ = true;
    Reply reply = server_.Answer(request);
    if (Duration delay = reply.header_delay; delay > Duration::zero()) {
      delay_ = server_.After(delay, shared_from_this(), [this, reply = std::move(reply)] {
        if (!closed_) Act(reply);  // its cancel may have come too late
      });
      server_.Received(std::move(request));
    } else {
      server_.Received(std::move(request));
      Act(reply);
    }
  }

  // The request the parser holds, as far as it has read it, numbered as
  // the next on this connection.
  ServerRequest Received() {
    const auto& req = parser_->get();
    ServerRequest request;
    request.method = std::string(req.method_string());
    request.target = std::string(req.target());
    for (const auto& field : req) {
      request.headers.emplace_back(
          outbound::internal::AsciiLowered(std::string(field.name_string())),
          std::string(field.value()));
    }
    request.body = req.body();
    request.version = "1.1";
    request.connection_id = connection_id_;
    request.stream_id = requests_ + 1;
    return request;
  }

  void Act(const Reply& reply) {
    using B = Reply::Behaviour;
    using F = Reply::Framing;
    // A scripted failure is the server's doing, not a client giving up.
    if (reply.behaviour != B::kRespond && reply.behaviour != B::kHang &&
        reply.behaviour != B::kTrickle && reply.behaviour != B::kStall) {
      awaiting_reply_ = false;
    }
    std::string partial = reply.body.substr(0, reply.cut_after);
    switch (reply.behaviour) {
      case B::kRespond:
        return Respond(reply);
      case B::kHang:
        return WatchForClose();
      case B::kCloseBeforeHeaders:
      case B::kFrames:  // HTTP/2 only
        return Close();
      case B::kResetBeforeHeaders:
      case B::kResetConnection:
        return Reset();
      case B::kResetMidBody:
        return WriteRaw(Head(reply, reply.framing) + partial, [this] { Reset(); });
      case B::kShortBody:
        return WriteRaw(Head(reply, reply.framing) + partial, [this] { Close(); });
      case B::kStall:
        return WriteRaw(Head(reply, reply.framing) + partial, [this] { WatchForClose(); });
      case B::kTruncateChunked: {
        std::string out = Head(reply, F::kUnannounced);
        if (reply.cut_after > 0) out += Chunk(partial);
        return WriteRaw(std::move(out), [this] { Close(); });  // no last chunk
      }
      case B::kTrickle:
        return WriteRaw(Head(reply, reply.framing), [this, reply] { Trickle(reply, 0); });
    }
  }

  void Respond(const Reply& reply) {
    if (reply.headers_only && (!reply.body.empty() || !reply.trailers.empty())) {
      Reply bare = reply;  // the headers, announcing no body
      bare.body.clear();
      bare.trailers.clear();
      return Respond(bare);
    }
    // Beast refuses fields over 64 KiB and writes only well-formed
    // messages; a header bomb, a broken head or trailers are written as
    // the bytes they are.
    bool oversized = std::any_of(reply.headers.begin(), reply.headers.end(), [](const auto& h) {
      return h.first.size() + h.second.size() > 60 * 1024;
    });
    bool broken = reply.status_line || reply.announced_length ||
                  reply.framing != Reply::Framing::kContentLength || !reply.trailers.empty();
    if (oversized || broken) {
      Reply::Framing framing =
          reply.trailers.empty() ? reply.framing : Reply::Framing::kUnannounced;
      std::string out = Head(reply, framing);
      if (framing == Reply::Framing::kUnannounced) {
        if (!reply.body.empty()) out += Chunk(reply.body);
        out += "0\r\n";
        for (const auto& [name, value] : reply.trailers) out += name + ": " + value + "\r\n";
        out += "\r\n";
      } else {
        out += reply.body;
      }
      bool http09 = reply.status_line && reply.status_line->empty();
      return WriteRaw(std::move(out), [this, http09] {
        if (http09) {
          awaiting_reply_ = false;
          return Close();  // the close is what ends an HTTP/0.9 answer
        }
        Answered({});
      });
    }
    auto res = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(reply.status), 11);
    for (const auto& [name, value] : reply.headers) res->insert(name, value);
    res->body() = reply.body;
    res->keep_alive(keep_alive_);
    res->prepare_payload();
    http::async_write(*stream_, *res,
                      [self = shared_from_this(), res](beast::error_code ec, std::size_t) {
                        self->Answered(ec);
                      });
  }

  void Answered(beast::error_code ec) {
    awaiting_reply_ = false;
    if (ec || !keep_alive_) {
      Close();
    } else {
      ReadRequest();
    }
  }

  // The status line and headers, as a broken server would write them, the
  // body's length told as `framing` says.
  static std::string Head(const Reply& reply, Reply::Framing framing) {
    if (reply.status_line && reply.status_line->empty()) return "";  // HTTP/0.9
    std::string out =
        reply.status_line
            ? *reply.status_line
            : "HTTP/1.1 " + std::to_string(reply.status) + " " +
                  std::string(http::obsolete_reason(static_cast<http::status>(reply.status)));
    out += "\r\n";
    for (const auto& [name, value] : reply.headers) out += name + ": " + value + "\r\n";
    switch (framing) {
      case Reply::Framing::kContentLength:
        out += "Content-Length: " +
               std::to_string(reply.announced_length.value_or(reply.body.size())) + "\r\n";
        break;
      case Reply::Framing::kUnannounced:
        out += "Transfer-Encoding: chunked\r\n";
        break;
      case Reply::Framing::kAsGiven:
        break;
    }
    return out + "\r\n";
  }

  static std::string Chunk(const std::string& bytes) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", bytes.size());
    return size + bytes + "\r\n";
  }

  void WriteRaw(std::string bytes, std::function<void()> then) {
    auto buffer = std::make_shared<std::string>(std::move(bytes));
    asio::async_write(*stream_, asio::buffer(*buffer),
                      [self = shared_from_this(), buffer, then = std::move(then)](
                          beast::error_code ec, std::size_t) {
                        if (ec) return self->Close();
                        then();
                      });
  }

  // Writes the body's piece at `offset`, and arms the next piece's timer as
  // the write starts (as the HTTP/2 session does): a client that has a
  // piece finds the next one's timer already pending, so a test knows the
  // wait has begun. A timer that fires while the write is still out has
  // its piece written once the write is done (writes never overlap).
  //
  // Once the connection is closed nothing more is armed: a timer whose
  // callback was already under way when End cancelled it still gets here,
  // and a timer armed then would hold this session (its owner) for good.
  void Trickle(const Reply& reply, std::size_t offset) {
    if (closed_) return;
    if (offset >= reply.body.size()) return Answered({});
    std::size_t n = std::min(reply.trickle_bytes, reply.body.size() - offset);
    std::size_t next = offset + n;
    trickle_due_ = false;
    if (next < reply.body.size()) {
      delay_ = server_.After(reply.trickle_every, shared_from_this(), [this, reply, next] {
        if (trickle_writing_) {
          trickle_due_ = true;
        } else {
          Trickle(reply, next);
        }
      });
    }
    trickle_writing_ = true;
    WriteRaw(reply.body.substr(offset, n), [this, reply, next] {
      trickle_writing_ = false;
      if (next >= reply.body.size()) return Answered({});
      if (trickle_due_) Trickle(reply, next);
    });
  }

  // A hung request: read until the client goes away.
  void WatchForClose() {
    stream_->async_read_some(asio::buffer(scratch_),
                             [self = shared_from_this()](beast::error_code ec, std::size_t) {
                               if (ec) return self->Close();
                               self->WatchForClose();
                             });
  }

  void Close() { End(false); }
  void Reset() { End(true); }

  void End(bool reset) {
    if (closed_) return;
    closed_ = true;
    delay_.Cancel();
    reset ? stream_->Reset() : stream_->Close();
    bool abandoned = awaiting_reply_;
    server_.Record([&] {
      --server_.open;
      if (abandoned) ++server_.cancelled;
    });
  }

  FakeServer::Impl& server_;
  std::unique_ptr<ByteStream> stream_;
  int connection_id_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  int requests_ = 0;
  bool keep_alive_ = true;
  bool awaiting_reply_ = false;  // a request has not been answered in full yet
  bool closed_ = false;
  Timer delay_;
  bool trickle_writing_ = false;  // a piece of a trickled body is being written
  bool trickle_due_ = false;      // the next piece's time came during that write
  char scratch_[512];
};

}  // namespace

std::shared_ptr<Session> MakeHttp1Session(FakeServer::Impl& server,
                                          std::unique_ptr<ByteStream> stream, int connection_id) {
  return std::make_shared<Http1Session>(server, std::move(stream), connection_id);
}

}  // namespace outbound::testing
