// SPDX-License-Identifier: Apache-2.0
// What only the native transport promises, beyond the suites both
// transports run (client, outage, redirect, fault matrix, peers, soak): its
// pool's rules for HTTP/1.1, and names resolved by the OS.
#include <gtest/gtest.h>

#include <future>
#include <vector>

#include "client_test_support.h"

namespace outbound::http {
namespace {

using testing::Reply;
using testing::ServerRequest;

class NativeTransportTest : public ::testing::Test, public ClientTestBase {
 protected:
  // A plain-text payments:8080 (HTTP/1.1).
  void ServePlain(testing::Handler handler) {
    auto started = testing::FakeServer::Start({.handler = std::move(handler), .clock = &clock});
    ASSERT_TRUE(started) << started.error().message();
    server = std::move(*started);
    network.Add("payments", 8080, "127.0.0.1", server->port());
  }

  Settings PlainSettings() {
    Settings s = PaymentsSettings();
    s.base_url = "http://payments:8080";
    s.tls.reset();
    return s;
  }
};

TEST_F(NativeTransportTest, AnHttp11ConnectionIsKeptAliveAcrossCalls) {
  ServePlain([](const ServerRequest& r) { return Reply::Ok(r.target); });
  auto client = MakeClient(PlainSettings());
  for (int i = 0; i < 5; ++i) {
    auto response = client->Send(Request::Get(NumberedPath(i)));
    ASSERT_TRUE(response) << response.error().message();
    EXPECT_EQ(response->body, NumberedPath(i));
    EXPECT_EQ(response->version, "1.1");
  }
  EXPECT_EQ(server->connections_opened(), 1);
}

// HTTP/2 with prior knowledge to a server that speaks only HTTP/1.1: the
// attempt fails at once, naming the protocol, and nothing hangs.
TEST_F(NativeTransportTest, PriorKnowledgeToAnHttp11ServerFailsTheAttempt) {
  ServePlain([](const ServerRequest& r) { return Reply::Ok(r.target); });
  Settings settings = PlainSettings();
  settings.http2_prior_knowledge = true;
  settings.max_attempts = 1;
  auto client = MakeClient(settings);
  auto response = client->Send(Request::Get("/"));
  ASSERT_FALSE(response);
  EXPECT_NE(response.error().message().find("HTTP/2"), std::string::npos)
      << response.error().message();
  EXPECT_EQ(server->request_count(), 0u);
}

// RFC 9113 §8.3.1: :scheme is the target URI's, "http" for h2c.
TEST_F(NativeTransportTest, Http2SendsTheSchemeOfTheUrl) {
  testing::FakeServer::Options options;
  options.handler = [](const ServerRequest& r) { return Reply::Ok(r.scheme); };
  options.clock = &clock;
  options.h2c = true;
  auto started = testing::FakeServer::Start(std::move(options));
  ASSERT_TRUE(started) << started.error().message();
  server = std::move(*started);
  network.Add("payments", 8080, "127.0.0.1", server->port());
  Settings plain = PlainSettings();
  plain.http2_prior_knowledge = true;
  auto h2c = MakeClient(plain)->Send(Request::Get("/"));
  ASSERT_TRUE(h2c) << h2c.error().message();
  EXPECT_EQ(h2c->version, "2");
  EXPECT_EQ(h2c->body, "http");

  Serve([](const ServerRequest& r) { return Reply::Ok(r.scheme); });
  auto h2 = MakeClient()->Send(Request::Get("/"));
  ASSERT_TRUE(h2) << h2.error().message();
  EXPECT_EQ(h2->version, "2");
  EXPECT_EQ(h2->body, "https");
}

// An exchange keeps the room its answer's fields were read into for the
// next answer, and hands the caller a copy: answers ending in one batch,
// and each after the room was used again, keep their own fields.
TEST_F(NativeTransportTest, Http2AnswersKeepTheirOwnHeaderFields) {
  Serve([](const ServerRequest& r) {
    // A longer value each time, so a later answer overwrites more.
    return Reply::Ok(r.target).Header("x-target",
                                      r.target + std::string(r.target.size() * 40, '+'));
  });
  auto client = MakeClient();
  constexpr int kCalls = 40;
  std::vector<std::future<Result<Response>>> answers;
  for (int i = 0; i < kCalls; ++i)
    answers.push_back(client->SendAsync(Request::Get(NumberedPath(i))));
  std::vector<Result<Response>> kept;
  for (auto& answer : answers) kept.push_back(answer.get());
  for (int i = 0; i < kCalls; ++i) {
    auto again = client->Send(Request::Get(NumberedPath(kCalls + i)));  // the rooms used again
    ASSERT_TRUE(again) << again.error().message();
  }
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_TRUE(kept[i]) << kept[i].error().message();
    std::string path = NumberedPath(i);
    EXPECT_EQ(kept[i]->version, "2");
    EXPECT_EQ(kept[i]->header("x-target"), path + std::string(path.size() * 40, '+')) << i;
    EXPECT_EQ(kept[i]->body, path);
    // A copy is the fields alone: no room made ahead comes with it.
    std::size_t bytes = 0;
    for (const auto& [name, value] : kept[i]->headers) bytes += 8 + name.size() + value.size();
    EXPECT_EQ(kept[i]->headers.capacity(), bytes) << i;
  }
  EXPECT_EQ(server->connections_opened(), 1);
}

TEST_F(NativeTransportTest, HttpOneOpensNoMoreConnectionsThanMaxConnections) {
  Serve([](const ServerRequest& r) { return Reply::Ok(r.target); }, Protocol::kHttp11);
  Settings settings = PaymentsSettings();
  settings.max_connections = 3;
  auto client = MakeClient(settings);
  std::vector<std::future<Result<Response>>> calls;
  for (int i = 0; i < 24; ++i) calls.push_back(client->SendAsync(Request::Get(NumberedPath(i))));
  for (int i = 0; i < 24; ++i) {
    auto response = calls[static_cast<size_t>(i)].get();
    ASSERT_TRUE(response) << response.error().message();
    EXPECT_EQ(response->body, NumberedPath(i));
  }
  EXPECT_LE(server->connections_opened(), 3);
  EXPECT_EQ(server->request_count(), 24u);
}

TEST_F(NativeTransportTest, ANameTheNetworkLeavesToTheOsIsResolvedByTheOs) {
  auto started = testing::FakeServer::Start(
      {.handler = [](const ServerRequest&) { return Reply::Ok("local"); }, .clock = &clock});
  ASSERT_TRUE(started) << started.error().message();
  server = std::move(*started);
  Settings settings = PaymentsSettings();
  settings.base_url = "http://localhost:" + std::to_string(server->port());
  settings.tls.reset();
  Runtime os{.clock = &clock, .random = &random};  // the OS's network: names resolved as usual
  auto client = Client::Create(os, settings);
  ASSERT_TRUE(client) << client.error().message();
  auto response = (*client)->Send(Request::Get("/"));
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->body, "local");
}

}  // namespace
}  // namespace outbound::http
