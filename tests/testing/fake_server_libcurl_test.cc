// SPDX-License-Identifier: Apache-2.0
// The FakeServer through libcurl in-process, on HTTP/1.1 and HTTP/2, with
// the dependency's name routed by a NetworkMap.
#include <curl/curl.h>
#include <gtest/gtest.h>

#include "outbound/testing/fake_server.h"
#include "outbound/testing/network_map.h"
#include "outbound/testing/test_ca.h"

namespace outbound::testing {
namespace {

struct Response {
  CURLcode code;
  long status = 0;
  long version = 0;
  std::string body;
};

size_t Append(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// One GET with a shared handle (so connections are reused between calls).
Response Get(CURL* curl, const NetworkMap& network, const std::string& ca_pem,
             const std::string& url, long http_version) {
  Route route = network.Resolve("payments", 8443);
  std::string connect_to = "payments:8443:" + route.endpoints.at(0).address + ":" +
                           std::to_string(route.endpoints.at(0).port);
  curl_slist* connect = curl_slist_append(nullptr, connect_to.c_str());
  curl_blob ca{const_cast<char*>(ca_pem.data()), ca_pem.size(), CURL_BLOB_COPY};
  Response response;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CONNECT_TO, connect);
  curl_easy_setopt(curl, CURLOPT_CAINFO_BLOB, &ca);
  curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, http_version);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response.body);
  response.code = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  curl_easy_getinfo(curl, CURLINFO_HTTP_VERSION, &response.version);
  curl_slist_free_all(connect);
  return response;
}

class FakeServerLibcurlTest : public ::testing::TestWithParam<long> {
 protected:
  void SetUp() override { curl = curl_easy_init(); }
  void TearDown() override { curl_easy_cleanup(curl); }

  std::unique_ptr<FakeServer> Serve(FakeServer::Options options) {
    options.tls = ServerTls{ca.IssueServer({"payments"})};
    auto server = FakeServer::Start(std::move(options));
    EXPECT_TRUE(server);
    network.Add("payments", 8443, "127.0.0.1", (*server)->port());
    return std::move(*server);
  }
  Response Call(const std::string& path) {
    return Get(curl, network, ca.pem(), "https://payments:8443" + path, GetParam());
  }

  CURL* curl = nullptr;
  TestCA ca;
  NetworkMap network;
};

TEST_P(FakeServerLibcurlTest, AnswersAndReusesTheConnection) {
  auto server = Serve({.handler = [](const ServerRequest& r) {
    return Reply::Status(503, "busy " + r.target).Header("Retry-After", "2");
  }});
  for (int i = 0; i < 3; ++i) {
    Response response = Call("/charges/" + std::to_string(i));
    ASSERT_EQ(response.code, CURLE_OK) << curl_easy_strerror(response.code);
    EXPECT_EQ(response.status, 503);
    EXPECT_EQ(response.body, "busy /charges/" + std::to_string(i));
    EXPECT_EQ(response.version,
              GetParam() == CURL_HTTP_VERSION_1_1 ? CURL_HTTP_VERSION_1_1 : CURL_HTTP_VERSION_2_0);
  }
  EXPECT_EQ(server->connections_opened(), 1);
  auto requests = server->requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[2].connection_id, 1);
}

TEST_P(FakeServerLibcurlTest, MidBodyResetIsAnError) {
  auto server = Serve({.handler = [](const ServerRequest&) {
    return Reply::ResetAfter(10, std::string(50000, 'x'));
  }});
  Response response = Call("/");
  EXPECT_NE(response.code, CURLE_OK);
  EXPECT_EQ(response.status, 200);  // the headers had arrived
}

TEST_P(FakeServerLibcurlTest, ClientLeavingIdleConnectionIsSeenClosed) {
  auto server = Serve({});
  ASSERT_EQ(Call("/").code, CURLE_OK);
  EXPECT_EQ(server->connections_open(), 1);
  curl_easy_cleanup(curl);
  curl = curl_easy_init();
  EXPECT_TRUE(server->WaitFor([](const FakeServer& s) { return s.connections_open() == 0; }));
}

TEST_P(FakeServerLibcurlTest, SendsOversizedHeadersAsScripted) {
  // 80 KiB in one header: past what Beast and nghttp2 build by default,
  // within what libcurl accepts (100 KiB).
  auto server = Serve({.handler = [](const ServerRequest&) {
    return Reply::Ok("after the bomb").Header("X-Bomb", std::string(80 * 1024, 'b'));
  }});
  Response response = Call("/");
  ASSERT_EQ(response.code, CURLE_OK) << curl_easy_strerror(response.code);
  EXPECT_EQ(response.body, "after the bomb");
}

INSTANTIATE_TEST_SUITE_P(Protocols, FakeServerLibcurlTest,
                         ::testing::Values(CURL_HTTP_VERSION_1_1, CURL_HTTP_VERSION_2TLS),
                         [](const auto& param_info) {
                           return param_info.param == CURL_HTTP_VERSION_1_1 ? "http1" : "http2";
                         });

TEST(FakeServerGoawayTest, GracefulGoawayMovesTheClientToANewConnection) {
  TestCA ca;
  NetworkMap network;
  auto server = FakeServer::Start(
      {.tls = ServerTls{ca.IssueServer({"payments"})}, .goaway_after_streams = 2});
  ASSERT_TRUE(server);
  network.Add("payments", 8443, "127.0.0.1", (*server)->port());
  CURL* curl = curl_easy_init();
  for (int i = 0; i < 3; ++i) {
    Response response =
        Get(curl, network, ca.pem(), "https://payments:8443/", CURL_HTTP_VERSION_2TLS);
    EXPECT_EQ(response.code, CURLE_OK) << curl_easy_strerror(response.code);
    EXPECT_EQ(response.status, 200);
  }
  curl_easy_cleanup(curl);
  EXPECT_EQ((*server)->connections_opened(), 2);
  EXPECT_EQ((*server)->request_count(), 3u);
}

TEST(FakeServerGoawayTest, LoweredLastStreamIdLeavesTheStreamUnprocessed) {
  TestCA ca;
  NetworkMap network;
  auto server = FakeServer::Start({.tls = ServerTls{ca.IssueServer({"payments"})},
                                   .goaway_after_streams = 1,
                                   .goaway_unprocessed = 1});
  ASSERT_TRUE(server);
  network.Add("payments", 8443, "127.0.0.1", (*server)->port());
  CURL* curl = curl_easy_init();
  Response response =
      Get(curl, network, ca.pem(), "https://payments:8443/", CURL_HTTP_VERSION_2TLS);
  curl_easy_cleanup(curl);
  // The only stream was above the GOAWAY's last-stream-id: never answered.
  EXPECT_NE(response.code, CURLE_OK);
  EXPECT_EQ((*server)->request_count(), 1u);
  EXPECT_EQ((*server)->cancelled_requests(), 0);
}

}  // namespace
}  // namespace outbound::testing
