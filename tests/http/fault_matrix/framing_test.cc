// SPDX-License-Identifier: Apache-2.0
// Fault matrix: the answer's framing. Resets and closes after the request,
// bodies cut short, lengths that lie or disagree, broken status lines,
// header bombs and bodies over the limit; over HTTP/1.1 and HTTP/2 wherever
// the fault exists in both.
//
// Two rules of the client's classification (docs/http-client.md, "How an
// attempt's result counts") decide most rows: an error before the response
// is "any other error" (Retry, Failure), so a GET makes three attempts and a
// POST without an Idempotency-Key one; and a body that fails once the
// headers are in is a Failure and not retried (the call has the response by
// then). A malformed answer (kInvalidResponse) is Stop and Failure: the
// server answers the same garbage again, and is failing (issue 11 #12).
#include <map>

#include "matrix_support.h"

namespace outbound::http::matrix {
namespace {

class FramingMatrix : public BothProtocols {
 protected:
  // The status line of a broken answer: HTTP/1.1's line, or h2's :status.
  std::string StatusLine(const std::string& code, const std::string& reason) const {
    return h2() ? code : "HTTP/1.1 " + code + " " + reason;
  }

  void ServeAlways(Reply reply) {
    Serve([reply](const ServerRequest&) { return reply; });
    StartClient();
  }

