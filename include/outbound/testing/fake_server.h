// SPDX-License-Identifier: Apache-2.0
// outbound/testing/fake_server.h
//
// A scripted dependency on loopback: a real HTTP/1.1 and HTTP/2 server
// (Boost.Beast parses HTTP/1.1, nghttp2 runs HTTP/2, OpenSSL does TLS with
// ALPN, or HTTP/2 in plain text with prior knowledge: Options::h2c) whose
// handler answers each request with a response (trailers included) or a scripted
// misbehaviour: hang, close, reset (the stream or the connection, before the
// headers, after them or mid-body), truncate, stall, trickle, lie about the
// length, break the status line or the framing, refuse a stream, GOAWAY, or
// hand the connection to raw HTTP/2 frames of the test's own (h2_frame.h).
//
// example: examples/headers/testing.cc#fake-server
//   testing::TestCA ca;
//   auto server = testing::FakeServer::Start(
//       {.tls = testing::ServerTls{ca.IssueServer({"payments", "127.0.0.1"})},
//        .handler = [](const testing::ServerRequest& r) {
//          if (r.target == "/slow") return testing::Reply::Hang();
//          return testing::Reply::Status(503).Header("Retry-After", "2");
//        }});
//   network.Add("payments", 8443, "127.0.0.1", (*server)->port());
//   // ...
//   ASSERT_TRUE((*server)->WaitForRequests(1));  // the first attempt has arrived
//   EXPECT_EQ((*server)->requests().size(), 2u);
//
// Threads: the server runs one I/O thread of its own; the handler runs on it,
// one request at a time, and should not block (return Reply::Hang() or a
// header delay instead). Waits the server makes (header delays, trickling)
// are timers on `Options::clock`, so a test on a ManualClock controls them.
// Every accessor is thread-safe. Destroying the server shuts it down: GOAWAY
// on HTTP/2, close on HTTP/1.1, and the thread is joined.
#ifndef OUTBOUND_TESTING_FAKE_SERVER_H_
#define OUTBOUND_TESTING_FAKE_SERVER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "outbound/clock.h"
#include "outbound/error.h"
#include "outbound/testing/h2_frame.h"
#include "outbound/testing/test_ca.h"

namespace outbound::testing {

using Headers = std::vector<std::pair<std::string, std::string>>;

// One request as the server received it.
struct ServerRequest {
  std::string method;
  std::string target;  // path and query, as sent
  Headers headers;     // names lower-cased
  std::string body;
  std::string version;    // "1.1" or "2"
  std::string scheme;     // HTTP/2's :scheme ("http" or "https"); "" on HTTP/1.1
  int connection_id = 0;  // 1, 2, ... in the order connections were accepted
  int stream_id = 0;      // HTTP/2 stream id; on HTTP/1.1 the request's index on its connection
  // False when the server stopped reading it part way (Options::cut_reading):
  // `body` then holds only what was read.
  bool whole = true;

  // The first value of the header `name` (any case), or "" if absent.
  std::string header(std::string_view name) const;
};

// What the server does with one request. Build one with the factories;
// the chained setters below adjust what is written.
struct Reply {
  enum class Behaviour {
    kRespond,             // send status, headers and body
    kHang,                // never answer; the request is "cancelled" when the client leaves
    kCloseBeforeHeaders,  // close the connection (HTTP/2: the whole connection)
    kResetBeforeHeaders,  // HTTP/1.1: TCP reset; HTTP/2: RST_STREAM with `rst_code`
    kResetMidBody,        // headers, `cut_after` body bytes, then reset as above
    kTruncateChunked,     // HTTP/1.1 chunked: `cut_after` bytes, then close with no last chunk
    kShortBody,           // Content-Length of the whole body, only `cut_after` bytes sent
    kTrickle,             // the body `trickle_bytes` at a time, every `trickle_every`
    kResetConnection,     // reset the whole connection with a TCP RST, on either protocol
    kStall,               // headers and `cut_after` body bytes, then nothing; the connection stays
    kFrames,              // HTTP/2: `frames`, then `flood` `flood_count` times, written raw
  };

