// SPDX-License-Identifier: Apache-2.0
#include "outbound/testing/test_ca.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <stdexcept>

namespace outbound::testing {
namespace {

// RAII for the OpenSSL objects used here.
struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
struct BioFree {
  void operator()(BIO* p) const { BIO_free(p); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using Cert = std::unique_ptr<X509, X509Free>;
using Bio = std::unique_ptr<BIO, BioFree>;

void Check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("TestCA: OpenSSL failed to ") + what);
}

Pkey NewKey() {
  Pkey key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  Check(key != nullptr, "generate a P-256 key");
  return key;
}

std::string ToPem(X509* cert) {
  Bio bio(BIO_new(BIO_s_mem()));
  Check(PEM_write_bio_X509(bio.get(), cert) == 1, "write a certificate");
  char* data = nullptr;
  long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(size));
}

std::string ToPem(EVP_PKEY* key) {
  Bio bio(BIO_new(BIO_s_mem()));
  Check(PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) == 1,
        "write a key");
  char* data = nullptr;
  long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(size));
}

void AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  Check(ext != nullptr, "build an extension");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

bool IsIpAddress(const std::string& name) {
  unsigned char buf[16];
  return inet_pton(AF_INET, name.c_str(), buf) == 1 || inet_pton(AF_INET6, name.c_str(), buf) == 1;
}

std::string SubjectAltNames(const std::vector<std::string>& names) {
  std::string san;
  for (const std::string& name : names) {
    if (!san.empty()) san += ",";
    san += (IsIpAddress(name) ? "IP:" : "DNS:") + name;
  }
  return san;
}

constexpr long kDay = 24 * 60 * 60;

// An unsigned certificate for `subject_key`, named as issued by `issuer`
// (or by itself when issuer is null), valid from `not_before` to
// `not_after` seconds from now. Sign() signs it.
Cert Build(const std::string& common_name, EVP_PKEY* subject_key, X509* issuer, long not_before,
           long not_after) {
  Cert cert(X509_new());
  Check(cert != nullptr, "allocate a certificate");
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  Check(RAND_bytes(serial, sizeof serial) == 1, "draw a serial");
  serial[0] &= 0x7f;  // positive
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), not_before);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), not_after);
  X509_set_pubkey(cert.get(), subject_key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("outbound tests"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : name);
  return cert;
}

void Sign(X509* cert, EVP_PKEY* key) {
  Check(X509_sign(cert, key, EVP_sha256()) > 0, "sign a certificate");
}

Certificate Leaf(const TestCA::LeafOptions& options, X509* ca, EVP_PKEY* ca_key) {
  Pkey key = NewKey();
  long from = -kDay, to = 30 * kDay;
  if (options.validity == TestCA::Validity::kExpired) from = -30 * kDay, to = -kDay;
  if (options.validity == TestCA::Validity::kNotYetValid) from = kDay, to = 30 * kDay;
  std::string cn = !options.common_name.empty() ? options.common_name
                   : options.names.empty()      ? "outbound test leaf"
                                                : options.names.front();
  Cert cert = Build(cn, key.get(), ca, from, to);
  X509* issuer = ca ? ca : cert.get();
  AddExtension(cert.get(), issuer, NID_basic_constraints, "critical,CA:FALSE");
  AddExtension(cert.get(), issuer, NID_key_usage, "critical,digitalSignature");
  AddExtension(cert.get(), issuer, NID_ext_key_usage, options.client ? "clientAuth" : "serverAuth");
  AddExtension(cert.get(), issuer, NID_subject_key_identifier, "hash");
  if (ca) AddExtension(cert.get(), issuer, NID_authority_key_identifier, "keyid:always");
  if (!options.names.empty()) {
    AddExtension(cert.get(), issuer, NID_subject_alt_name, SubjectAltNames(options.names));
  }
  Sign(cert.get(), ca_key ? ca_key : key.get());
  Certificate out;
  out.cert_pem = ToPem(cert.get());
  out.key_pem = ToPem(key.get());
  out.chain_pem = out.cert_pem + (ca ? ToPem(ca) : "");
  return out;
}

}  // namespace

struct TestCA::Impl {
  Pkey key;
  Cert cert;
  std::string pem;
};

TestCA::TestCA(const std::string& common_name) : impl_(std::make_unique<Impl>()) {
  impl_->key = NewKey();
  impl_->cert = Build(common_name, impl_->key.get(), nullptr, -kDay, 3650 * kDay);
  X509* cert = impl_->cert.get();
  AddExtension(cert, cert, NID_basic_constraints, "critical,CA:TRUE");
  AddExtension(cert, cert, NID_key_usage, "critical,keyCertSign,cRLSign");
  AddExtension(cert, cert, NID_subject_key_identifier, "hash");
  Sign(cert, impl_->key.get());
  impl_->pem = ToPem(cert);
}

TestCA::~TestCA() = default;
TestCA::TestCA(TestCA&&) noexcept = default;
TestCA& TestCA::operator=(TestCA&&) noexcept = default;

const std::string& TestCA::pem() const { return impl_->pem; }

Certificate TestCA::Issue(const LeafOptions& options) const {
  return Leaf(options, impl_->cert.get(), impl_->key.get());
}

Certificate TestCA::IssueServer(const std::vector<std::string>& names) const {
  return Issue(LeafOptions{.names = names});
}

Certificate TestCA::IssueClient(const std::string& name) const {
  return Issue(LeafOptions{.names = {name}, .client = true});
}

Certificate TestCA::SelfSigned(const std::vector<std::string>& names) {
  return Leaf(LeafOptions{.names = names}, nullptr, nullptr);
}

}  // namespace outbound::testing
