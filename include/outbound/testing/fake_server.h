// outbound/testing/fake_server.h
//
// A scripted dependency on loopback: a real HTTP/1.1 and HTTP/2 server
// (Boost.Beast parses HTTP/1.1, nghttp2 runs HTTP/2, OpenSSL does TLS with
// ALPN) whose handler answers each request with a response or a scripted
// misbehaviour: hang, close, reset, truncate, trickle, lie about the length,
// refuse a stream, GOAWAY.
//
//   testing::TestCA ca;
//   auto server = testing::FakeServer::Start({
//       .tls = testing::ServerTls{ca.IssueServer({"payments", "127.0.0.1"})},
//       .handler = [](const testing::ServerRequest& r) {
//         if (r.target == "/slow") return testing::Reply::Hang();
//         return testing::Reply::Status(503).Header("Retry-After", "2");
//       }});
//   network.Add("payments", 8443, "127.0.0.1", server->port());
//   ...
//   EXPECT_EQ(server->requests().size(), 2);
//
// Threads: the server runs one I/O thread of its own; the handler runs on it,
// one request at a time, and should not block (return Reply::Hang() or a
// header delay instead). Waits the server makes (header delays, trickling)
// are timers on `Options::clock`, so a test on a ManualClock controls them.
// Every accessor is thread-safe. Destroying the server shuts it down: GOAWAY
// on HTTP/2, close on HTTP/1.1, and the thread is joined.
#ifndef OUTBOUND_TESTING_FAKE_SERVER_H_
#define OUTBOUND_TESTING_FAKE_SERVER_H_

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
  int connection_id = 0;  // 1, 2, ... in the order connections were accepted
  int stream_id = 0;      // HTTP/2 stream id; on HTTP/1.1 the request's index on its connection

  // The first value of the header `name` (any case), or "" if absent.
  std::string header(std::string_view name) const;
};

// What the server does with one request. Build one with the factories.
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
  };

  static Reply Status(int status, std::string body = "");
  static Reply Ok(std::string body = "") { return Status(200, std::move(body)); }
  static Reply Hang();
  static Reply Close();
  // HTTP/2 RST_STREAM codes: 7 REFUSED_STREAM (default), 2 INTERNAL_ERROR, 8 CANCEL.
  static Reply Reset(std::uint32_t rst_code = 7);
  static Reply ResetAfter(std::size_t body_bytes, std::string body);
  static Reply TruncateChunked(std::size_t body_bytes, std::string body);
  static Reply ShortBody(std::size_t body_bytes, std::string body);
  static Reply Trickle(std::string body, std::size_t bytes, Duration every);

  Reply& Header(std::string name, std::string value) {
    headers.emplace_back(std::move(name), std::move(value));
    return *this;
  }
  // Waits `d` on the server's clock before sending anything.
  Reply& DelayHeaders(Duration d) {
    header_delay = d;
    return *this;
  }

  Behaviour behaviour = Behaviour::kRespond;
  int status = 200;
  Headers headers;
  std::string body;
  Duration header_delay{0};
  std::size_t cut_after = 0;
  std::uint32_t rst_code = 7;
  std::size_t trickle_bytes = 1;
  Duration trickle_every{0};
};

using Handler = std::function<Reply(const ServerRequest&)>;

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
};

class FakeServer {
 public:
  struct Options {
    // TLS, or plain text (HTTP/1.1 only) when empty.
    std::optional<ServerTls> tls;
    Handler handler;
    // The clock the server's own waits run on.
    Clock* clock = nullptr;  // null: SystemClock()
    // HTTP/2: send GOAWAY after this many requests on a connection (0: never).
    int goaway_after_streams = 0;
    // With goaway_after_streams: the GOAWAY's last-stream-id is lowered to
    // exclude the last `goaway_unprocessed` streams, which are then left
    // unanswered, as a server does that did not process them.
    int goaway_unprocessed = 0;
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
  // HTTP/2 RST_STREAM frames the client sent.
  int streams_reset_by_client() const;

  // Blocks until `done()` is true, checked after every event the server
  // records; gives up after `real_limit` (a safety net, not a tolerance).
  bool WaitFor(const std::function<bool(const FakeServer&)>& done,
               std::chrono::milliseconds real_limit = std::chrono::seconds(10)) const;

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
