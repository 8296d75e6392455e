// SPDX-License-Identifier: Apache-2.0
// grpc-timeout tells the server the call's time left as the attempt is
// written on a ready connection: time the client spent opening one, or in
// an injected delay, is gone from what the server is told (as is what was
// spent of an attempt timeout), so it never works on past the moment the
// client gives up. Against the kit's fake gRPC dependency over h2c on
// loopback, on the manual clock.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "outbound/rpc/client.h"
#include "outbound/testing/fake_grpc.h"
#include "outbound/testing/manual_clock.h"
#include "outbound/testing/network_map.h"

namespace outbound::rpc {
namespace {

using std::chrono::seconds;
using testing::GrpcReply;

constexpr char kGet[] = "/outbound.test.Files/Get";

// A port on loopback whose first connection is accepted and then held,
// nothing read or written, until Open(); from then on its bytes go both
// ways to `to_port`. A server slow to answer a new connection, whose
// slowness the test decides.
class HeldDoor {
 public:
  explicit HeldDoor(std::uint16_t to_port) : to_port_(to_port) {
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof(address);
    if (bind(listener_, reinterpret_cast<sockaddr*>(&address), size) == 0 &&
        listen(listener_, 4) == 0 &&
        getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &size) == 0) {
      port_ = ntohs(address.sin_port);
    }
    relay_ = std::thread([this] { Relay(); });
  }
  // Ends the relay whatever its ends are doing, then closes them.
  ~HeldDoor() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      for (int fd : {listener_, client_, server_}) {
        if (fd >= 0) shutdown(fd, SHUT_RDWR);
      }
    }
    Open();
    relay_.join();
    for (int fd : {listener_, client_, server_}) {
      if (fd >= 0) close(fd);
    }
  }
  HeldDoor(const HeldDoor&) = delete;
  HeldDoor& operator=(const HeldDoor&) = delete;

  std::uint16_t port() const { return port_; }
  // Waits (10 s of real time at most) until a client's connection is held.
  bool WaitForConnection() {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, seconds(10), [this] { return held_; });
  }
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    changed_.notify_all();
  }

 private:
  void Relay() {
    int client = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) return;
    int server = -1;
    {
      std::unique_lock lock(mu_);
      client_ = client;
      if (stopping_) shutdown(client, SHUT_RDWR);
      held_ = true;
      changed_.notify_all();
      changed_.wait(lock, [this] { return open_; });
      if (stopping_) return;
      server = server_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(to_port_);
    if (connect(server, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
      Pump(client, server);
    }
  }

  // Carries bytes both ways until either end closes.
  static void Pump(int a, int b) {
    std::array<pollfd, 2> ends{{{a, POLLIN, 0}, {b, POLLIN, 0}}};
    std::array<char, 16 * 1024> buffer;
    while (poll(ends.data(), ends.size(), -1) > 0) {
      for (std::size_t i = 0; i < ends.size(); ++i) {
        if (ends[i].revents == 0) continue;
        ssize_t n = read(ends[i].fd, buffer.data(), buffer.size());
        if (n <= 0) return;
        for (ssize_t sent = 0; sent < n;) {
          ssize_t w =
              write(ends[1 - i].fd, buffer.data() + sent, static_cast<std::size_t>(n - sent));
          if (w <= 0) return;
          sent += w;
        }
      }
    }
  }

  std::uint16_t to_port_;
  std::uint16_t port_ = 0;
  int listener_ = -1;
  std::mutex mu_;
  std::condition_variable changed_;
  int client_ = -1;  // guarded by mu_, as are those below
  int server_ = -1;
  bool held_ = false;
  bool open_ = false;
  bool stopping_ = false;
  std::thread relay_;
};

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
