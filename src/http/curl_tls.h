// SPDX-License-Identifier: Apache-2.0
// TLS for the libcurl transport, held by the client and applied to every
// easy handle: trust exactly the roots the settings give (the system store
// only when none are given), a client certificate for mTLS, TLS 1.2 at
// least with only the cipher suites HTTP/2 allows, and nothing read from
// the environment (no SSLKEYLOGFILE, no SSL_CERT_FILE or SSL_CERT_DIR).
// Internal.
#ifndef OUTBOUND_SRC_HTTP_CURL_TLS_H_
#define OUTBOUND_SRC_HTTP_CURL_TLS_H_

#include <curl/curl.h>

#include <memory>

#include "outbound/error.h"
#include "outbound/http/settings.h"

namespace outbound::http::internal {

class CurlTls {
 public:
  // kInvalidSettings if `tls.root_pem` holds no certificate OpenSSL can read.
  [[nodiscard]] static Result<std::shared_ptr<CurlTls>> Create(const TlsSettings& tls);
  ~CurlTls();
  CurlTls(const CurlTls&) = delete;
  CurlTls& operator=(const CurlTls&) = delete;

  // Sets the handle's TLS options; the handle must not outlive this.
  void Apply(CURL* easy) const;

 private:
  CurlTls() = default;
  // curl's hook into each new connection's SSL_CTX, before its handshake.
  static CURLcode OnSslContext(CURL* easy, void* ssl_ctx, void* self);

  TlsSettings settings_;
  void* roots_ = nullptr;  // X509_STORE*, shared by every connection's context
};

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_CURL_TLS_H_
