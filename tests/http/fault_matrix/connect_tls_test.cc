// SPDX-License-Identifier: Apache-2.0
// Fault matrix: the connection never becomes one. Nothing listens, nothing
// accepts, or TLS fails. Every row: a GET, the defaults (Timeout 10 s,
// AttemptTimeout 5 s, 3 attempts), jitter of one half.
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "matrix_support.h"
#include "outbound/testing/black_hole.h"

namespace outbound::http::matrix {
namespace {

class ConnectMatrix : public BothProtocols {
 protected:
  // A server whose TLS is `tls`: its handshake fails, so it never sees a request.
  void ServeTls(testing::ServerTls tls) {
    Serve([](const ServerRequest&) { return Reply::Ok(); }, {.tls = std::move(tls)});
  }

  // The row of every certificate the client must not trust: kTlsUntrusted,
  // Stop and Failure (DefaultClassify's table), one attempt, nothing sent.
  void ExpectUntrusted() {
    StartClient();
    Begin(Request::Get("/"));
    ExpectEnds(
        {.error = ErrorKind::kTlsUntrusted, .attempts = 1, .server_saw = 0, .breaker_failures = 1});
  }

  // A handshake refused for the protocol version or cipher: kTransport (no
  // certificate is at fault), but Stop: the server will offer the same on
  // the next attempt, so a retry cannot get better (issue 11 #12).
  void ExpectHandshakeRefused() {
    StartClient();
    Begin(Request::Get("/"));
    ExpectEnds(
        {.error = ErrorKind::kTransport, .attempts = 1, .server_saw = 0, .breaker_failures = 1});
  }

  // A dial that fails: any other error, Retry and Failure; three attempts,
  // 50 and 100 ms apart, none reaching a server.
  void ExpectEachDialFails(Request request) {
    StartClient();
    Begin(std::move(request));
    WaitThenAdvance(50ms);
    WaitThenAdvance(100ms);
    ExpectEnds({.error = ErrorKind::kTransport,
                .attempts = 3,
                .server_saw = -1,
                .breaker_failures = 3,
                .took = 150ms});
  }
};

TEST_P(ConnectMatrix, RefusedConnectionsAreRetriedAndCountAgainstTheDependency) {
  network.Add("payments", 8443, "127.0.0.1", testing::PortNothingListensOn());
  ExpectEachDialFails(Request::Get("/"));
}

// A POST as well: nothing of it left the client, so sending it again
// cannot make it happen twice.
TEST_P(ConnectMatrix, RefusedConnectionsRetryAPostToo) {
  network.Add("payments", 8443, "127.0.0.1", testing::PortNothingListensOn());
  ExpectEachDialFails(Request::Post("/charges", "{}"));
}

// A name the network does not know fails as a refused dial does: retried,
// a POST too, and counted (the connection's own path, taken when one is
// open, had always ended it unsent; the dispatcher's now does too).
TEST_P(ConnectMatrix, ANameThatLeadsNowhereIsRetriedAsARefusedDialAPostToo) {
  ExpectEachDialFails(Request::Post("/charges", "{}"));  // the network has no "payments"
}

// Never accepted: each attempt waits out its AttemptTimeout (5 s) dialling;
// the second is cut by the call's Timeout at 10 s exactly. Both count.
TEST_P(ConnectMatrix, AConnectNeverAcceptedEndsAtTheAttemptTimeoutThenTheDeadline) {
  auto hole = testing::BlackHole::Start();
  ASSERT_TRUE(hole) << hole.error().message();
  network.Add("payments", 8443, "127.0.0.1", (*hole)->port());
  StartClient();
  Begin(Request::Get("/"));
  WaitThenAdvance(5s);    // the first attempt's timeout
  WaitThenAdvance(50ms);  // the backoff
  // The second attempt is dialling once its own timeout (due at 10.05 s)
  // stands beside the call's deadline; before that, the deadline would
  // find it still on its way to the transport. (Its time, not a count of
  // timers: the first connection, dialling on for nobody, is closed at 10 s
  // by a timer of its own.)
  ASSERT_TRUE(WaitForTimerAt(10050ms)) << "the second attempt was never handed over";
  WaitThenAdvance(4950ms);  // the call's deadline, before the second attempt's timeout
  ExpectEnds({.error = ErrorKind::kDeadline,
              .attempts = 2,
              .server_saw = -1,
              .breaker_failures = 2,
              .took = 10s});
}

TEST_P(ConnectMatrix, AnExpiredCertificateIsNotTrusted) {
  ServeTls(Tls(ca.Issue({.names = {"payments"}, .validity = testing::TestCA::Validity::kExpired})));
  ExpectUntrusted();
}

TEST_P(ConnectMatrix, ACertificateNotYetValidIsNotTrusted) {
  ServeTls(
      Tls(ca.Issue({.names = {"payments"}, .validity = testing::TestCA::Validity::kNotYetValid})));
  ExpectUntrusted();
}

TEST_P(ConnectMatrix, ACertificateForAnotherHostIsNotTrusted) {
  ServeTls(Tls(ca.IssueServer({"ledger", "127.0.0.1"})));
  ExpectUntrusted();
}

// The host in the Common Name alone, no subjectAltName: RFC 9525 §6.3
// leaves the Common Name out of the match.
TEST_P(ConnectMatrix, ACertificateNamingTheHostInItsCommonNameAloneIsNotTrusted) {
  ServeTls(Tls(ca.Issue({.common_name = "payments"})));
  ExpectUntrusted();
}

TEST_P(ConnectMatrix, ACertificateFromAnotherCaIsNotTrusted) {
  testing::TestCA stranger("a CA the client was not given");
  ServeTls(Tls(stranger.IssueServer({"payments"})));
  ExpectUntrusted();
}

TEST_P(ConnectMatrix, ASelfSignedCertificateIsNotTrusted) {
  ServeTls(Tls(testing::TestCA::SelfSigned({"payments"})));
  ExpectUntrusted();
}

// The client's minimum is TLS 1.2 (SPEC §7).
TEST_P(ConnectMatrix, ATls10OnlyServerIsRefusedOnce) {
  testing::ServerTls tls = Tls();
  tls.min_version = tls.max_version = TLS1_VERSION;
  ServeTls(tls);
  ExpectHandshakeRefused();
}

TEST_P(ConnectMatrix, ATls11OnlyServerIsRefusedOnce) {
  testing::ServerTls tls = Tls();
  tls.min_version = tls.max_version = TLS1_1_VERSION;
  ServeTls(tls);
  ExpectHandshakeRefused();
}

OUTBOUND_MATRIX_BOTH_PROTOCOLS(ConnectMatrix);

class ConnectMatrixH2 : public MatrixTest {};

// RFC 9113 §9.2.2: h2 over TLS 1.2 uses none of Appendix A's ciphers; a
// client MAY (and this one must, issue 11 #12) treat one as
// INADEQUATE_SECURITY. The server speaks only h2, only a banned CBC cipher:
// the call fails before any request, once (the server's ciphers will not
// change by the next attempt).
TEST_F(ConnectMatrixH2, Http2OverABannedCipherIsRefusedOnce) {
  testing::ServerTls tls = Tls();
  tls.max_version = TLS1_2_VERSION;
  tls.ciphers = "ECDHE-ECDSA-AES128-SHA";
  Serve([](const ServerRequest&) { return Reply::Ok(); }, {.tls = tls});
  StartClient();
  Begin(Request::Get("/"));
  ExpectEnds(
      {.error = ErrorKind::kTransport, .attempts = 1, .server_saw = 0, .breaker_failures = 1});
}

}  // namespace
}  // namespace outbound::http::matrix
