// SPDX-License-Identifier: Apache-2.0
// The checks a request passes before anything is dialled, against a fake
// dependency over TLS: headers the client owns cannot be set by hand, header
// values hold no control characters, and the URL names the client's origin
// however it is written.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "client_test_support.h"
#include "outbound/http/client.h"

namespace outbound::http {
namespace {

using testing::Reply;
using testing::ServerRequest;

class RequestCheckTest : public ClientTestBase, public ::testing::TestWithParam<Protocol> {};

TEST_P(RequestCheckTest, HeadersTheClientWritesItselfAreRefusedBeforeAnythingIsDialled) {
  Serve([](const ServerRequest&) { return Reply::Ok(); }, GetParam());
  auto client = MakeClient();
  const std::vector<std::string> names = {
      "Host",
      "host",
      "HOST",
      "Content-Length",
      "content-length",
      "Transfer-Encoding",
      "Connection",
      "Upgrade",
      "TE",
      "te",
      "Keep-Alive",
      "Proxy-Authorization",
      "proxy-connection",
      "Proxy-Anything",
      "HTTP2-Settings",
      ":authority",
      ":path",
      ":method",
      ":scheme",
      ":status",
      ":protocol",
  };
  for (const std::string& name : names) {
    auto response = client->Send(Request::Get("/").Header(name, "ledger:8443"));
    ASSERT_FALSE(response) << name;
    EXPECT_EQ(response.error().kind(), ErrorKind::kInvalidRequest) << name;
    EXPECT_NE(response.error().message().find("\"" + name + "\""), std::string::npos)
        << response.error().message();
    EXPECT_EQ(response.error().attempts(), 0);
  }
  EXPECT_EQ(server->connections_opened(), 0);
}

TEST_P(RequestCheckTest, HeadersThatOnlyLookLikeTheClientsAreSent) {
  Serve([](const ServerRequest&) { return Reply::Ok(); }, GetParam());
  auto client = MakeClient();
  auto response = client->Send(Request::Get("/")
                                   .Header("X-Forwarded-Host", "ledger")
                                   .Header("Hosts", "a")
                                   .Header("X-Proxy-Id", "b")
                                   .Header("Proxy", "c"));  // "Proxy-" is the prefix refused
  ASSERT_TRUE(response) << response.error().message();
  auto requests = server->requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].header("x-forwarded-host"), "ledger");
  EXPECT_EQ(requests[0].header("hosts"), "a");
  EXPECT_EQ(requests[0].header("x-proxy-id"), "b");
}

TEST_P(RequestCheckTest, ControlCharactersInAValueAreRefusedBeforeAnythingIsDialled) {
  Serve([](const ServerRequest&) { return Reply::Ok(); }, GetParam());
  auto client = MakeClient();
  std::vector<char> controls;
  for (int c = 0x00; c < 0x20; ++c) {
    if (c != '\t') controls.push_back(static_cast<char>(c));
  }
  controls.push_back(0x7f);
  for (char c : controls) {
    std::string value = std::string("a") + c + "b";
    auto response = client->Send(Request::Get("/").Header("X-Note", value));
    ASSERT_FALSE(response) << static_cast<int>(c);
    EXPECT_EQ(response.error().kind(), ErrorKind::kInvalidRequest) << static_cast<int>(c);
    EXPECT_NE(response.error().message().find("X-Note"), std::string::npos)
        << response.error().message();
  }
  EXPECT_EQ(server->connections_opened(), 0);
}

TEST_P(RequestCheckTest, ATabInsideAValueAndBytesOver0x7FArriveAsSent) {
  Serve([](const ServerRequest&) { return Reply::Ok(); }, GetParam());
  auto client = MakeClient();
  auto response =
      client->Send(Request::Get("/").Header("X-Tab", "a\tb").Header("X-Name", "caf\xc3\xa9"));
  ASSERT_TRUE(response) << response.error().message();
  auto requests = server->requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].header("x-tab"), "a\tb");
  EXPECT_EQ(requests[0].header("x-name"), "caf\xc3\xa9");
}

// RFC 9110 5.5: a field value does not include the whitespace around it.
TEST_P(RequestCheckTest, WhitespaceAroundAValueIsTrimmedOnBothProtocols) {
  Serve([](const ServerRequest&) { return Reply::Ok(); }, GetParam());
  auto client = MakeClient();
  auto response = client->Send(Request::Get("/")
                                   .Header("X-Padded", " \t value with inner  space\t ")
                                   .Header("X-Blank", "  "));
  ASSERT_TRUE(response) << response.error().message();
  auto requests = server->requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].header("x-padded"), "value with inner  space");
  bool blank_sent = false;
  for (const auto& [name, value] : requests[0].headers) {
    if (name == "x-blank") {
      blank_sent = true;
      EXPECT_EQ(value, "");
    }
  }
  EXPECT_TRUE(blank_sent);
}

TEST_P(RequestCheckTest, AUrlOnTheOriginWrittenInCapitalsIsSentToIt) {
  Serve([](const ServerRequest& r) { return Reply::Ok("at " + r.target); }, GetParam());
  auto client = MakeClient();
  for (std::string url : {"https://PAYMENTS:8443/x?Q=1", "HTTPS://Payments:8443/x?Q=1",
                          "https://payments:08443/x?Q=1"}) {
    auto response = client->Send(Request::Get(url));
    ASSERT_TRUE(response) << url << ": " << response.error().message();
    EXPECT_EQ(response->body, "at /x?Q=1");  // the path and query keep their case
  }
  for (const ServerRequest& r : server->requests()) {
    std::string authority = r.header(r.version == "2" ? ":authority" : "host");
    if (!authority.empty()) {
      EXPECT_EQ(authority, "payments:8443");
    }
  }
}

TEST_P(RequestCheckTest, AUrlWithUserInfoOrOnAnotherOriginIsRefusedBeforeAnythingIsDialled) {
  Serve([](const ServerRequest&) { return Reply::Ok(); }, GetParam());
  auto client = MakeClient();
  auto user = client->Send(Request::Get("https://user:secret@payments:8443/x"));
  ASSERT_FALSE(user);
  EXPECT_EQ(user.error().kind(), ErrorKind::kInvalidRequest);
  EXPECT_EQ(user.error().message().find("secret"), std::string::npos);
  for (std::string url : {"https://payments.:8443/x", "//ledger:8443/x", "http://payments:8443/x",
                          "https://payments:443/x"}) {
    auto response = client->Send(Request::Get(url));
    ASSERT_FALSE(response) << url;
    EXPECT_EQ(response.error().kind(), ErrorKind::kOriginRefused) << url;
  }
  for (std::string url : {"https://p\xc3\xa4yments:8443/x", "https://payments:8443/a b",
                          "https://payments:8443/a\\b", "charges/1", "https://payments:99999/"}) {
    auto response = client->Send(Request::Get(url));
    ASSERT_FALSE(response) << url;
    EXPECT_EQ(response.error().kind(), ErrorKind::kInvalidRequest) << url;
  }
  EXPECT_EQ(server->connections_opened(), 0);
}

INSTANTIATE_TEST_SUITE_P(Protocols, RequestCheckTest,
                         ::testing::Values(Protocol::kHttp2, Protocol::kHttp11),
                         [](const auto& param_info) {
                           return param_info.param == Protocol::kHttp2 ? "http2" : "http1";
                         });

}  // namespace
}  // namespace outbound::http
