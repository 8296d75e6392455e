// SPDX-License-Identifier: Apache-2.0
// The gRPC client against nginx (tests/peers/nginx_peer.h, TLS, ALPN h2)
// where nginx answers for the service itself: its documented gRPC error
// page (204 with grpc-status 14) and an HTML page in place of a service.
// What gRPC's HTTP mapping says of them, on a server nobody here wrote.
#include "nginx_peer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>

#include "outbound/rpc/client.h"
#include "outbound/testing/fixed_random.h"
#include "outbound/testing/manual_clock.h"
#include "outbound/testing/network_map.h"
#include "outbound/testing/test_ca.h"

namespace outbound::rpc {
namespace {

class RpcNginxPeer : public ::testing::Test {
 protected:
  RpcNginxPeer() : files_(ca_.IssueServer({"backend"})), nginx_(files_, {}), random_(0.0) {
    runtime_.clock = &clock_;
    runtime_.network = &network_;
    runtime_.random = &random_;
    network_.Add("backend", 443, "127.0.0.1", nginx_.port());
  }

  std::unique_ptr<Client> MakeClient(std::string addr = "backend:443",
                                     Settings settings = DefaultSettings()) {
    settings.addr = std::move(addr);
    settings.tls = TlsSettings{ca_.pem(), "", ""};
    auto client = Client::Create(runtime_, settings);
    EXPECT_TRUE(client) << client.error().message();
    return client ? std::move(*client) : nullptr;
  }

  // `call` run on another thread, the clock advanced to each wait it sets
  // (a backoff) but never to the deadline: nginx answers in real time.
  template <typename Call>
  Reply Run(Call call) {
    TimePoint until = clock_.Now() + DefaultSettings().timeout;
    auto future = std::async(std::launch::async, call);
    while (future.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready) {
      if (auto next = clock_.next_timer(); next && *next < until) clock_.AdvanceTo(*next);
    }
    return future.get();
  }

  testing::TestCA ca_;
  peers::PeerFiles files_;
  peers::NginxPeer nginx_;
  testing::ManualClock clock_;
  testing::NetworkMap network_;
  testing::FixedRandom random_;
  Runtime runtime_;
};

// A grpc-status under a non-200 HTTP status is the call's status: nginx's
// error page is UNAVAILABLE, with its message, and retried as UNAVAILABLE
// is (a unary call's idempotence is not asked: UNAVAILABLE was never
// processed).
TEST_F(RpcNginxPeer, NginxsGrpcErrorPageIsUnavailableAndRetried) {
  auto client = MakeClient();
  ASSERT_NE(client, nullptr);
  Reply reply = Run([&] { return client->Call("/peer.Down/Say", "x"); });
  EXPECT_EQ(reply.status.code, Code::kUnavailable) << reply.status.message;
  EXPECT_EQ(reply.status.message, "unavailable");
  EXPECT_GT(reply.attempts, 1);
  auto requests = nginx_.WaitForRequests(static_cast<std::size_t>(reply.attempts));
  ASSERT_EQ(requests.size(), static_cast<std::size_t>(reply.attempts));
  for (const auto& request : requests) {
    EXPECT_EQ(request.method, "POST");
    EXPECT_EQ(request.uri, "/peer.Down/Say");
    EXPECT_EQ(request.status, 204);
  }
}

// A 200 that is not gRPC's is UNKNOWN, naming its content-type, on a
// unary call and on a server stream alike: the page is not read as
// messages.
TEST_F(RpcNginxPeer, AnHtmlPageIsUnknownOnAUnaryCallAndOnAStream) {
  auto client = MakeClient();
  ASSERT_NE(client, nullptr);
  Reply unary = Run([&] { return client->Call("/peer.Html/Say", "x"); });
  EXPECT_EQ(unary.status.code, Code::kUnknown) << unary.status.message;
  int messages = 0;
  Reply streamed = Run([&] {
    return client->ServerStream("/peer.Html/List", "x", [&](std::string_view) { ++messages; });
  });
  EXPECT_EQ(streamed.status.code, Code::kUnknown) << streamed.status.message;
  EXPECT_NE(streamed.status.message.find("text/html"), std::string::npos)
      << streamed.status.message;
  EXPECT_EQ(messages, 0);
  EXPECT_EQ(nginx_.WaitForRequests(2).size(), 2u);
}

// nginx proxying gRPC to an upstream that refuses it answers with its own
// 502 page, HTML, larger than a small receive limit: the call is told by
// the status (UNAVAILABLE, retried), unary or streamed, as grpc-go is; the
// page (some 150 bytes), holding no message, is not RESOURCE_EXHAUSTED.
TEST_F(RpcNginxPeer, ItsBadGatewayPageOverTheReceiveLimitIsUnavailableAndRetried) {
  Settings settings = DefaultSettings();
  settings.max_receive_message_bytes = 16;
  auto client = MakeClient("backend:443", settings);
  ASSERT_NE(client, nullptr);
  Reply unary = Run([&] { return client->Call("/peer.Gone/Say", "x"); });
  EXPECT_EQ(unary.status.code, Code::kUnavailable) << unary.status.message;
  EXPECT_EQ(unary.status.message, "HTTP status 502");
  EXPECT_GT(unary.attempts, 1);
  Reply streamed =
      Run([&] { return client->ServerStream("/peer.Gone/List", "x", [](std::string_view) {}); });
  EXPECT_EQ(streamed.status.code, Code::kUnavailable) << streamed.status.message;
  auto requests =
      nginx_.WaitForRequests(static_cast<std::size_t>(unary.attempts + streamed.attempts));
  ASSERT_FALSE(requests.empty());
  for (const auto& request : requests) EXPECT_EQ(request.status, 502);
}

// The same for an HTML page under 200: UNKNOWN, naming its content-type.
TEST_F(RpcNginxPeer, AnHtmlPageOverTheReceiveLimitIsUnknown) {
  Settings settings = DefaultSettings();
  settings.max_receive_message_bytes = 8;  // the page is 26 bytes
  auto client = MakeClient("backend:443", settings);
  ASSERT_NE(client, nullptr);
  Reply unary = Run([&] { return client->Call("/peer.Html/Say", "x"); });
  EXPECT_EQ(unary.status.code, Code::kUnknown) << unary.status.message;
  EXPECT_NE(unary.status.message.find("text/html"), std::string::npos) << unary.status.message;
}

// nginx serving HTTPS without HTTP/2 (its ALPN offers http/1.1 alone): a
// gRPC client, which offers h2 alone, does not connect, and says why; no
// call reaches nginx over HTTP/1.1.
TEST_F(RpcNginxPeer, AServerWithoutHttp2IsNotConnected) {
  peers::NginxPeer http1_only(files_, {.http2 = false});
  network_.Add("backend", 8443, "127.0.0.1", http1_only.port());
  auto client = MakeClient("backend:8443");
  ASSERT_NE(client, nullptr);
  Result<void> warmed = client->Warm().get();
  ASSERT_FALSE(warmed) << "connected without HTTP/2";
  EXPECT_EQ(warmed.error().kind(), ErrorKind::kTransport) << warmed.error().message();
  EXPECT_NE(warmed.error().message().find("does not speak HTTP/2"), std::string::npos)
      << warmed.error().message();
  EXPECT_FALSE(client->Connected());
  Reply reply = Run([&] { return client->Call("/peer.Any/Say", "x"); });
  EXPECT_EQ(reply.status.code, Code::kUnavailable) << reply.status.message;
  EXPECT_TRUE(http1_only.WaitForRequests(1, std::chrono::seconds(1)).empty());
}

}  // namespace
}  // namespace outbound::rpc
