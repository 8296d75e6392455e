// SPDX-License-Identifier: Apache-2.0
// The client reads nothing ambient. This binary sets every variable OpenSSL
// and the usual HTTP clients (libcurl's set) are known to read against it, and runs in a mount
// namespace of its own where the system's CA store is a CA made by the test — so "trust only the
// given roots" is shown against a real system store, not assumed.
//
// Its own main: the variables are set and the namespace made before any
// thread starts and before OpenSSL initialises, so every thread
// of the process (the client's loop included) sees them.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>

#include "client_test_support.h"
#include "outbound/http/client.h"

namespace outbound::http {
namespace {

namespace fs = std::filesystem;
using testing::Reply;
using testing::ServerRequest;

// Where the namespace's system CA store lives (a directory of the test's),
// and a listening "proxy" every proxy variable names.
fs::path g_system_store;
int g_proxy = -1;

void WriteFile(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

std::string Env(const char* name) {
  const char* value = std::getenv(name);  // the test's own, not the library's
  return value != nullptr ? value : "";
}

// A CA the "system" trusts: the bundle libcurl was built to read, and the
// hashed directory OpenSSL looks in.
void TrustSystemWide(const testing::TestCA& ca) {
  WriteFile(g_system_store / "ca-certificates.crt", ca.pem());
  BIO* bio = BIO_new_mem_buf(ca.pem().data(), static_cast<int>(ca.pem().size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  char hashed[32];
  std::snprintf(hashed, sizeof hashed, "%08lx.0", X509_subject_name_hash(cert));
  X509_free(cert);
  BIO_free(bio);
  WriteFile(g_system_store / hashed, ca.pem());
  // The same CA where OpenSSL's variables point.
  WriteFile(Env("SSL_CERT_FILE"), ca.pem());
  WriteFile(fs::path(Env("SSL_CERT_DIR")) / hashed, ca.pem());
}

// The system trusts another CA only; OpenSSL's variables still name the
// server's.
void DistrustSystemWide() {
  for (const auto& entry : fs::directory_iterator(g_system_store)) fs::remove(entry.path());
  testing::TestCA other;
  WriteFile(g_system_store / "ca-certificates.crt", other.pem());
}

class AmbientTest : public ClientTestBase, public ::testing::Test {};

TEST_F(AmbientTest, GivenRootsAreTheOnlyTrustEvenWhenTheSystemTrustsTheServer) {
  testing::TestCA system_ca;  // the server's, trusted by the "system" only
  TrustSystemWide(system_ca);
  auto started =
      testing::FakeServer::Start({.tls = testing::ServerTls(system_ca.IssueServer({"payments"})),
                                  .handler = [](const ServerRequest&) { return Reply::Ok(); }});
  ASSERT_TRUE(started);
  network.Add("payments", 8443, "127.0.0.1", (*started)->port());

  // Roots given (the test's other CA): the system's are not trusted.
  auto pinned = MakeClient();  // root_pem = ca.pem(), not system_ca's
  auto refused = pinned->Send(Request::Get("/"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind(), ErrorKind::kTlsUntrusted) << refused.error().message();
  EXPECT_EQ((*started)->request_count(), 0u);

  // No roots given: the system store, and only then.
  Settings system = PaymentsSettings();
  system.tls = TlsSettings{};
  auto trusting = MakeClient(system);
  auto answered = trusting->Send(Request::Get("/"));
  ASSERT_TRUE(answered) << answered.error().message();
  EXPECT_EQ(answered->status, 200);

  // The system store is where the library looks, not SSL_CERT_FILE or
  // SSL_CERT_DIR: with the CA only there, a new client trusts nothing.
  DistrustSystemWide();
  auto system_only = MakeClient(system);
  auto call = system_only->SendAsync(Request::Get("/"));
  // A safety net, not a tolerance: an untrusted certificate is not retried.
  ASSERT_EQ(call.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << Attempts().size()
      << " attempts, the last: " << (Attempts().empty() ? "" : Attempts().back().error_message);
  auto untrusted = call.get();
  ASSERT_FALSE(untrusted);
  EXPECT_EQ(untrusted.error().kind(), ErrorKind::kTlsUntrusted) << untrusted.error().message();
}

TEST_F(AmbientTest, NoVariableLibcurlOrOpenSslReadsHasAnEffect) {
  auto started =
      testing::FakeServer::Start({.tls = testing::ServerTls(ca.IssueServer({"payments"})),
                                  .handler = [](const ServerRequest&) { return Reply::Ok(); }});
  ASSERT_TRUE(started);
  server = std::move(*started);
  network.Add("payments", 8443, "127.0.0.1", server->port());
  auto client = MakeClient();
  auto answered = client->Send(Request::Get("/"));
  ASSERT_TRUE(answered) << answered.error().message();
  // SSLKEYLOGFILE: no session secret written (libcurl opens the file as
  // it initialises; nothing may reach it).
  fs::path keylog = Env("SSLKEYLOGFILE");
  EXPECT_TRUE(!fs::exists(keylog) || fs::file_size(keylog) == 0);
  // The proxies: nothing dialled them.
  sockaddr_storage peer{};
  socklen_t length = sizeof peer;
  EXPECT_LT(accept(g_proxy, reinterpret_cast<sockaddr*>(&peer), &length), 0);
  // $HOME/.netrc and $CURL_HOME/.curlrc: no credentials sent.
  for (const auto& request : server->requests()) {
    EXPECT_EQ(request.header("authorization"), "");
    EXPECT_EQ(request.header("x-from-curlrc"), "");
  }
}

}  // namespace
}  // namespace outbound::http

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  using outbound::http::WriteFile;
  fs::path root = fs::temp_directory_path() / ("outbound-ambient-" + std::to_string(getpid()));
  outbound::http::g_system_store = root / "certs";
  fs::create_directories(outbound::http::g_system_store);

  // A mount namespace of this process's own, where /etc/ssl/certs is a
  // directory the test fills.
  if (unshare(CLONE_NEWNS) != 0 ||
      mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
      mount(outbound::http::g_system_store.c_str(), "/etc/ssl/certs", nullptr, MS_BIND, nullptr) !=
          0) {
    std::perror("ambient_test: a mount namespace over /etc/ssl/certs (needs CAP_SYS_ADMIN)");
    return 1;
  }

  // Every variable libcurl 7.88 and OpenSSL 3 read, set against the client.
  int& proxy = outbound::http::g_proxy;
  proxy = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);  // accept never waits
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (bind(proxy, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      listen(proxy, 8) != 0 ||
      getsockname(proxy, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    std::perror("ambient_test: the proxy's socket");
    return 1;
  }
  std::string proxy_url = "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  for (const char* name :
       {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"}) {
    setenv(name, proxy_url.c_str(), 1);
  }
  setenv("no_proxy", "", 1);
  setenv("SSLKEYLOGFILE", (root / "keys.log").c_str(), 1);
  setenv("SSL_CERT_FILE", (root / "cert.pem").c_str(), 1);
  fs::create_directories(root / "env-certs");
  setenv("SSL_CERT_DIR", (root / "env-certs").c_str(), 1);
  setenv("CURL_CA_BUNDLE", (root / "cert.pem").c_str(), 1);
  setenv("CURL_SSL_BACKEND", "gnutls", 1);
  setenv("HOME", root.c_str(), 1);
  setenv("CURL_HOME", root.c_str(), 1);
  WriteFile(root / ".netrc", "machine payments login user password secret\n");
  WriteFile(root / ".curlrc", "header = \"X-From-Curlrc: 1\"\nproxy = " + proxy_url + "\n");
  // OPENSSL_CONF is left alone: OpenSSL's configuration is the process's
  // (it shapes the test's own servers too), decided by the program.

  ::testing::InitGoogleTest(&argc, argv);
  int result = RUN_ALL_TESTS();
  close(proxy);
  fs::remove_all(root);
  return result;
}
