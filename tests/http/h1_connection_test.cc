// SPDX-License-Identifier: Apache-2.0
// The HTTP/1.1 transport against a server that frames its answers badly or
// ends its connection badly (FakeServer over TLS, bytes as given): what may
// end a body, what may reuse a connection, and what the client holds.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>

#include "client_test_support.h"

namespace outbound::http {
namespace {

using testing::Reply;
using testing::ServerRequest;

class H1ConnectionTest : public ClientTestBase, public ::testing::Test {
 protected:
  Settings OneConnection() {
    Settings settings = PaymentsSettings();
    settings.max_connections = 1;
    return settings;
  }
};

// A body that runs to the connection's end is whole only if the end is
// orderly (RFC 9112 §9.8): a reset cuts it short, and the call says so.
TEST_F(H1ConnectionTest, ABodyEndedByAResetIsCutShortNotWhole) {
  Serve([](const ServerRequest&) { return Reply::ResetAfter(4, "half and more").HeadersAsGiven(); },
        Protocol::kHttp11);
  auto client = MakeClient();
  auto result = client->Send(Request::Get("/report"));
  ASSERT_FALSE(result) << "took \"" << result->body << "\" as the whole body";
  EXPECT_EQ(result.error().kind(), ErrorKind::kTransport) << result.error().message();
  EXPECT_NE(result.error().message().find("cut short"), std::string::npos)
      << result.error().message();
}

// A chunked body whose trailer section never ends: what the parser cannot
// take yet is held to the head's bound, not kept until the deadline.
TEST_F(H1ConnectionTest, AnEndlessTrailerLineFailsAtTheHeadsBoundNotAtTheDeadline) {
  Serve(
      [](const ServerRequest&) {
        return Reply::Ok("0\r\nX-Endless: " + std::string(200 * 1024, 'a'))
            .Header("Transfer-Encoding", "chunked")
            .HeadersAsGiven();
      },
      Protocol::kHttp11);
  auto client = MakeClient();
  auto call = client->SendAsync(Request::Get("/feed"));
  // A safety net of 10 s real time, not a tolerance: the clock never moves.
  ASSERT_EQ(call.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "the client kept reading the line";
  auto result = call.get();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind(), ErrorKind::kResponseTooLarge) << result.error().message();
}

// "close" in any Connection field ends the connection after its answer,
// a "keep-alive" before it notwithstanding: the next call dials anew.
TEST_F(H1ConnectionTest, ACloseInALaterConnectionFieldEndsTheConnection) {
  Serve(
      [](const ServerRequest&) {
        return Reply::Ok("ok")
            .Header("Connection", "keep-alive")
            .Header("Connection", "close")
            .Header("Content-Length", "2")
            .HeadersAsGiven();
      },
      Protocol::kHttp11);
  auto client = MakeClient(OneConnection());
  ASSERT_TRUE(client->Send(Request::Get("/1")));
  auto second = client->Send(Request::Get("/2"));
  ASSERT_TRUE(second) << second.error().message();
  auto requests = server->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].connection_id, 1);
  EXPECT_EQ(requests[1].connection_id, 2) << "the connection the server closed was used again";
}

// The trace context's tracestate is the caller's text: with a CR LF in it,
// it is left out, never written as a field of its own.
TEST_F(H1ConnectionTest, ATracestateWithALineBreakIsNotSent) {
  Serve([](const ServerRequest&) { return Reply::Ok("ok"); }, Protocol::kHttp11);
  auto client = MakeClient();
  Request request = Request::Get("/traced");
  request.context.trace.trace_id.bytes.fill(1);
  request.context.trace.span_id.bytes.fill(2);
  request.context.trace.trace_state = "vendor=1\r\nX-Injected: yes";
  auto result = client->Send(std::move(request));
  ASSERT_TRUE(result) << result.error().message();
  auto requests = server->requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_NE(requests[0].header("traceparent"), "");
  EXPECT_EQ(requests[0].header("tracestate"), "");
  EXPECT_EQ(requests[0].header("x-injected"), "");
}

}  // namespace
}  // namespace outbound::http
