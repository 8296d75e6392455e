// SPDX-License-Identifier: Apache-2.0
#include "tls.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>

namespace outbound::http::internal::transport {
namespace {

// TLS 1.2 suites RFC 9113 §9.2.2 leaves to HTTP/2: ephemeral key exchange
// with an AEAD cipher. TLS 1.3's suites all qualify.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

// ALPN, in wire form: h2 first, then http/1.1.
constexpr unsigned char kAlpn[] = {2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1'};

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};

std::unique_ptr<BIO, BioFree> MemBio(const std::string& text) {
  return std::unique_ptr<BIO, BioFree>(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

// Writes to the socket with MSG_NOSIGNAL: OpenSSL's socket BIO writes with
// write(), which raises SIGPIPE on a connection the peer reset, and a
// library must not kill its process for a peer's reset. Reads go through
// OpenSSL's own socket BIO.
int NoSignalWrite(BIO* bio, const char* data, int length) {
  int fd = static_cast<int>(reinterpret_cast<std::intptr_t>(BIO_get_data(bio)));
  BIO_clear_retry_flags(bio);
  ssize_t n = send(fd, data, static_cast<std::size_t>(length), MSG_NOSIGNAL);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    BIO_set_retry_write(bio);
  }
  return static_cast<int>(n);
}

long NoSignalCtrl(BIO*, int command, long, void*) { return command == BIO_CTRL_FLUSH ? 1 : 0; }

int NoSignalCreate(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

const BIO_METHOD* NoSignalWriter() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "outbound-send");
    BIO_meth_set_write(m, NoSignalWrite);
    BIO_meth_set_ctrl(m, NoSignalCtrl);
    BIO_meth_set_create(m, NoSignalCreate);
    return m;
  }();
  return method;
}

// The passphrase callback for keys: there is none to give.
int NoPassphrase(char*, int, int, void*) { return -1; }

bool IsIpLiteral(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

}  // namespace

Result<std::shared_ptr<TlsContext>> TlsContext::Create(const TlsSettings& tls, bool http2_only) {
  std::shared_ptr<TlsContext> made(new TlsContext());
  made->http2_only_ = http2_only;
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) return Fail(ErrorKind::kLocalResource, "OpenSSL could not make a context");
  made->ctx_ = ctx;
  // The versions are the client's, whatever a configuration file made the
  // default.
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_max_proto_version(ctx, 0);
  SSL_CTX_set_cipher_list(ctx, kTls12Ciphers);
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  // A connection keeps its record buffers (about 34 KiB) while open: freed
  // whenever drained, they were allocated again for nearly every record,
  // and an HTTP/1.1 connection drains them on every exchange.
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  // h2 is kAlpn's first entry.
  SSL_CTX_set_alpn_protos(ctx, kAlpn, http2_only ? 3 : sizeof kAlpn);
  SSL_CTX_set_keylog_callback(ctx, nullptr);
  // Sessions kept here, by host (Keep), not in OpenSSL's cache, which keys
  // them by nothing a client can look up.
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_set_app_data(ctx, made.get());
  SSL_CTX_sess_set_new_cb(ctx, &TlsContext::Keep);
  if (tls.root_pem.empty()) {
    // The system's roots, from where OpenSSL was built to find them, and
    // only there: SSL_CTX_set_default_verify_paths would read SSL_CERT_FILE
    // and SSL_CERT_DIR from the environment.
    SSL_CTX_load_verify_file(ctx, X509_get_default_cert_file());
    SSL_CTX_load_verify_dir(ctx, X509_get_default_cert_dir());
    ERR_clear_error();  // a place that does not exist is no error here
  } else {
    X509_STORE* store = X509_STORE_new();
    auto bio = MemBio(tls.root_pem);
    int added = 0;
    while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
      added += X509_STORE_add_cert(store, cert) == 1 ? 1 : 0;
      X509_free(cert);
    }
    // The end of the PEM text reads as "no start line"; anything else is a
    // certificate that did not read, and the ones after it would be lost.
    unsigned long last = ERR_peek_last_error();
    bool at_end = ERR_GET_LIB(last) == ERR_LIB_PEM && ERR_GET_REASON(last) == PEM_R_NO_START_LINE;
    ERR_clear_error();
    // Every certificate given is an anchor, an intermediate CA too: a
    // private PKI may hand its clients only the CA that issues its
    // servers' certificates (curl and Go's crypto/tls take it so).
    X509_STORE_set_flags(store, X509_V_FLAG_PARTIAL_CHAIN);
    SSL_CTX_set_cert_store(ctx, store);  // the context owns it now
    if (added == 0) {
      return Fail(ErrorKind::kInvalidSettings, "tls.root_pem holds no PEM certificate");
    }
    if (!at_end) {
      return Fail(ErrorKind::kInvalidSettings,
                  "tls.root_pem holds a certificate that cannot be read (after " +
                      std::to_string(added) + " that could)");
    }
  }
  if (!tls.client_cert_pem.empty()) {
    auto bio = MemBio(tls.client_cert_pem);
    std::unique_ptr<X509, X509Free> leaf(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    bool ok = leaf && SSL_CTX_use_certificate(ctx, leaf.get()) == 1;
    while (ok) {  // the rest of the chain
      X509* extra = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr);
      if (extra == nullptr) break;
      if (SSL_CTX_add0_chain_cert(ctx, extra) != 1) X509_free(extra);
    }
    auto key_bio = MemBio(tls.client_key_pem);
    // A key that wants a passphrase fails here: without a callback of its
    // own OpenSSL would prompt on the terminal (or stderr) and read stdin.
    std::unique_ptr<EVP_PKEY, PkeyFree> key(
        PEM_read_bio_PrivateKey(key_bio.get(), nullptr, NoPassphrase, nullptr));
    bool pair = ok && key && SSL_CTX_use_PrivateKey(ctx, key.get()) == 1 &&
                SSL_CTX_check_private_key(ctx) == 1;
    ERR_clear_error();
    if (!ok) {
      return Fail(ErrorKind::kInvalidSettings,
                  "tls.client_cert_pem holds no certificate OpenSSL can read");
    }
    if (!key) {
      return Fail(ErrorKind::kInvalidSettings,
                  "tls.client_key_pem holds no private key OpenSSL can read");
    }
    if (!pair) {
      return Fail(ErrorKind::kInvalidSettings,
                  "tls.client_key_pem is not the key of tls.client_cert_pem's certificate");
    }
  }
  return made;
}

