// SPDX-License-Identifier: Apache-2.0
// A name with several addresses (RFC 8305, Happy Eyeballs): a first address
// whose dial goes unanswered (a black hole, as a broken IPv6 path is) costs
// the connection attempt delay of 250 ms, not the attempt: the next
// address is dialled beside it then, and the first to answer is kept. The
// families take turns in the dialling order.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "../../src/http/transport/resolver.h"
#include "client_test_support.h"
#include "outbound/testing/black_hole.h"

namespace outbound::http {
namespace {

namespace transport = internal::transport;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::Reply;
using testing::ServerRequest;

class HappyEyeballsTest : public ClientTestBase, public ::testing::Test {
 protected:
  // payments:8443 reaches a black hole first, then the fake server.
  void HoleThenServer() {
    auto started = testing::BlackHole::Start();
    ASSERT_TRUE(started) << started.error().message();
    hole = std::move(*started);
    Serve([](const ServerRequest&) { return Reply::Ok("second"); });
    network.Set("payments", 8443, {{"127.0.0.1", hole->port()}, {"127.0.0.1", server->port()}});
  }

  // Waits (a safety net of 10 s real time) until `n` dials wait at
  // `at` (connects in SYN_SENT there), the test's hole by default.
  bool DialsAtTheHole(int n, const testing::BlackHole* at = nullptr) {
    if (at == nullptr) at = hole.get();
    auto give_up = std::chrono::steady_clock::now() + seconds(10);
    while (at->dials() != n) {
      if (std::chrono::steady_clock::now() >= give_up) return false;
      std::this_thread::yield();
    }
    return true;
  }

  std::unique_ptr<testing::BlackHole> hole;
};

TEST_F(HappyEyeballsTest, AnUnansweredFirstAddressCostsTheAttemptDelayNotTheAttempt) {
  HoleThenServer();
  auto client = MakeClient();
  TimePoint start = clock.Now();
  auto call = client->SendAsync(Request::Get("/"));
  ASSERT_TRUE(DialsAtTheHole(1));
  // The call's deadline, its attempt's timeout and the next dial.
  ASSERT_TRUE(clock.WaitForTimers(3));
  EXPECT_EQ(server->connections_opened(), 0);
  clock.Advance(milliseconds(250));
  ASSERT_EQ(call.wait_for(seconds(10)), std::future_status::ready)
      << "the second address was not dialled at 250 ms";
  auto response = call.get();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->body, "second");
  EXPECT_EQ(response->attempts, 1);
  EXPECT_EQ(clock.Now() - start, milliseconds(250));
  EXPECT_EQ(server->connections_opened(), 1);
  // The dial left unanswered is closed (no socket waits at the hole).
  EXPECT_TRUE(DialsAtTheHole(0));
  // The winner is kept: later calls go on it.
  ASSERT_TRUE(client->Send(Request::Get("/")));
  EXPECT_EQ(server->connections_opened(), 1);
}

// The address outrun goes last from then on: the next connection (after
// the first closed, idle) dials the one that answered first, and costs no
// delay.
TEST_F(HappyEyeballsTest, TheAddressOutrunIsDialledLastAfterwards) {
  HoleThenServer();
  auto client = MakeClient();
  auto call = client->SendAsync(Request::Get("/"));
  ASSERT_TRUE(DialsAtTheHole(1));
  ASSERT_TRUE(clock.WaitForTimers(3));
  clock.Advance(milliseconds(250));
  ASSERT_EQ(call.wait_for(seconds(10)), std::future_status::ready);
  ASSERT_TRUE(call.get());
  ASSERT_TRUE(clock.WaitForTimerBy(clock.Now() + seconds(90)));
  clock.Advance(seconds(90));  // the idle close
  ASSERT_TRUE(
      server->WaitFor([](const testing::FakeServer& s) { return s.connections_open() == 0; }));
  auto next = client->SendAsync(Request::Get("/"));  // no time passes
  ASSERT_EQ(next.wait_for(seconds(10)), std::future_status::ready)
      << "the next connection dialled the outrun address first";
  auto response = next.get();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(server->connections_opened(), 2);
}

// A first address that refuses is no reason to wait: the next is dialled
// at once, with no time passing (the test never moves the clock).
TEST_F(HappyEyeballsTest, ARefusedFirstAddressIsFollowedAtOnce) {
  Serve([](const ServerRequest&) { return Reply::Ok("second"); });
  network.Set("payments", 8443,
              {{"127.0.0.1", testing::PortNothingListensOn()}, {"127.0.0.1", server->port()}});
  auto client = MakeClient();
  auto call = client->SendAsync(Request::Get("/"));
  ASSERT_EQ(call.wait_for(seconds(10)), std::future_status::ready)
      << "the second address waited for the attempt delay";
  auto response = call.get();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->body, "second");
  EXPECT_EQ(response->attempts, 1);
}

