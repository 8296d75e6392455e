// SPDX-License-Identifier: Apache-2.0
// grpc-timeout tells the server the call's time left as the attempt is
// written on a ready connection: time the client spent opening one, or in
// an injected delay, is gone from what the server is told (as is what was
// spent of an attempt timeout), so it never works on past the moment the
// client gives up. Against the kit's fake gRPC dependency over h2c on
// loopback, on the manual clock.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>

#include "held_door.h"
#include "outbound/rpc/client.h"
#include "outbound/testing/fake_grpc.h"
#include "outbound/testing/manual_clock.h"
#include "outbound/testing/network_map.h"

namespace outbound::rpc {
namespace {

using std::chrono::seconds;
using testing::GrpcReply;

constexpr char kGet[] = "/outbound.test.Files/Get";

class GrpcTimeoutTest : public ::testing::Test {
 protected:
  GrpcTimeoutTest() {
    runtime_.clock = &clock_;
    runtime_.network = &network_;
    testing::FakeGrpcOptions options;
    options.script = {{kGet, {GrpcReply::Ok("file")}}};
    options.clock = &clock_;
    auto started = testing::StartFakeGrpc(std::move(options));
    EXPECT_TRUE(started) << started.error().message();
    if (started) server_ = std::move(*started);
  }

  void SetUp() override { ASSERT_NE(server_, nullptr); }

  // A client of files:9090 whose calls have 10 s.
  std::unique_ptr<Client> Make(Settings settings = DefaultSettings()) {
    settings.addr = "files:9090";
    settings.timeout = seconds(10);
    auto client = Client::Create(runtime_, std::move(settings));
    EXPECT_TRUE(client) << client.error().message();
    return client ? std::move(*client) : nullptr;
  }

  // The grpc-timeout the server was told by the `n`th call it received.
  std::optional<Duration> ToldTimeout(std::size_t n = 0) const {
    auto requests = server_->requests();
    if (requests.size() <= n) return std::nullopt;
    return testing::GrpcRequest::From(requests[n]).timeout;
  }

  // A call by `client` whose connection takes `opening` to open: its
  // server (behind `door`) answers the client's preface only then.
  Reply CallWhileOpening(Client& client, HeldDoor& door, Duration opening) {
    auto reply = client.CallAsync(kGet, "");
    EXPECT_TRUE(door.WaitForConnection());
    clock_.Advance(opening);
    door.Open();
    return reply.get();
  }

  testing::ManualClock clock_;
  testing::NetworkMap network_;
  Runtime runtime_;
  std::unique_ptr<testing::FakeServer> server_;
};

// The call's connection takes 3 s to open: the server hears of the 7 s
// that are left. The next call, on the open connection, is told its whole
// time.
TEST_F(GrpcTimeoutTest, TimeSpentOpeningTheConnectionIsNotTheServers) {
  HeldDoor door(server_->port());
  network_.Add("files", 9090, "127.0.0.1", door.port());
  auto client = Make();
  Reply got = CallWhileOpening(*client, door, seconds(3));
  ASSERT_TRUE(got.status.ok()) << got.status.message;
  EXPECT_EQ(ToldTimeout(0), Duration(seconds(7)));

  clock_.Advance(seconds(1));
  got = client->CallAsync(kGet, "").get();
  ASSERT_TRUE(got.status.ok()) << got.status.message;
  EXPECT_EQ(ToldTimeout(1), Duration(seconds(10)));
}

// An attempt timeout runs from the moment the dependency owes the headers,
// a dial included: with 5 s of it and 3 s spent opening the connection,
// the server hears of the 2 s the client will still wait.
TEST_F(GrpcTimeoutTest, WhatIsLeftOfTheAttemptTimeoutIsTold) {
  HeldDoor door(server_->port());
  network_.Add("files", 9090, "127.0.0.1", door.port());
  Settings settings = DefaultSettings();
  settings.attempt_timeout = seconds(5);
  auto client = Make(settings);
  Reply got = CallWhileOpening(*client, door, seconds(3));
  ASSERT_TRUE(got.status.ok()) << got.status.message;
  EXPECT_EQ(ToldTimeout(0), Duration(seconds(2)));
}

// A message too long for one write pauses the attempt timeout while it
// goes (a slow link: the upload is not the server's slowness), but not
// the server's clock: the server is told the call's time, not the
// attempt timeout, which would end the call there mid-upload.
TEST_F(GrpcTimeoutTest, AMessageTooLongForOneWriteIsToldTheCallsTime) {
  network_.Add("files", 9090, "127.0.0.1", server_->port());
  Settings settings = DefaultSettings();
  settings.attempt_timeout = seconds(5);
  auto client = Make(settings);
  Reply got = client->CallAsync(kGet, std::string(100 * 1024, 'm')).get();
  ASSERT_TRUE(got.status.ok()) << got.status.message;
  EXPECT_EQ(ToldTimeout(), Duration(seconds(10)));
}

// An injected delay stands for a slow network: the attempt is on its way
// (sent) while it lasts, and the server hears of what is left after it.
// The delay's layer tells the attempt it was sent before the layers below
// it have started, so a field written when the attempt is sent would be
// missing here.
TEST_F(GrpcTimeoutTest, AnInjectedDelayIsNotTheServers) {
  network_.Add("files", 9090, "127.0.0.1", server_->port());
  Settings settings = DefaultSettings();
  settings.faults.enabled = true;
  auto client = Make(settings);
  Context context;
  context.baggage = {{"outbound-fault", "grpc:files:9090=delay:2s", ""}};
  auto reply = client->CallAsync(kGet, "", context);
  ASSERT_TRUE(clock_.WaitForTimerBy(clock_.Now() + seconds(2)));
  clock_.Advance(seconds(2));
  Reply got = reply.get();
  ASSERT_TRUE(got.status.ok()) << got.status.message;
  EXPECT_EQ(ToldTimeout(), Duration(seconds(8)));
}

// With nothing in the way, the whole of the call's time.
TEST_F(GrpcTimeoutTest, AnAttemptSentAtOnceTellsTheWholeTimeout) {
  network_.Add("files", 9090, "127.0.0.1", server_->port());
  auto client = Make();
  Reply got = client->CallAsync(kGet, "").get();
  ASSERT_TRUE(got.status.ok()) << got.status.message;
  EXPECT_EQ(ToldTimeout(), Duration(seconds(10)));
}

}  // namespace
}  // namespace outbound::rpc