  // How HTTP/2 resets (Reset, ResetAfter, ResetAfterHeaders, a ReadCut's)
  // end the exchange. HTTP/1.1 resets are always a TCP RST.
  enum class H2Reset {
    kStream,      // RST_STREAM `rst_code` on the request's stream
    kGoaway,      // GOAWAY `rst_code` whose last-stream-id leaves the stream
                  // out (not processed) unless its answer has begun, then a close
    kConnection,  // the TCP connection closes (FIN), with neither frame
  };

  // How the body's length is told (RFC 9112 §6, RFC 9113 §8.1).
  enum class Framing {
    kContentLength,  // Content-Length: the body's size, or `announced_length`
    kUnannounced,    // HTTP/1.1: chunked; HTTP/2: no content-length, END_STREAM ends it
    kAsGiven,        // no framing header added: the headers given are all there is
  };

  static Reply Status(int status, std::string body = "");
  static Reply Ok(std::string body = "") { return Status(200, std::move(body)); }
  static Reply Hang();
  // Reads the request whole, then closes the connection without a byte of
  // answer (HTTP/2: the whole connection, with no GOAWAY).
  static Reply Close();
  // Reads the request whole, then resets: HTTP/1.1 with a TCP RST; HTTP/2
  // with RST_STREAM `rst_code`: 7 REFUSED_STREAM (default), 2 INTERNAL_ERROR,
  // 8 CANCEL, 0 NO_ERROR.
  static Reply Reset(std::uint32_t rst_code = 7);
  // Reads the request whole, then resets the connection with a TCP RST, on
  // either protocol (HTTP/2: no GOAWAY, no RST_STREAM).
  static Reply ResetConnection();
  // The headers (announcing the body's length), then a reset as Reset does
  // before any body byte. Code 2 INTERNAL_ERROR unless ResetCode says.
  static Reply ResetAfterHeaders(std::string body = "partial");
  // The headers, `body_bytes` of `body`, then a reset as above.
  static Reply ResetAfter(std::size_t body_bytes, std::string body);
  static Reply TruncateChunked(std::size_t body_bytes, std::string body);
  static Reply ShortBody(std::size_t body_bytes, std::string body);
  // The headers announcing `body`'s length (or AnnounceLength's), its first
  // `body_bytes`, then nothing more: neither the rest, nor an end, nor a close.
  static Reply Stall(std::size_t body_bytes, std::string body);
  // `body`, `bytes` at a time: the first piece with the headers, each next
  // one `every` later on the server's clock. The timer for a piece is
  // pending by the time the piece before it can have arrived, so a test
  // that has a piece can wait for that timer (ManualClock::WaitForTimerBy).
  static Reply Trickle(std::string body, std::size_t bytes, Duration every);

  // HTTP/2 only: the server hands the connection over to the test. It
  // writes `frames` as they are, then leaves the stream unanswered; from
  // then on it reads and discards what the client sends (a flood's
  // acknowledgements included) until the client closes. Frames for
  // h2::kThisStream go on the request's stream. On HTTP/1.1: Close().
  static Reply Frames(std::vector<h2::Frame> frames);
  // As Frames(first), then `frame` written `count` times over (0: until the
  // client closes the connection), as fast as the client reads them.
  static Reply Flood(h2::Frame frame, std::size_t count = 0, std::vector<h2::Frame> first = {});

