// SPDX-License-Identifier: Apache-2.0
// The native transport's TLS: one OpenSSL context per client, made from
// TlsSettings, and a session per connection. Every TLS rule of the client
// lives here:
//  - trust: exactly the roots given (the system store only when none are
//    given); no CA file, directory or environment variable read otherwise;
//  - identity: the certificate must name the origin's host (SSL_set1_host,
//    or the IP address for an IP literal); SNI carries the host name;
//  - versions: TLS 1.2 and newer, whatever a configuration file says;
//  - ciphers: for TLS 1.2, only ECDHE with an AEAD (RFC 9113 §9.2.2), for
//    HTTP/1.1 too, so a server cannot pick a weaker suite;
//  - ALPN: h2, then http/1.1;
//  - mTLS: the client certificate and key, when given;
//  - resumption: the sessions servers give are kept, a few, for the next
//    connection to the same host (a full handshake costs the client about
//    six times the CPU of a resumed one); a TLS 1.3 session once only
//    (RFC 8446 §C.4); no early data;
//  - no key log, ever.
// Internal.
#ifndef OUTBOUND_SRC_HTTP_TRANSPORT_TLS_H_
#define OUTBOUND_SRC_HTTP_TRANSPORT_TLS_H_

#include <deque>
#include <memory>
#include <string>

#include "outbound/error.h"
#include "outbound/http/settings.h"
#include "outbound/internal/mutex.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;
typedef struct ssl_session_st SSL_SESSION;

namespace outbound::http::internal::transport {

class TlsContext {
 public:
  // kInvalidSettings if the roots or the client certificate cannot be read.
  // `http2_only`: ALPN offers h2 alone (h2 and http/1.1 otherwise).
  [[nodiscard]] static Result<std::shared_ptr<TlsContext>> Create(const TlsSettings& tls,
                                                                  bool http2_only = false);
  // Whether a connection must speak HTTP/2: one whose handshake chose
  // anything else fails.
  bool http2_only() const { return http2_only_; }
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // A client session for `host` (a name, or an IP literal without
  // brackets) on the socket `fd`, ready for its handshake, offering to
  // resume a session a server of `host` gave (`resuming` says whether);
  // null if OpenSSL could not make one. `host` outlives it; the caller
  // frees it (SSL_free).
  SSL* NewSession(const std::string& host, int fd, bool& resuming);
  // A handshake that offered a session of `host` failed: the server may
  // refuse the session, not the connection (an OpenSSL server that asks
  // for client certificates and has no session id context does), and
  // would refuse each later one that offered it, so `host`'s sessions go.
  void Forget(const std::string& host);

 private:
  TlsContext() = default;
  // OpenSSL's new-session callback: a server of the session's host gave it.
  static int Keep(SSL* ssl, SSL_SESSION* session);

  SSL_CTX* ctx_ = nullptr;
  bool http2_only_ = false;
  struct Kept {
    std::string host;
    SSL_SESSION* session;  // owned
  };
  static constexpr std::size_t kMaxKept = 8;
  outbound::internal::Mutex mu_;
  std::deque<Kept> kept_;  // guarded by mu_; newest first
};

// Why a handshake failed, read from OpenSSL's error queue and the session
// (which it clears).
struct HandshakeFailure {
  ErrorKind kind = ErrorKind::kTransport;  // kTlsUntrusted for a certificate refused
  bool cannot_improve = false;             // the server offers the same next time
  // The server speaks none of the protocols ALPN offered (RFC 7301 §3.2's
  // no_application_protocol alert).
  bool no_application_protocol = false;
  std::string message;
};
HandshakeFailure DescribeHandshakeFailure(SSL* ssl, int ssl_error);

// The server refused the client's certificate, or the lack of one: the
// alert that OpenSSL error `err` carries says so (certificate required,
// bad, expired, revoked, unknown CA, access denied). Every connection
// meets the same refusal, so nothing sent again can help. Over TLS 1.3
// the alert comes after the client's side of the handshake is done, with
// the first read. Returns the message naming it, or "" for another error.
std::string DescribeCertificateRefusal(SSL* ssl, unsigned long err);

}  // namespace outbound::http::internal::transport

#endif  // OUTBOUND_SRC_HTTP_TRANSPORT_TLS_H_