TlsContext::~TlsContext() {
  for (const Kept& kept : kept_) SSL_SESSION_free(kept.session);
  SSL_CTX_free(ctx_);
}

namespace {

// Where a session keeps its host, for Keep.
int HostIndex() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

}  // namespace

int TlsContext::Keep(SSL* ssl, SSL_SESSION* session) {
  auto* self = static_cast<TlsContext*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
  const auto* host = static_cast<const std::string*>(SSL_get_ex_data(ssl, HostIndex()));
  if (self == nullptr || host == nullptr || SSL_SESSION_is_resumable(session) != 1) return 0;
  std::lock_guard lock(self->mu_);
  self->kept_.push_front({*host, session});
  if (self->kept_.size() > kMaxKept) {
    SSL_SESSION_free(self->kept_.back().session);
    self->kept_.pop_back();
  }
  return 1;  // the reference is ours now
}

void TlsContext::Forget(const std::string& host) {
  std::lock_guard lock(mu_);
  std::erase_if(kept_, [&](const Kept& kept) {
    if (kept.host != host) return false;
    SSL_SESSION_free(kept.session);
    return true;
  });
}

SSL* TlsContext::NewSession(const std::string& host, int fd, bool& resuming) {
  resuming = false;
  SSL* ssl = SSL_new(ctx_);
  if (ssl == nullptr) return nullptr;
  BIO* reader = BIO_new_socket(fd, BIO_NOCLOSE);
  BIO* writer = BIO_new(NoSignalWriter());
  if (reader == nullptr || writer == nullptr) {
    BIO_free(reader);
    BIO_free(writer);
    SSL_free(ssl);
    return nullptr;
  }
  BIO_set_data(writer, reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)));
  SSL_set_bio(ssl, reader, writer);  // the session owns both
  bool ok = true;
  if (IsIpLiteral(host)) {
    ok = ok && X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str()) == 1;
  } else {
    ok = ok && SSL_set_tlsext_host_name(ssl, host.c_str()) == 1 &&
         SSL_set1_host(ssl, host.c_str()) == 1;
    // The name is checked against the subjectAltName alone: a certificate
    // without one is not matched on its Common Name (RFC 9525 §6.3).
    X509_VERIFY_PARAM_set_hostflags(SSL_get0_param(ssl), X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS |
                                                             X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
  }
  ok = ok && SSL_set_ex_data(ssl, HostIndex(), const_cast<std::string*>(&host)) == 1;
  if (!ok) {
    SSL_free(ssl);
    ERR_clear_error();
    return nullptr;
  }
  {
    // A session a server of `host` gave, offered for resumption.
    std::lock_guard lock(mu_);
    auto kept =
        std::find_if(kept_.begin(), kept_.end(), [&](const Kept& k) { return k.host == host; });
    if (kept != kept_.end()) {
      resuming = SSL_set_session(ssl, kept->session) == 1;  // with a reference of its own
      // A TLS 1.3 session goes once (RFC 8446 §C.4): used again, it would
      // let an observer link the two connections.
      if (SSL_SESSION_get_protocol_version(kept->session) == TLS1_3_VERSION) {
        SSL_SESSION_free(kept->session);
        kept_.erase(kept);
      }
    }
  }
  SSL_set_connect_state(ssl);
  return ssl;
}