  Reply& Header(std::string name, std::string value) {
    headers.emplace_back(std::move(name), std::move(value));
    return *this;
  }
  // A trailer field, sent after the body: HTTP/2 in a HEADERS frame that
  // carries END_STREAM (the DATA frames then do not); HTTP/1.1 in the
  // trailer section of a chunked body (the body is then chunked, whatever
  // the framing said). gRPC's grpc-status travels this way.
  Reply& Trailer(std::string name, std::string value) {
    trailers.emplace_back(std::move(name), std::move(value));
    return *this;
  }
  // The answer is its headers alone: HTTP/2 one HEADERS frame with
  // END_STREAM and no content-length (gRPC's Trailers-Only answer);
  // HTTP/1.1 "Content-Length: 0". The body and trailers are not sent.
  Reply& HeadersOnly() {
    headers_only = true;
    return *this;
  }
  // Waits `d` on the server's clock before sending anything.
  Reply& DelayHeaders(Duration d) {
    header_delay = d;
    return *this;
  }
  // The RST_STREAM code of a reset (HTTP/2); HTTP/1.1 always resets the TCP
  // connection.
  Reply& ResetCode(std::uint32_t code) {
    rst_code = code;
    return *this;
  }
  // HTTP/2: a reset is done as `how` says rather than with RST_STREAM.
  Reply& ResetBy(H2Reset how) {
    h2_reset = how;
    return *this;
  }
  // Announces `n` bytes in Content-Length, whatever the body's size.
  Reply& AnnounceLength(std::uint64_t n) {
    announced_length = n;
    return *this;
  }
  // Sends the body without announcing its length (HTTP/1.1: chunked).
  Reply& Unannounced() {
    framing = Framing::kUnannounced;
    return *this;
  }
  // Adds no Content-Length or Transfer-Encoding: the headers given say what
  // they say (two Content-Lengths, Transfer-Encoding with Content-Length...)
  // and the body is written as given (on HTTP/1.1, chunk it yourself).
  // HTTP/1.1 keeps the connection open afterwards, as if the answer were fine.
  Reply& HeadersAsGiven() {
    framing = Framing::kAsGiven;
    return *this;
  }
  // Replaces the status line. HTTP/1.1: `line` is written instead of
  // "HTTP/1.1 200 OK" ("HTTP/1.1 2000 OK"); an empty `line` sends neither a
  // status line nor headers, only the body and a close, as HTTP/0.9 did.
  // HTTP/2: `line` is the :status value as given ("2000"); empty: no :status.
  Reply& StatusLine(std::string line) {
    status_line = std::move(line);
    return *this;
  }

  Behaviour behaviour = Behaviour::kRespond;
  int status = 200;
  Headers headers;
  std::string body;
  Headers trailers;
  bool headers_only = false;
  Duration header_delay{0};
  std::size_t cut_after = 0;
  std::uint32_t rst_code = 7;
  H2Reset h2_reset = H2Reset::kStream;
  std::size_t trickle_bytes = 1;
  Duration trickle_every{0};
  Framing framing = Framing::kContentLength;
  std::optional<std::uint64_t> announced_length;
  std::optional<std::string> status_line;
  std::vector<h2::Frame> frames;
  std::optional<h2::Frame> flood;
  std::size_t flood_count = 0;
};

using Handler = std::function<Reply(const ServerRequest&)>;

// A request the server stops reading part way (Options::cut_reading): it
// reads `body_bytes` of the body (0: none; all of it if shorter), records the
// request with what it read (ServerRequest::whole false) and ends the
// exchange as `end` says: Close(), Reset(code) (with ResetBy on HTTP/2) or
// ResetConnection(). The handler is not called for it.
struct ReadCut {
  std::size_t body_bytes = 0;
  Reply end = Reply::Close();
};

// TLS for the server. HTTP/2 and HTTP/1.1 are offered by ALPN (h2 first).
struct ServerTls {
  ServerTls() = default;
  explicit ServerTls(Certificate served) : certificate(std::move(served)) {}

  Certificate certificate;  // the chain and key served
  // When set, a client certificate issued by this CA is required (mTLS).
  std::optional<std::string> client_ca_pem;
  // Protocol versions allowed, as OpenSSL numbers (TLS1_2_VERSION = 0x0303).
  // 0 means OpenSSL's default. {0x0302, 0x0302} serves TLS 1.1 only.
  int min_version = 0;
  int max_version = 0;
  // ALPN protocols offered, in order of preference.
  std::vector<std::string> alpn = {"h2", "http/1.1"};
  // The TLS 1.2 (and older) cipher suites allowed, in OpenSSL's syntax; empty
  // means OpenSSL's default. With max_version TLS 1.2,
  // "ECDHE-ECDSA-AES128-SHA" serves a cipher RFC 9113 Appendix A bans for h2.
  std::string ciphers;
};

class FakeServer {
 public:
  struct Options {
    // TLS, or plain text when empty: HTTP/1.1, or HTTP/2 with `h2c`.
    std::optional<ServerTls> tls;
    // Without TLS: every connection is HTTP/2 with prior knowledge (h2c,
    // RFC 9113 §3.3), starting with the client's preface, as gRPC in plain
    // text is; no HTTP/1.1 is served then. Ignored with TLS (ALPN decides).
    bool h2c = false;
    Handler handler;
    // The clock the server's own waits run on.
    Clock* clock = nullptr;  // null: SystemClock()
    // HTTP/2: send GOAWAY after this many requests on a connection (0: never).
    int goaway_after_streams = 0;
    // With goaway_after_streams: the GOAWAY's last-stream-id is lowered to
    // exclude the last `goaway_unprocessed` streams, which are then left
    // unanswered, as a server does that did not process them (those that
    // arrive before the GOAWAY's own stream wait for it, unanswered, so a
    // client that writes its requests in one batch sees the same).
    int goaway_unprocessed = 0;
    // HTTP/2: the SETTINGS_MAX_CONCURRENT_STREAMS the server advertises;
    // streams over it are refused (RST_STREAM REFUSED_STREAM), as nghttp2 does.
    std::uint32_t max_concurrent_streams = 100;
    // Called with each request's head (method, target, headers, ids; no
    // body yet) as it arrives, on the server's thread: a ReadCut to stop
    // reading it part way, or nullopt to read it whole and call `handler`.
    std::function<std::optional<ReadCut>(const ServerRequest& head)> cut_reading;
  };

