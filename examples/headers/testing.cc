// SPDX-License-Identifier: Apache-2.0
//
// The usage examples of the test kit's headers (outbound/testing/),
// compiled: each header quotes the region its `// example:` line names
// (scripts/check-doc-examples).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "../checkout.h"
#include "outbound/http/client.h"
#include "outbound/runtime.h"
#include "outbound/testing/black_hole.h"
#include "outbound/testing/fake_grpc.h"
#include "outbound/testing/fake_server.h"
#include "outbound/testing/fake_transport.h"
#include "outbound/testing/fixed_random.h"
#include "outbound/testing/h2_frame.h"
#include "outbound/testing/manual_clock.h"
#include "outbound/testing/network_map.h"
#include "outbound/testing/scripted_client.h"
#include "outbound/testing/telemetry.h"
#include "outbound/testing/test_ca.h"

namespace outbound::examples {

using namespace std::chrono_literals;
using checkout::Checkout;

void BlackHoleExample(testing::NetworkMap& network, testing::ManualClock& clock,
                      http::Client* client) {
  // [example black-hole]
  auto hole = testing::BlackHole::Start();
  network.Add("payments", 8443, "127.0.0.1", (*hole)->port());
  auto call = client->SendAsync(http::Request::Get("/"));   // dials, and waits
  while ((*hole)->dials() == 0) std::this_thread::yield();  // it has dialled
  clock.Advance(5s);                                        // AttemptTimeout
  // [end black-hole]
}

void FakeServerExample(testing::NetworkMap& network) {
  // [example fake-server]
  testing::TestCA ca;
  auto server = testing::FakeServer::Start(
      {.tls = testing::ServerTls{ca.IssueServer({"payments", "127.0.0.1"})},
       .handler = [](const testing::ServerRequest& r) {
         if (r.target == "/slow") return testing::Reply::Hang();
         return testing::Reply::Status(503).Header("Retry-After", "2");
       }});
  network.Add("payments", 8443, "127.0.0.1", (*server)->port());
  // ...
  ASSERT_TRUE((*server)->WaitForRequests(1));  // the first attempt has arrived
  EXPECT_EQ((*server)->requests().size(), 2u);
  // [end fake-server]
}

void FakeGrpcExample(testing::NetworkMap& network, const std::string& cart_bytes) {
  // [example fake-grpc]
  // Two calls to Get fail UNAVAILABLE (the first asking for 2 s of
  // pushback), then every call succeeds; any other method is UNIMPLEMENTED.
  auto server = testing::StartFakeGrpc(
      {.script = {{"/cart.v1.Carts/Get",
                   {testing::GrpcReply::Status(rpc::Code::kUnavailable).Pushback(2000),
                    testing::GrpcReply::TrailersOnly(rpc::Code::kUnavailable, "draining"),
                    testing::GrpcReply::Ok(cart_bytes)}}}});
  network.Add("carts", 9090, "127.0.0.1", (*server)->port());
  // ... calls to carts:9090 in plain text ...
  testing::GrpcRequest first = testing::GrpcRequest::From((*server)->requests()[0]);
  EXPECT_EQ(first.method, "/cart.v1.Carts/Get");
  EXPECT_EQ(first.messages.size(), 1u);
  // [end fake-grpc]
}

std::unique_ptr<http::Client> FakeTransportExample(const http::Settings& settings) {
  // [example fake-transport]
  testing::ManualClock clock;
  testing::FakeTransport payments(clock, [](const testing::ServerRequest& r) {
    return r.target == "/slow" ? testing::Reply::Hang() : testing::Reply::Ok("paid");
  });
  Runtime runtime{.clock = &clock, .transport = &payments};
  auto client = http::Client::CreateOrThrow(runtime, settings);
  // [end fake-transport]
  return nullptr;
}

void FixedRandomExample(testing::ManualClock& clock, testing::NetworkMap& network) {
  // [example fixed-random]
  testing::FixedRandom random(0.5);
  Runtime runtime{.clock = &clock, .network = &network, .random = &random};
  // [end fixed-random]
  (void)runtime;
}

void H2FrameExample(const testing::ServerTls& tls) {
  // [example h2-frame]
  namespace h2 = testing::h2;
  auto server = testing::FakeServer::Start(
      {.tls = tls, .handler = [](const auto&) {
         // The response's headers, then empty DATA frames until the client leaves.
         return testing::Reply::Flood(
             h2::Data(h2::kThisStream, ""), /*count=*/0,
             {h2::Headers(h2::kThisStream, {{":status", "200"}}, false, true)});
       }});
  // [end h2-frame]
}

void ManualClockExample(http::Client* client, testing::FakeServer* server) {
  // [example manual-clock]
  testing::ManualClock clock;  // the client's, through its Runtime
  auto call = client->SendAsync(http::Request::Get("/charges/1"));  // 503, Retry-After: 2
  ASSERT_TRUE(server->WaitForRequests(1));                          // attempt 1 has arrived
  ASSERT_TRUE(clock.WaitForTimerBy(clock.Now() + 2s));  // the client waits out Retry-After
  clock.Advance(1999ms);                                // not yet
  clock.Advance(1ms);                                   // the second attempt starts
  // [end manual-clock]
}

void NetworkMapExample(testing::FakeServer* server) {
  Runtime runtime;
  // [example network-map]
  testing::NetworkMap network;
  network.Add("payments", 8443, "127.0.0.1", server->port());
  runtime.network = &network;  // https://payments:8443 reaches the fake
  // [end network-map]
}

void ScriptedClientExample() {
  // [example scripted-client]
  testing::ScriptedClient payments(
      [](const http::Request& r) -> outbound::Result<http::Response> {
        if (r.method == "DELETE") return testing::Respond(404);
        return testing::Respond(201, R"({"id":"ch_1"})");
      });
  Checkout checkout(payments.handle());  // a std::unique_ptr<http::Sender>
  EXPECT_EQ(checkout.Charge("cus_7", 500, "k1").value(), "ch_1");
  EXPECT_EQ(payments.requests()[0].url, "/charges");
  // [end scripted-client]
}

void InMemoryTelemetryExample(Random& random, testing::ManualClock& clock,
                              testing::NetworkMap& network) {
  // [example in-memory-telemetry]
  testing::InMemoryTelemetry telemetry(random);
  Runtime runtime{.clock = &clock, .network = &network};
  runtime.telemetry = telemetry.telemetry();
  // ... calls ...
  auto spans = telemetry.Spans(telemetry::SpanKind::kClient);
  auto open = telemetry.Point("outbound.circuit.state", {{"state", "open"}});
  // [end in-memory-telemetry]
}

void TestCaExample(testing::FakeServer::Options& server_options,
                   http::Settings& client_settings) {
  // [example test-ca]
  testing::TestCA ca;
  testing::Certificate payments = ca.IssueServer({"payments", "127.0.0.1"});
  server_options.tls = testing::ServerTls{payments};
  client_settings.tls = http::TlsSettings{.root_pem = ca.pem()};  // trust only this CA
  // [end test-ca]
}

}  // namespace outbound::examples
