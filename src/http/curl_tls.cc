// SPDX-License-Identifier: Apache-2.0
#include "curl_tls.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace outbound::http::internal {
namespace {

// TLS 1.2 suites RFC 9113 §9.2.2 leaves to HTTP/2: ephemeral key exchange
// with an AEAD cipher. Offered for HTTP/1.1 too, so a server cannot pick a
// weaker suite and then an h2 connection. TLS 1.3's suites all qualify.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

X509_STORE* StoreOf(void* p) { return static_cast<X509_STORE*>(p); }

}  // namespace

Result<std::shared_ptr<CurlTls>> CurlTls::Create(const TlsSettings& tls) {
  std::shared_ptr<CurlTls> made(new CurlTls());
  made->settings_ = tls;
  if (tls.root_pem.empty()) return made;
  X509_STORE* store = X509_STORE_new();
  made->roots_ = store;
  BIO* bio = BIO_new_mem_buf(tls.root_pem.data(), static_cast<int>(tls.root_pem.size()));
  int added = 0;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    added += X509_STORE_add_cert(store, cert) == 1 ? 1 : 0;
    X509_free(cert);
  }
  BIO_free(bio);
  ERR_clear_error();  // the end of the PEM text reads as an error
  if (added == 0) {
    return Fail(ErrorKind::kInvalidSettings, "tls.root_pem holds no PEM certificate");
  }
  return made;
}

CurlTls::~CurlTls() { X509_STORE_free(StoreOf(roots_)); }

void CurlTls::Apply(CURL* easy) const {
  curl_easy_setopt(easy, CURLOPT_SSLVERSION, CURL_SSLVERSION_TLSv1_2);
  curl_easy_setopt(easy, CURLOPT_SSL_CIPHER_LIST, kTls12Ciphers);
  curl_easy_setopt(easy, CURLOPT_SSL_CTX_FUNCTION, OnSslContext);
  curl_easy_setopt(easy, CURLOPT_SSL_CTX_DATA, this);
  if (roots_ != nullptr) {
    // No CA file or directory read at all: the store is set per connection.
    curl_easy_setopt(easy, CURLOPT_CAINFO, nullptr);
    curl_easy_setopt(easy, CURLOPT_CAPATH, nullptr);
  }
  if (!settings_.client_cert_pem.empty()) {
    curl_blob cert{const_cast<char*>(settings_.client_cert_pem.data()),
                   settings_.client_cert_pem.size(), CURL_BLOB_COPY};
    curl_blob key{const_cast<char*>(settings_.client_key_pem.data()),
                  settings_.client_key_pem.size(), CURL_BLOB_COPY};
    curl_easy_setopt(easy, CURLOPT_SSLCERT_BLOB, &cert);
    curl_easy_setopt(easy, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(easy, CURLOPT_SSLKEY_BLOB, &key);
    curl_easy_setopt(easy, CURLOPT_SSLKEYTYPE, "PEM");
  }
}

CURLcode CurlTls::OnSslContext(CURL*, void* ssl_ctx, void* self) {
  auto* ctx = static_cast<SSL_CTX*>(ssl_ctx);
  const auto& tls = *static_cast<const CurlTls*>(self);
  // libcurl sets a key-log callback when SSLKEYLOGFILE is in the
  // environment; a library must not write session secrets anywhere.
  SSL_CTX_set_keylog_callback(ctx, nullptr);
  // The versions are the client's: TLS 1.2 up to the newest, whatever a
  // configuration file made the default.
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_max_proto_version(ctx, 0);
  // Whatever libcurl loaded (its compiled-in CA path, OpenSSL's defaults),
  // the given roots replace it: only they are trusted.
  if (tls.roots_ != nullptr) SSL_CTX_set1_cert_store(ctx, StoreOf(tls.roots_));
  return CURLE_OK;
}

}  // namespace outbound::http::internal