  // Listens on 127.0.0.1, on a port of the OS's choosing.
  [[nodiscard]] static Result<std::unique_ptr<FakeServer>> Start(Options options);
  ~FakeServer();
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;

  std::uint16_t port() const;
  // "https://127.0.0.1:PORT" or "http://..."
  std::string url() const;

  // Every request received, in order of arrival.
  std::vector<ServerRequest> requests() const;
  std::size_t request_count() const;
  // Requests the client abandoned before the server answered them in full
  // (an HTTP/2 stream reset by the client, or the connection closed).
  int cancelled_requests() const;
  int connections_opened() const;
  int connections_open() const;
  // TLS connections whose handshake resumed a session the server gave on
  // an earlier connection (a ticket, or a TLS 1.2 session id).
  int tls_sessions_resumed() const;
  // HTTP/2 RST_STREAM frames the client sent.
  int streams_reset_by_client() const;
  // HTTP/2 PING frames the client sent (not its acknowledgements of ours).
  int pings_from_client() const;
  // HTTP/2 GOAWAY frames the client sent: how it says it is closing a
  // connection it no longer wants (RFC 9113 §6.8). Those with an error
  // code other than NO_ERROR are also counted by goaway_errors_from_client.
  int goaways_from_client() const;
  int goaway_errors_from_client() const;
  // TLS connections the client ended with a close_notify alert (RFC 8446
  // §6.1), rather than by closing its socket alone. Counted where the
  // server reads the connection: waiting for a request (HTTP/1.1) or for
  // frames (HTTP/2), not inside a ReadCut.
  int close_notifies() const;
  // Frames written raw for Reply::Frames and Reply::Flood, on every
  // connection: how a test knows a flood is under way.
  std::uint64_t raw_frames_written() const;
  // Bytes the client sent on those connections after the server handed
  // them over, which it read and discarded, summed over every connection
  // (counted from the first read after the handover): how a test knows the
  // client wrote to one (a reset, a PING).
  std::uint64_t raw_bytes_read() const;

  // Blocks until `done()` is true, checked after every event the server
  // records; gives up after `real_limit` (a safety net, not a tolerance).
  bool WaitFor(const std::function<bool(const FakeServer&)>& done,
               std::chrono::milliseconds real_limit = std::chrono::seconds(10)) const;

  // Blocks until the server has received at least `n` requests (the
  // client's attempt n has reached it), or `real_limit` has passed: false.
  // A request counts once its handler has answered, and the timer of a
  // DelayHeaders answer is armed by then: advancing the clock after this
  // returns releases it.
  bool WaitForRequests(std::size_t n,
                       std::chrono::milliseconds real_limit = std::chrono::seconds(10)) const {
    return WaitFor([n](const FakeServer& s) { return s.request_count() >= n; }, real_limit);
  }

  // Stops accepting, sends GOAWAY on HTTP/2 connections, closes the rest,
  // and joins the server's thread. Idempotent; the destructor calls it.
  void Stop();

  struct Impl;

 private:
  explicit FakeServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace outbound::testing

#endif  // OUTBOUND_TESTING_FAKE_SERVER_H_
