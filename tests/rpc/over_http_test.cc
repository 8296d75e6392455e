// SPDX-License-Identifier: Apache-2.0
// gRPC's wire through the HTTP client's own HTTP/2 (prior knowledge, no
// TLS) to a grpc++ server: what the gRPC front end on the one core will
// stand on. A unary call is a POST of one length-prefixed message with
// `content-type: application/grpc` and `te: trailers`; the answer is one
// length-prefixed message, and its status comes in the trailer section,
// or, with no message, in the headers alone ("trailers-only").
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "echo_server.h"
#include "outbound/http/client.h"
#include "outbound/testing/network_map.h"

namespace outbound::rpc {
namespace {

// One gRPC message: a flag byte (0: not compressed), a big-endian 32-bit
// length, the bytes.
std::string Framed(const std::string& message) {
  std::string framed(5, '\0');
  std::uint32_t length = htonl(static_cast<std::uint32_t>(message.size()));
  std::memcpy(framed.data() + 1, &length, 4);
  return framed + message;
}

class GrpcOverHttpTest : public ::testing::Test {
 protected:
  std::unique_ptr<http::Client> ClientOf(const EchoServer& server) {
    network_.Add("echo", 50051, "127.0.0.1", server.port());
    http::Settings settings = http::DefaultSettings();
    settings.base_url = "http://echo:50051";
    settings.http2_prior_knowledge = true;
    settings.max_attempts = 1;
    auto client = http::Client::Create(Runtime{.network = &network_}, settings);
    EXPECT_TRUE(client) << client.error().message();
    return client ? std::move(*client) : nullptr;
  }

  static http::Request Unary(const std::string& method, const std::string& message) {
    return http::Request::Post(method, Framed(message))
        .Header("content-type", "application/grpc")
        .Header("te", "trailers");
  }

  testing::NetworkMap network_;
};

TEST_F(GrpcOverHttpTest, AUnaryCallIsAFramedMessageAndItsStatusIsInTheTrailers) {
  EchoServer server(Echoing());
  ASSERT_TRUE(server.started());
  auto client = ClientOf(server);
  EchoRequest request;
  request.set_text("hi");
  auto response = client->Send(Unary("/outbound.test.Echo/Say", request.SerializeAsString()));
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->version, "2");
  EXPECT_EQ(response->header("content-type"), "application/grpc");
  EXPECT_EQ(response->trailers.Find("grpc-status"), "0");
  EXPECT_EQ(response->header("grpc-status"), "");
  ASSERT_GE(response->body.size(), 5u);
  EXPECT_EQ(response->body[0], '\0');
  EchoReply reply;
  ASSERT_TRUE(reply.ParseFromString(response->body.substr(5)));
  EXPECT_EQ(response->body, Framed(reply.SerializeAsString()));
  EXPECT_EQ(reply.text(), "echo: hi");
  EXPECT_EQ(server.calls(), 1);
}

TEST_F(GrpcOverHttpTest, AnUnknownMethodIsATrailersOnlyAnswer) {
  EchoServer server(Echoing());
  ASSERT_TRUE(server.started());
  auto client = ClientOf(server);
  auto response = client->Send(Unary("/outbound.test.Echo/Nothing", ""));
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->status, 200);
  EXPECT_TRUE(response->body.empty());
  EXPECT_EQ(response->trailers.size(), 0u);
  EXPECT_EQ(response->header("grpc-status"), "12");  // UNIMPLEMENTED
}

}  // namespace
}  // namespace outbound::rpc
