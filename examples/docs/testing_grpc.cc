// SPDX-License-Identifier: Apache-2.0
//
// docs/testing.md's gRPC block: a fake gRPC dependency called through
// rpc::Client, compiled (scripts/check-doc-examples).
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <vector>

#include "outbound/rpc/client.h"
#include "outbound/testing/fake_grpc.h"
#include "outbound/testing/manual_clock.h"
#include "outbound/testing/network_map.h"

namespace outbound::docs {

using namespace std::chrono_literals;

void FakeGrpcExample(const std::string& request, const std::string& cart) {
  // [example fake-grpc]
  testing::ManualClock clock;
  testing::NetworkMap network;
  auto carts = testing::StartFakeGrpc(  // plain text (h2c); .tls for h2 over TLS
      {.script = {{"/cart.v1.Carts/Get",
                   {testing::GrpcReply::Status(rpc::Code::kUnavailable, "busy").Pushback(2000),
                    testing::GrpcReply::Ok(cart)}}},
       .clock = &clock});
  network.Add("carts", 9090, "127.0.0.1", (*carts)->port());

  rpc::Settings settings;
  settings.addr = "carts:9090";
  auto client = rpc::Client::Create(Runtime{.clock = &clock, .network = &network}, settings);
  auto call = std::async([&] { return (*client)->Call("/cart.v1.Carts/Get", request); });
  ASSERT_TRUE((*carts)->WaitForRequests(1));
  ASSERT_TRUE(clock.WaitForTimerBy(clock.Now() + 2s));  // the client waits out the pushback
  clock.Advance(2s);
  rpc::Reply reply = call.get();
  EXPECT_TRUE(reply.status.ok());
  EXPECT_EQ(reply.body, cart);

  testing::GrpcRequest second = testing::GrpcRequest::From((*carts)->requests()[1]);
  EXPECT_EQ(second.messages, std::vector<std::string>{request});
  EXPECT_TRUE(second.timeout && *second.timeout <= 10s);  // grpc-timeout, decoded
  // [end fake-grpc]
}

}  // namespace outbound::docs