HandshakeFailure DescribeHandshakeFailure(SSL* ssl, int ssl_error) {
  HandshakeFailure failure;
  long verify = SSL_get_verify_result(ssl);
  unsigned long err = ERR_peek_error();
  if (verify != X509_V_OK && ERR_GET_REASON(err) == SSL_R_CERTIFICATE_VERIFY_FAILED) {
    failure.kind = ErrorKind::kTlsUntrusted;
    failure.cannot_improve = true;  // the next connection meets the same certificate
    failure.message = std::string("TLS: the server's certificate is not trusted: ") +
                      X509_verify_cert_error_string(verify);
    ERR_clear_error();
    return failure;
  }
  if (std::string refused = DescribeCertificateRefusal(ssl, err); !refused.empty()) {
    failure.cannot_improve = true;
    failure.message = std::move(refused);
  } else if (ERR_GET_REASON(err) == SSL_R_TLSV1_ALERT_NO_APPLICATION_PROTOCOL) {
    failure.no_application_protocol = failure.cannot_improve = true;
    failure.message =
        "TLS handshake failed: the server speaks none of the protocols the client offered (ALPN)";
  } else if (err != 0) {
    const char* reason = ERR_reason_error_string(err);
    std::string text = reason != nullptr ? reason : "unknown error";
    // A handshake the server refuses for its protocol version or cipher, or
    // a server that does not speak TLS at all, is refused again.
    failure.cannot_improve = text.find("version") != std::string::npos ||
                             text.find("cipher") != std::string::npos ||
                             text.find("handshake failure") != std::string::npos ||
                             text.find("no protocols available") != std::string::npos;
    failure.message = "TLS handshake failed: " + text;
  } else if (ssl_error == SSL_ERROR_SYSCALL && errno != 0) {
    failure.message = std::string("TLS handshake failed: ") + std::strerror(errno);
  } else {
    failure.message = "TLS handshake failed: the server closed the connection";
  }
  ERR_clear_error();
  return failure;
}

std::string DescribeCertificateRefusal(SSL* ssl, unsigned long err) {
  switch (ERR_GET_REASON(err)) {
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
    case SSL_R_TLSV1_ALERT_ACCESS_DENIED:
      break;
    default:
      return "";
  }
  const char* reason = ERR_reason_error_string(err);
  std::string message = std::string("TLS: the server refused the client's certificate (") +
                        (reason != nullptr ? reason : "an alert") + ")";
  if (SSL_get_certificate(ssl) == nullptr) {
    message += ": none was given (TlsSettings::client_cert_pem and client_key_pem)";
  }
  return message;
}

}  // namespace outbound::http::internal::transport