// A dial begun because the one before it was refused has a delay of its
// own: the address after it is dialled 250 ms after it began, not 250 ms
// after the first (RFC 8305 §5).
TEST_F(HappyEyeballsTest, ADialBegunOnARefusalHasItsOwnDelayBeforeTheNext) {
  std::array<std::unique_ptr<testing::BlackHole>, 3> holes;
  std::vector<Endpoint> endpoints;
  for (auto& h : holes) {
    auto started = testing::BlackHole::Start();
    ASSERT_TRUE(started) << started.error().message();
    h = std::move(*started);
    endpoints.push_back({"127.0.0.1", h->port()});
  }
  network.Set("payments", 8443, endpoints);
  auto client = MakeClient();
  TimePoint start = clock.Now();
  auto call = client->SendAsync(Request::Get("/"));
  ASSERT_TRUE(DialsAtTheHole(1, holes[0].get()));
  ASSERT_TRUE(clock.WaitForTimers(3));
  clock.Advance(milliseconds(100));
  // The first host goes: its waiting dial is refused at its next SYN (a
  // second or so of real time), and the second address is dialled at once.
  holes[0].reset();
  ASSERT_TRUE(DialsAtTheHole(1, holes[1].get()));
  clock.Advance(milliseconds(150));
  // 250 ms after the first dial, 150 after the second: the third waits,
  // its dial now timed from the second's.
  ASSERT_TRUE(clock.WaitForTimerBy(start + milliseconds(350)))
      << "the third address was dialled 250 ms after the first dial";
  EXPECT_EQ(holes[2]->dials(), 0);
  clock.AdvanceTo(start + milliseconds(350));
  EXPECT_TRUE(DialsAtTheHole(1, holes[2].get()));
  EXPECT_EQ(call.wait_for(seconds(0)), std::future_status::timeout);
}

// Every address unanswered: each is dialled in turn at 250 ms, and the
// attempt ends at its own timeout, as with one address.
TEST_F(HappyEyeballsTest, NoAddressAnsweringEndsTheAttemptAtItsTimeout) {
  auto started = testing::BlackHole::Start();
  ASSERT_TRUE(started) << started.error().message();
  hole = std::move(*started);
  network.Set("payments", 8443, {{"127.0.0.1", hole->port()}, {"127.0.0.1", hole->port()}});
  Settings settings = PaymentsSettings();
  settings.max_attempts = 1;
  auto client = MakeClient(settings);
  auto call = client->SendAsync(Request::Get("/"));
  ASSERT_TRUE(DialsAtTheHole(1));
  ASSERT_TRUE(clock.WaitForTimers(3));
  clock.Advance(milliseconds(250));
  // The second dial: the hole counts it.
  EXPECT_TRUE(DialsAtTheHole(2));
  clock.Advance(settings.attempt_timeout - milliseconds(250));
  ASSERT_EQ(call.wait_for(seconds(10)), std::future_status::ready);
  auto response = call.get();
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().kind(), ErrorKind::kDeadline) << response.error().message();
}

// An IP literal's address, port 0.
transport::SocketAddress At(const char* ip) { return *transport::Literal(ip, 0); }

std::vector<std::string> Texts(const std::vector<transport::SocketAddress>& addresses) {
  std::vector<std::string> texts;
  for (const auto& a : addresses) texts.push_back(transport::Text(a));
  return texts;
}

TEST(InterleaveFamiliesTest, TheFamiliesTakeTurnsFirstFamilyFirst) {
  EXPECT_EQ(
      Texts(transport::InterleaveFamilies({At("2001:db8::1"), At("2001:db8::2"), At("2001:db8::3"),
                                           At("192.0.2.1"), At("192.0.2.2")})),
      (std::vector<std::string>{"[2001:db8::1]:0", "192.0.2.1:0", "[2001:db8::2]:0", "192.0.2.2:0",
                                "[2001:db8::3]:0"}));
  EXPECT_EQ(
      Texts(transport::InterleaveFamilies({At("192.0.2.1"), At("192.0.2.2"), At("2001:db8::1")})),
      (std::vector<std::string>{"192.0.2.1:0", "[2001:db8::1]:0", "192.0.2.2:0"}));
  // One family: as it was.
  EXPECT_EQ(
      Texts(transport::InterleaveFamilies({At("192.0.2.3"), At("192.0.2.1"), At("192.0.2.2")})),
      (std::vector<std::string>{"192.0.2.3:0", "192.0.2.1:0", "192.0.2.2:0"}));
}

}  // namespace
}  // namespace outbound::http
