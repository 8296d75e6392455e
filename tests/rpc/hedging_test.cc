// SPDX-License-Identifier: Apache-2.0
// Hedging on the gRPC client (rpc::Settings::hedging), through the one call
// core's retry loop: a slow unary call to a method safe to send twice gets
// a hedge whose answer wins; a method in non_idempotent_methods and a
// server stream never do. On the kit's FakeTransport, in fake time.
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "methods.h"
#include "outbound/rpc/client.h"
#include "outbound/testing/fake_transport.h"
#include "outbound/testing/fixed_random.h"
#include "outbound/testing/manual_clock.h"
#include "outbound/testing/telemetry.h"

namespace outbound::rpc {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class HedgingRpcTest : public ::testing::Test {
 protected:
  HedgingRpcTest()
      : transport_(clock_, [this](const testing::ServerRequest& request) {
          std::lock_guard lock(mu_);
          // Each method's first call is slow, any later one fast.
          int seen = seen_[request.target]++;
          return testing::Reply::Ok(std::string(5, '\0'))
              .Header("content-type", "application/grpc")
              .Trailer("grpc-status", "0")
              .DelayHeaders(seen == 0 ? seconds(1) : milliseconds(10));
        }) {
    runtime_.clock = &clock_;
    runtime_.random = &random_;
    runtime_.transport = &transport_;
    runtime_.telemetry = recorded_.telemetry();
  }

  std::unique_ptr<Client> Make() {
    Settings settings = DefaultSettings();
    settings.addr = "carts:9090";
    settings.non_idempotent_methods = {kCharge};
    settings.hedging = http::Hedging{.delay = milliseconds(50)};
    auto client = Client::Create(runtime_, std::move(settings));
    EXPECT_TRUE(client) << client.error().message();
    return client ? std::move(*client) : nullptr;
  }

  struct Ended {
    Reply reply;
    Duration took{0};
  };

  // Calls `method` and moves the clock a millisecond at a time until the
  // reply has come. The reply comes from the client's loop: once an
  // attempt's span has ended, the clock waits a moment for it.
  Ended Run(Client& client, std::string_view method) {
    auto ended = std::make_shared<std::promise<Ended>>();
    TimePoint start = clock_.Now();
    std::size_t spans = recorded_.Spans(telemetry::SpanKind::kClient).size();
    client.CallAsync(method, "x", [this, ended, start](Reply reply, std::exception_ptr) {
      ended->set_value(Ended{std::move(reply), clock_.Now() - start});
    });
    auto future = ended->get_future();
    while (future.wait_for(Duration::zero()) != std::future_status::ready &&
           clock_.Now() - start < seconds(5)) {
      clock_.Advance(milliseconds(1));
      std::size_t now = recorded_.Spans(telemetry::SpanKind::kClient).size();
      if (now != spans) (void)future.wait_for(seconds(1));
      spans = now;
    }
    EXPECT_EQ(future.wait_for(seconds(10)), std::future_status::ready);
    return future.get();
  }

  double Counted(std::string_view decision, std::string_view reason) {
    return recorded_.Value("outbound.retry.decisions",
                           {{"decision", decision}, {"reason", reason}});
  }

  testing::ManualClock clock_;
  testing::FixedRandom random_{0.0};
  testing::InMemoryTelemetry recorded_{DefaultRandom()};
  std::mutex mu_;
  std::map<std::string, int> seen_;  // guarded by mu_
  testing::FakeTransport transport_;
  Runtime runtime_;
};

TEST_F(HedgingRpcTest, ASlowUnaryCallIsHedgedAndTheHedgesAnswerWins) {
  auto client = Make();
  Ended call = Run(*client, kGet);
  EXPECT_EQ(call.reply.status.code, Code::kOk) << call.reply.status.message;
  EXPECT_EQ(call.took, milliseconds(60));
  EXPECT_EQ(transport_.request_count(), 2u);
  EXPECT_EQ(transport_.cancelled(), 1);
  EXPECT_EQ(Counted("again", "hedge"), 1);
  EXPECT_EQ(Counted("stopped", "hedge_won"), 1);
  int hedge_spans = 0;
  for (const auto& span : recorded_.Spans(telemetry::SpanKind::kClient)) {
    const telemetry::Value* hedge = telemetry::Find(span.attributes, "outbound.attempt.hedge");
    if (hedge != nullptr && std::get<bool>(*hedge)) ++hedge_spans;
  }
  EXPECT_EQ(hedge_spans, 1);
}

TEST_F(HedgingRpcTest, AMethodNotSafeToSendTwiceIsNeverHedged) {
  auto client = Make();
  Ended call = Run(*client, kCharge);
  EXPECT_EQ(call.reply.status.code, Code::kOk) << call.reply.status.message;
  EXPECT_EQ(call.took, seconds(1));
  EXPECT_EQ(transport_.request_count(), 1u);
  EXPECT_EQ(Counted("again", "hedge"), 0);
}

TEST_F(HedgingRpcTest, AServerStreamIsNeverHedged) {
  auto client = Make();
  TimePoint start = clock_.Now();
  auto reply = std::async(std::launch::async, [&] {
    return client->ServerStream(kWatch, "x", [](std::string_view) {});
  });
  // The stream's answer comes at 1s; a hedge would have gone at 50ms. The
  // clock moves once the answer's timer is armed (the transport records
  // the request a moment before it arms the timer: moved from then, the
  // clock could pass 1 s first), a millisecond at a time.
  EXPECT_TRUE(clock_.WaitForTimerBy(start + seconds(1)));
  while (reply.wait_for(milliseconds(0)) != std::future_status::ready &&
         clock_.Now() - start < seconds(5)) {
    clock_.Advance(milliseconds(1));
  }
  // A safety net, not a tolerance: a stream that never ends is a failure,
  // and the clock then moves past its deadline so that it does.
  if (reply.wait_for(seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "the stream did not end";
    clock_.Advance(std::chrono::hours(1));
  }
  EXPECT_EQ(reply.get().status.code, Code::kOk);
  EXPECT_EQ(transport_.request_count(), 1u);
  EXPECT_EQ(Counted("again", "hedge"), 0);
}

}  // namespace
}  // namespace outbound::rpc
