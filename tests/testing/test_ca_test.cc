// SPDX-License-Identifier: Apache-2.0
// The TestCA's certificates, checked by OpenSSL's own verifier.
#include "outbound/testing/test_ca.h"

#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <memory>

namespace outbound::testing {
namespace {

X509* ParseCert(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return cert;
}

// OpenSSL's verdict on `leaf` for `host`, trusting only `ca_pem`:
// X509_V_OK or the error code.
int Verify(const std::string& ca_pem, const std::string& leaf_pem, const std::string& host) {
  X509_STORE* store = X509_STORE_new();
  X509* ca = ParseCert(ca_pem);
  X509_STORE_add_cert(store, ca);
  X509* leaf = ParseCert(leaf_pem);
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, leaf, nullptr);
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx);
  if (!host.empty()) {
    if (host.find_first_not_of("0123456789.") == std::string::npos) {
      X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str());
    } else {
      X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0);
    }
  }
  X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER);
  int rc = X509_verify_cert(ctx);
  int error = rc == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx);
  X509_STORE_CTX_free(ctx);
  X509_free(leaf);
  X509_free(ca);
  X509_STORE_free(store);
  return error;
}

TEST(TestCATest, ServerLeafVerifiesForItsNamesAndAddresses) {
  TestCA ca;
  Certificate leaf = ca.IssueServer({"payments", "127.0.0.1"});
  EXPECT_EQ(Verify(ca.pem(), leaf.cert_pem, "payments"), X509_V_OK);
  EXPECT_EQ(Verify(ca.pem(), leaf.cert_pem, "127.0.0.1"), X509_V_OK);
  EXPECT_NE(leaf.key_pem.find("BEGIN PRIVATE KEY"), std::string::npos);
  EXPECT_EQ(leaf.chain_pem, leaf.cert_pem + ca.pem());
}

TEST(TestCATest, WrongHostFails) {
  TestCA ca;
  Certificate leaf = ca.IssueServer({"ledger"});
  EXPECT_EQ(Verify(ca.pem(), leaf.cert_pem, "payments"), X509_V_ERR_HOSTNAME_MISMATCH);
}

// A leaf named by its Common Name alone: no subjectAltName, so only a
// verifier that still falls back to the Common Name (OpenSSL's default,
// used here) takes it for "payments".
TEST(TestCATest, ALeafOfACommonNameAloneHasNoAltNames) {
  TestCA ca;
  Certificate leaf = ca.Issue({.common_name = "payments"});
  EXPECT_EQ(Verify(ca.pem(), leaf.cert_pem, "payments"), X509_V_OK);
  BIO* bio = BIO_new_mem_buf(leaf.cert_pem.data(), static_cast<int>(leaf.cert_pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  ASSERT_NE(cert, nullptr);
  EXPECT_EQ(X509_get_ext_by_NID(cert, NID_subject_alt_name, -1), -1);
  X509_free(cert);
}

TEST(TestCATest, ExpiredAndNotYetValidFail) {
  TestCA ca;
  auto expired = ca.Issue({.names = {"payments"}, .validity = TestCA::Validity::kExpired});
  auto future = ca.Issue({.names = {"payments"}, .validity = TestCA::Validity::kNotYetValid});
  EXPECT_EQ(Verify(ca.pem(), expired.cert_pem, "payments"), X509_V_ERR_CERT_HAS_EXPIRED);
  EXPECT_EQ(Verify(ca.pem(), future.cert_pem, "payments"), X509_V_ERR_CERT_NOT_YET_VALID);
}

TEST(TestCATest, SelfSignedAndOtherCAsLeavesAreUntrusted) {
  TestCA ca;
  TestCA other("another CA");
  EXPECT_NE(Verify(ca.pem(), TestCA::SelfSigned({"payments"}).cert_pem, "payments"), X509_V_OK);
  EXPECT_EQ(Verify(ca.pem(), other.IssueServer({"payments"}).cert_pem, "payments"),
            X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
}

TEST(TestCATest, ClientCertificateIsNotAServerCertificate) {
  TestCA ca;
  Certificate client = ca.IssueClient("checkout");
  EXPECT_EQ(Verify(ca.pem(), client.cert_pem, ""), X509_V_ERR_INVALID_PURPOSE);
}

TEST(TestCATest, EachCAIsNew) { EXPECT_NE(TestCA().pem(), TestCA().pem()); }

}  // namespace
}  // namespace outbound::testing