  // The row of a malformed answer to a GET.
  void ExpectInvalid(Reply reply) {
    ServeAlways(std::move(reply));
    Begin(Request::Get("/"));
    ExpectEnds({.error = ErrorKind::kInvalidResponse, .attempts = 1, .breaker_failures = 1});
  }
};

TEST_P(FramingMatrix, AConnectionResetAfterTheRequestIsRetriedForAGet) {
  ServeAlways(Reply::ResetConnection());
  Begin(Request::Get("/"));
  WaitThenAdvance(50ms);
  WaitThenAdvance(100ms);
  ExpectEnds({.error = ErrorKind::kTransport,
              .attempts = 3,
              .server_saw = 3,
              .breaker_failures = 3,
              .took = 150ms});
}

TEST_P(FramingMatrix, AConnectionResetAfterTheRequestSendsAPostOnce) {
  ServeAlways(Reply::ResetConnection());
  Begin(Request::Post("/charges", "amount=5"));
  ExpectEnds({.error = ErrorKind::kTransport, .attempts = 1, .breaker_failures = 1});
}

TEST_P(FramingMatrix, AConnectionClosedAfterTheRequestIsRetriedForAGet) {
  ServeAlways(Reply::Close());
  Begin(Request::Get("/"));
  WaitThenAdvance(50ms);
  WaitThenAdvance(100ms);
  ExpectEnds({.error = ErrorKind::kTransport,
              .attempts = 3,
              .server_saw = 3,
              .breaker_failures = 3,
              .took = 150ms});
}

TEST_P(FramingMatrix, AConnectionClosedAfterTheRequestSendsAPostOnce) {
  ServeAlways(Reply::Close());
  Begin(Request::Post("/charges", "amount=5"));
  ExpectEnds({.error = ErrorKind::kTransport, .attempts = 1, .breaker_failures = 1});
}

// Issue 11 #1: a reused connection that the server reads a request from and
// then closes. Answers the first request of each connection, closes on the
// next.
class ReusedConnectionMatrix : public FramingMatrix {
 protected:
  void ServeOnePerConnection() {
    Serve([this](const ServerRequest& r) {
      std::lock_guard lock(mu);
      return ++seen[r.connection_id] == 1 ? Reply::Ok("fresh") : Reply::Close();
    });
    StartClient();
    auto warm = client->Send(Request::Get("/warm"));
    ASSERT_TRUE(warm) << warm.error().message();
  }
  std::mutex mu;
  std::map<int, int> seen;
};

// The POST was written once; the client cannot know whether the server
// acted on it, so it is not written again (the warm-up GET is the other
// request the server saw). Over HTTP/1.1, which has no graceful close, a
// kept-alive connection's end before the answer is no failure of the
// dependency's; an HTTP/2 server closes with a GOAWAY, so a close without
// one is.
TEST_P(ReusedConnectionMatrix, APostOnAReusedConnectionTheServerClosesIsWrittenOnce) {
  ServeOnePerConnection();
  Begin(Request::Post("/charges", "charge-1"));
  ExpectEnds({.error = ErrorKind::kTransport,
              .attempts = 1,
              .server_saw = 2,
              .breaker_failures = h2() ? 1 : 0});
  int bodies = 0;
  for (const ServerRequest& r : server->requests()) bodies += r.body == "charge-1";
  EXPECT_EQ(bodies, 1);
}

// A GET is retried, by the retry layer, in sight of on_attempt: two attempts,
// the second on a fresh connection. HTTP/2: the close counted once, the
// retry after a backoff; HTTP/1.1: a kept-alive connection's end, not
// counted, the retry at once.
TEST_P(ReusedConnectionMatrix, AGetOnAReusedConnectionTheServerClosesIsRetriedInTheOpen) {
  ServeOnePerConnection();
  Begin(Request::Get("/charges/1"));
  if (h2()) WaitThenAdvance(50ms);
  Result<Response> result = ExpectEnds({.status = 200,
                                        .attempts = 2,
                                        .server_saw = 3,
                                        .breaker_failures = h2() ? 1 : 0,
                                        .took = h2() ? 50ms : 0ms});
  if (result) {
    EXPECT_EQ(result->body, "fresh");
  }
}

OUTBOUND_MATRIX_BOTH_PROTOCOLS(ReusedConnectionMatrix);

TEST_P(FramingMatrix, AResetMidBodyFailsTheCallOnce) {
  ServeAlways(Reply::ResetAfter(100, std::string(200000, 'x')));
  Begin(Request::Get("/"));
  ExpectEnds({.error = ErrorKind::kTransport, .attempts = 1, .breaker_failures = 1});
}

// Content-Length 10, 5 bytes sent. HTTP/1.1: the connection closes short of
// it, a truncated body (kTransport). HTTP/2: the stream ends (END_STREAM)
// short of its content-length, a malformed response (RFC 9113 §8.1.1).
TEST_P(FramingMatrix, AContentLengthLongerThanTheBodyFailsTheCall) {
  ServeAlways(Reply::ShortBody(5, "0123456789"));
  Begin(Request::Get("/"));
  ExpectEnds({.error = h2() ? ErrorKind::kInvalidResponse : ErrorKind::kTransport,
              .attempts = 1,
              .breaker_failures = 1});
}

// RFC 9112 §6.3: Content-Length 5 and 10 is an unrecoverable error.
TEST_P(FramingMatrix, ConflictingContentLengthsAreInvalid) {
  ExpectInvalid(Reply::Ok("0123456789")
                    .Header("Content-Length", "5")
                    .Header("Content-Length", "10")
                    .HeadersAsGiven());
}

// Identical duplicates MAY be accepted (RFC 9110 §8.6) or refused: either
// way, never a body of another length.
TEST_P(FramingMatrix, IdenticalContentLengthsGiveTheBodyOrAnError) {
  ServeAlways(Reply::Ok("0123456789")
                  .Header("Content-Length", "10")
                  .Header("Content-Length", "10")
                  .HeadersAsGiven());
  Begin(Request::Get("/"));
  Result<Response> result = End();
  if (result) {
    EXPECT_EQ(result->status, 200);
    EXPECT_EQ(result->body, "0123456789");
  } else {
    EXPECT_EQ(ToString(result.error().kind()), ToString(ErrorKind::kInvalidResponse));
    EXPECT_EQ(result.error().attempts(), 1);
  }
}

// Transfer-Encoding with Content-Length: RFC 9112 §6.3 says such a message
// "ought to be handled as an error" (a smuggling attempt); RFC 9113 §8.2.2
// makes transfer-encoding malformed in HTTP/2. The safe choice: invalid,
// not retried, and over HTTP/1.1 the connection is never used again (the
// next call dials a new one).
TEST_P(FramingMatrix, TransferEncodingWithContentLengthIsInvalidAndTheConnectionDropped) {
  Reply reply = h2() ? Reply::Ok("hello")
                           .Header("Transfer-Encoding", "chunked")
                           .Header("Content-Length", "5")
                           .HeadersAsGiven()
                     : Reply::Ok("5\r\nhello\r\n0\r\n\r\n")
                           .Header("Transfer-Encoding", "chunked")
                           .Header("Content-Length", "3")
                           .HeadersAsGiven();
  Serve([reply](const ServerRequest& r) { return r.target == "/next" ? Reply::Ok() : reply; });
  StartClient();
  Begin(Request::Get("/"));
  ExpectEnds({.error = ErrorKind::kInvalidResponse, .attempts = 1, .breaker_failures = 1});
  if (!h2()) {
    ASSERT_TRUE(client->Send(Request::Get("/next")));
    EXPECT_EQ(server->connections_opened(), 2);
  }
}

// HTTP/1.1: a body with no status line and no headers, as HTTP/0.9 answered.
// HTTP/2: a response without :status.
TEST_P(FramingMatrix, AnAnswerWithoutAStatusLineIsInvalid) {
  ExpectInvalid(Reply::Ok("<html>hello</html>").StatusLine(""));
}

TEST_P(FramingMatrix, AFourDigitStatusIsInvalid) {
  ExpectInvalid(Reply::Ok("x").StatusLine(StatusLine("2000", "OK")));
}

TEST_P(FramingMatrix, ANegativeStatusIsInvalid) {
  ExpectInvalid(Reply::Ok("x").StatusLine(StatusLine("-200", "X")));
}

// Issue 11 #11: a header section over the client's fixed bound fails as too
// large, not retried; and too large is the client's limit, not the
// dependency's health (issue 10 #8): Ignored by the breaker.
TEST_P(FramingMatrix, AHeaderBombOfManyFieldsIsTooLarge) {
  Reply bomb = Reply::Ok("after");
  for (int i = 0; i < 20000; ++i) {
    bomb.Header("x-bomb-" + std::to_string(i), std::string(40, 'b'));  // ~1 MB in all
  }
  ServeAlways(std::move(bomb));
  Begin(Request::Get("/"));
  ExpectEnds({.error = ErrorKind::kResponseTooLarge, .attempts = 1, .breaker_failures = 0});
}

TEST_P(FramingMatrix, AHeaderBombOfOneHugeFieldIsTooLarge) {
  ServeAlways(Reply::Ok("after").Header("x-bomb", std::string(1 << 20, 'b')));
  Begin(Request::Get("/"));
  ExpectEnds({.error = ErrorKind::kResponseTooLarge, .attempts = 1, .breaker_failures = 0});
}

// Issue 11 #11: a length announced over the limit fails at once, without
// reading the body: the server sends only the headers and then nothing, and
// the call ends with no time passing.
TEST_P(FramingMatrix, ABodyAnnouncedOverTheLimitFailsAtOnce) {
  Serve([](const ServerRequest&) { return Reply::Stall(0, "").AnnounceLength(1ull << 30); });
  Settings settings = PaymentsSettings();
  settings.max_response_bytes = 64 * 1024;
  StartClient(settings);
  Begin(Request::Get("/"));
  ExpectEnds({.error = ErrorKind::kResponseTooLarge, .attempts = 1, .breaker_failures = 0});
}

TEST_P(FramingMatrix, ABodyOverTheLimitWithoutALengthFailsAsTooLarge) {
  Serve([](const ServerRequest&) { return Reply::Ok(std::string(1 << 20, 'x')).Unannounced(); });
  Settings settings = PaymentsSettings();
  settings.max_response_bytes = 64 * 1024;
  StartClient(settings);
  Begin(Request::Get("/"));
  ExpectEnds({.error = ErrorKind::kResponseTooLarge, .attempts = 1, .breaker_failures = 0});
}

OUTBOUND_MATRIX_BOTH_PROTOCOLS(FramingMatrix);

class FramingMatrixH1 : public MatrixTest {
 protected:
  void SetUp() override {
    protocol = Protocol::kHttp11;
    MatrixTest::SetUp();
  }
};

// Chunked, closed before the last chunk: a truncated body (HTTP/1.1 only;
// HTTP/2's is RST_STREAM(NO_ERROR) mid-body, in the frames matrix).
TEST_F(FramingMatrixH1, AChunkedBodyClosedBeforeItsLastChunkFailsTheCall) {
  Serve([](const ServerRequest&) { return Reply::TruncateChunked(100, std::string(200, 'x')); });
  StartClient();
  Begin(Request::Get("/"));
  ExpectEnds({.error = ErrorKind::kTransport, .attempts = 1, .breaker_failures = 1});
}

}  // namespace
}  // namespace outbound::http::matrix
