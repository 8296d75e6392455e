// SPDX-License-Identifier: Apache-2.0
// outbound/testing/test_ca.h
//
// A certificate authority made in memory for one test, so no key,
// certificate or password is ever committed. It issues leaf certificates
// for DNS names and IP addresses, and the broken ones a reliability test
// needs: expired, not yet valid, for another host, self-signed, and client
// certificates for mTLS.
//
// example: examples/headers/testing.cc#test-ca
//   testing::TestCA ca;
//   testing::Certificate payments = ca.IssueServer({"payments", "127.0.0.1"});
//   server_options.tls = testing::ServerTls{payments};
//   client_settings.tls = http::TlsSettings{.root_pem = ca.pem()};  // trust only this CA
//
// Keys are ECDSA P-256, so making a CA and a leaf takes about a millisecond.
// Validity is measured against the real wall clock, as TLS verification
// measures it. OpenSSL failing to build a certificate (never expected) throws
// std::runtime_error: this is a test helper.
#ifndef OUTBOUND_TESTING_TEST_CA_H_
#define OUTBOUND_TESTING_TEST_CA_H_

#include <memory>
#include <string>
#include <vector>

namespace outbound::testing {

// A certificate and its private key, in PEM.
struct Certificate {
  std::string cert_pem;   // the leaf alone
  std::string key_pem;    // its private key (PKCS#8)
  std::string chain_pem;  // the leaf followed by the issuing CA's certificate
};

class TestCA {
 public:
  // A new CA with its own key, valid from a day ago for ten years.
  explicit TestCA(const std::string& common_name = "outbound test CA");
  ~TestCA();
  TestCA(TestCA&&) noexcept;
  TestCA& operator=(TestCA&&) noexcept;

  // The CA's certificate: what a client trusts.
  const std::string& pem() const;

  enum class Validity { kValid, kExpired, kNotYetValid };
  struct LeafOptions {
    // Subject alternative names: each entry is an IP address if it parses
    // as one (IPv4 or IPv6), a DNS name otherwise.
    std::vector<std::string> names;
    // The subject's Common Name; empty: the first name, or "outbound test
    // leaf". With no names, a leaf named by its Common Name alone, which
    // clients that follow RFC 9525 refuse.
    std::string common_name;
    Validity validity = Validity::kValid;
    // A client certificate (extendedKeyUsage clientAuth) instead of a server one.
    bool client = false;
  };

  // A leaf issued by this CA.
  Certificate Issue(const LeafOptions& options) const;

  // Shorthands for the common leaves.
  Certificate IssueServer(const std::vector<std::string>& names) const;
  Certificate IssueClient(const std::string& name) const;

  // A leaf for `names` signed by its own key, not by any CA.
  static Certificate SelfSigned(const std::vector<std::string>& names);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace outbound::testing

#endif  // OUTBOUND_TESTING_TEST_CA_H_
