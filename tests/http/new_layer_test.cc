// SPDX-License-Identifier: Apache-2.0
// docs/internals.md, "Adding a layer": the page's example layer, compiled
// and run here on testing::FakeTransport, in a path built as Client::Create
// builds the client's (the span layer above it, the transport below). The
// page quotes the two regions below (scripts/check-doc-examples).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>

#include "../../src/http/attempt.h"
#include "../../src/http/client_telemetry.h"
#include "../../src/http/layers.h"
#include "../../src/http/transport_spec.h"
#include "outbound/testing/fake_transport.h"
#include "outbound/testing/manual_clock.h"
#include "outbound/testing/telemetry.h"

namespace outbound::http::internal {
namespace {

// [example time-to-headers]
class TimeToHeaders final : public AttemptLayer, public AttemptListener {
 public:
  explicit TimeToHeaders(AttemptSlots& slots) : slot_(slots.Declare<PerAttempt>()) {}

  std::string_view name() const override { return "time to headers"; }

  void Start(Attempt& attempt) override { attempt.Proceed(*this); }

  // kHeaders comes without the attempt's lock, maybe while Finish runs on
  // another thread: the slot is an atomic.
  void Heard(Attempt& attempt, AttemptEvent event, TimePoint now) override {
    if (event == AttemptEvent::kHeaders) {
      attempt.slot(slot_).took.store((now - attempt.started).count());
    }
  }

  // Before the attempt span's Finish, which ends the span.
  void Finish(Attempt& attempt, AttemptOutcome&) override {
    std::int64_t took = attempt.slot(slot_).took.load();
    if (took >= 0 && attempt.span != nullptr) {
      attempt.span->SetAttribute({"outbound.attempt.time_to_headers_ns", took});
    }
  }

 private:
  struct PerAttempt {
    std::atomic<std::int64_t> took{-1};
  };
  AttemptSlots::Index<PerAttempt> slot_;
};

std::unique_ptr<AttemptLayer> MakeTimeToHeaders(AttemptSlots& slots) {
  return std::make_unique<TimeToHeaders>(slots);
}
// [end time-to-headers]

struct Owner final : AttemptOwner {
  void Ended(AttemptOutcome&& outcome) override { outcomes.push_back(std::move(outcome)); }
  std::vector<AttemptOutcome> outcomes;
};

// [example time-to-headers-test]
TEST(TimeToHeadersTest, TheSpanSaysHowLongTheHeadersTook) {
  testing::ManualClock clock;
  testing::InMemoryTelemetry recorded;
  testing::FakeTransport payments(clock, [](const testing::ServerRequest&) {
    return testing::Reply::Ok("paid").DelayHeaders(std::chrono::milliseconds(250));
  });
  Runtime runtime{.clock = &clock, .telemetry = recorded.telemetry(), .transport = &payments};
  Settings settings{.base_url = "https://payments"};
  Origin origin{"https", "payments", 443};
  ClientTelemetry telemetry(runtime.telemetry, origin, clock);

  // The attempt path, as Client::Create lists it, with the new layer.
  AttemptSlots slots;
  std::vector<std::unique_ptr<AttemptLayer>> layers;
  layers.push_back(MakeAttemptSpan(slots, telemetry));
  layers.push_back(MakeTimeToHeaders(slots));
  layers.push_back(MakeTransportLayer(payments.CarryFor({runtime, settings, origin})));
  AttemptPath path(std::move(slots), std::move(layers), [](std::string_view) {});

  auto owner = std::make_shared<Owner>();
  auto attempt = std::make_shared<Attempt>(path, clock);
  attempt->call = std::make_shared<CallState>(clock.Now() + std::chrono::seconds(5), nullptr);
  attempt->request = std::make_shared<const CallRequest>(
      CallRequest{.method = "GET", .url = "https://payments/charges/1"});
  attempt->owner = owner;
  attempt->started = clock.Now();
  attempt->Begin();
  clock.Advance(std::chrono::milliseconds(250));

  ASSERT_EQ(owner->outcomes.size(), 1u);
  ASSERT_TRUE(owner->outcomes[0].result.has_value());
  auto spans = recorded.Spans(telemetry::SpanKind::kClient);
  ASSERT_EQ(spans.size(), 1u);
  const telemetry::Value* took =
      telemetry::Find(spans[0].attributes, "outbound.attempt.time_to_headers_ns");
  ASSERT_NE(took, nullptr);
  EXPECT_EQ(std::get<std::int64_t>(*took),
            std::chrono::nanoseconds(std::chrono::milliseconds(250)).count());
}
// [end time-to-headers-test]

}  // namespace
}  // namespace outbound::http::internal
