// SPDX-License-Identifier: Apache-2.0
// testing::ScriptedClient, the client's stand-in for a caller's unit tests:
// it answers as the test's function says, keeps the requests, and behaves
// as a Client does where a caller could tell (callbacks off the caller's
// stack, sinks, throws).
#include "outbound/testing/scripted_client.h"

#include <gtest/gtest.h>

#include <future>
#include <stdexcept>
#include <thread>

namespace outbound::testing {
namespace {

using http::Request;
using http::Response;

TEST(ScriptedClientTest, AnswersAsTheHandlerSaysAndKeepsTheRequests) {
  ScriptedClient payments([](const Request& r) -> Result<Response> {
    if (r.method == "DELETE") return Respond(404);
    if (r.url == "/down") return tl::unexpected(Error(ErrorKind::kRejected, "breaker open"));
    return Respond(201, R"({"id":"ch_1"})", {{"Content-Type", "application/json"}});
  });
  http::Sender& sender = payments;

  auto created = sender.Send(Request::Post("/charges", "{}").Header("Idempotency-Key", "k1"));
  ASSERT_TRUE(created);
  EXPECT_EQ(created->status, 201);
  EXPECT_EQ(created->body, R"({"id":"ch_1"})");
  EXPECT_EQ(created->header("content-type"), "application/json");
  EXPECT_EQ(created->attempts, 1);
  EXPECT_EQ(sender.Send(Request::Delete("/charges/1"))->status, 404);
  auto down = sender.Send(Request::Get("/down"));
  ASSERT_FALSE(down);
  EXPECT_EQ(down.error().kind(), ErrorKind::kRejected);

  auto sent = payments.requests();
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[0].method, "POST");
  EXPECT_EQ(sent[0].url, "/charges");
  EXPECT_EQ(sent[0].body, "{}");
  EXPECT_EQ(http::FindHeader(sent[0].headers, "idempotency-key"), "k1");
  EXPECT_EQ(sent[1].method, "DELETE");
  EXPECT_EQ(payments.request_count(), 3u);
}

TEST(ScriptedClientTest, CallbacksNeverRunOnTheCallersStack) {
  ScriptedClient payments([](const Request&) -> Result<Response> { return Respond(200); });
  std::promise<std::thread::id> ran_on;
  payments.SendAsync(Request::Get("/"), [&](Result<Response>, std::exception_ptr) {
    ran_on.set_value(std::this_thread::get_id());
  });
  EXPECT_NE(ran_on.get_future().get(), std::this_thread::get_id());
}

TEST(ScriptedClientTest, ASinkGetsTheBodyOfA2xxThenItsEndAndCanStopOrFail) {
  ScriptedClient exports([](const Request& r) -> Result<Response> {
    return r.url == "/missing" ? Respond(404, "no such export") : Respond(200, "a,b\n1,2\n");
  });
  std::string streamed;
  auto sink = [&](std::string_view chunk) {
    streamed += chunk;
    return true;
  };
  auto got = exports.Send(Request::Get("/ok").StreamBodyTo(sink));
  ASSERT_TRUE(got);
  EXPECT_EQ(streamed, "a,b\n1,2\n");
  EXPECT_EQ(got->body, "");  // as with a Client: the body went to the sink

  auto missing = exports.Send(Request::Get("/missing").StreamBodyTo(sink));
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->body, "no such export");  // not 2xx: read whole

  auto stopped =
      exports.Send(Request::Get("/ok").StreamBodyTo([](std::string_view) { return false; }));
  ASSERT_FALSE(stopped);
  EXPECT_EQ(stopped.error().kind(), ErrorKind::kCancelled);

  // The sink hears the end, and an error it says there ends the call.
  int ends = 0;
  auto cut =
      exports.Send(Request::Get("/ok").StreamBodyTo([&](std::string_view chunk) -> Result<bool> {
        if (!chunk.empty()) return true;
        ++ends;
        return Fail(ErrorKind::kInvalidResponse, "the export ended inside a row");
      }));
  ASSERT_FALSE(cut);
  EXPECT_EQ(cut.error().kind(), ErrorKind::kInvalidResponse);
  EXPECT_EQ(cut.error().message(), "the export ended inside a row");
  EXPECT_EQ(ends, 1);

  // The head before the body, as a Client hands it; refused, the sink
  // hears nothing.
  std::string heard;
  auto head = [&](const Response& answer) -> Result<void> {
    heard += std::to_string(answer.status) + ";";
    return Fail(ErrorKind::kInvalidResponse, "not CSV");
  };
  streamed.clear();
  auto refused = exports.Send(Request::Get("/ok").StreamBodyTo(sink).OnBodyHead(head));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message(), "not CSV");
  EXPECT_EQ(heard, "200;");
  EXPECT_EQ(streamed, "");
}

TEST(ScriptedClientTest, WhatTheHandlerThrowsReachesTheCaller) {
  ScriptedClient payments(
      [](const Request&) -> Result<Response> { throw std::logic_error("unexpected request"); });
  EXPECT_THROW((void)payments.Send(Request::Get("/")), std::logic_error);
}

// The handler and requests() see a streamed body (StreamBodyFrom) read
// whole; a reader's failure fails the call as a Client's would.
TEST(ScriptedClientTest, AStreamedRequestBodyReachesTheHandlerWhole) {
  ScriptedClient uploads([](const Request& r) -> Result<Response> {
    return Respond(201, std::to_string(r.body.size()));
  });
  auto opener = [] {
    auto left = std::make_shared<int>(3);
    return http::BodyReader([left](std::span<char> buffer) -> Result<std::size_t> {
      if ((*left)-- == 0) return 0;
      std::fill_n(buffer.data(), 10000, 'q');
      return 10000;
    });
  };
  auto got = uploads.Send(Request::Put("/files/a").StreamBodyFrom(opener));
  ASSERT_TRUE(got);
  EXPECT_EQ(got->body, "30000");
  EXPECT_EQ(uploads.requests().at(0).body, std::string(30000, 'q'));
  EXPECT_FALSE(uploads.requests().at(0).body_source);

  auto failed = uploads.Send(Request::Put("/files/b").StreamBodyFrom([] {
    return http::BodyReader(
        [](std::span<char>) -> Result<std::size_t> { return Fail(ErrorKind::kTransport, "gone"); });
  }));
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().kind(), ErrorKind::kInvalidRequest);
  EXPECT_NE(failed.error().message().find("gone"), std::string::npos);
}

TEST(ScriptedClientTest, AHandleForwardsForCodeThatOwnsItsClient) {
  ScriptedClient payments([](const Request&) -> Result<Response> { return Respond(200, "ok"); });
  std::unique_ptr<http::Sender> owned = payments.handle();
  EXPECT_EQ(owned->Send(Request::Get("/x"))->body, "ok");
  EXPECT_EQ(payments.requests().at(0).url, "/x");
}

}  // namespace
}  // namespace outbound::testing
