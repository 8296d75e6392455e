// SPDX-License-Identifier: Apache-2.0
// The call path's own rules: the order of its layers is the one the docs
// show, a layer's per-attempt slot lives and dies with the attempt, the
// transport's news reaches the layers that proceeded, and a layer that
// breaks the protocol is reported, never a crash in a release build.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../../src/http/attempt.h"
#include "../../src/http/call.h"
#include "../../src/http/client_peer.h"
#include "../../src/http/client_telemetry.h"
#include "../../src/http/endpoint_health.h"
#include "../../src/http/layers.h"
#include "outbound/http/client.h"
#include "outbound/http/middleware.h"
#include "outbound/testing/manual_clock.h"

namespace outbound::http::internal {
namespace {

class PassCall final : public CallMiddleware {};
class PassAttempt final : public AttemptMiddleware {};

// The lines of `path` (from the project's root) that show the order:
// "call:    a → b" and "attempt: a → b", with any comment marker before,
// and any continuation lines that start with "→".
std::vector<std::string> OrderLines(const std::string& path, const std::string& label) {
  std::ifstream in(std::string(OUTBOUND_SOURCE_DIR) + "/" + path);
  EXPECT_TRUE(in) << path;
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    std::size_t at = line.find_first_not_of(" /");
    lines.push_back(at == std::string::npos ? "" : line.substr(at));
  }
  std::vector<std::string> found;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind(label, 0) != 0 || lines[i].find("→") == std::string::npos) continue;
    std::string order = lines[i].substr(lines[i].find_first_not_of(' ', label.size()));
    // A line too long for a header goes on with "→ ..." on the next.
    while (i + 1 < lines.size() && lines[i + 1].rfind("→", 0) == 0) order += " " + lines[++i];
    found.push_back(order);
  }
  return found;
}

TEST(CallPathTest, TheDocsShowTheOrderTheCodeBuilds) {
  Settings settings = DefaultSettings();
  settings.base_url = "http://payments:8080";
  settings.call_middleware = {std::make_shared<PassCall>()};
  settings.attempt_middleware = {std::make_shared<PassAttempt>()};
  settings.bulkhead = Bulkhead{.max_calls = 100};
  settings.rate_limit = WithRateLimit(100);
  settings.adaptive_concurrency = AdaptiveConcurrency{};
  settings.balancing = Balancing{};
  settings.faults.enabled = true;
  auto client = Client::CreateOrThrow(Runtime{}, settings);
  std::string calls = ClientPeer::CallLayers(*client);
  std::string attempts = ClientPeer::AttemptLayers(*client);
  EXPECT_EQ(calls,
            "call middleware → bulkhead → rate limit → adaptive concurrency → redirects → retry "
            "loop");
  EXPECT_EQ(attempts,
            "attempt span → breaker → outlier detection → classify → attempt middleware → "
            "attempt timeout → fault injection → transport");
  for (const char* doc : {"README.md", "docs/http-client.md", "docs/middleware.md",
                          "docs/internals.md", "include/outbound/http/client.h",
                          "include/outbound/http/middleware.h", "src/http/layers.h"}) {
    EXPECT_EQ(OrderLines(doc, "call:"), std::vector<std::string>{calls}) << doc;
    EXPECT_EQ(OrderLines(doc, "attempt:"), std::vector<std::string>{attempts}) << doc;
  }
}

TEST(CallPathTest, ALayerThatIsOffIsNotInTheList) {
  Settings settings = DefaultSettings();
  settings.base_url = "http://payments:8080";
  auto client = Client::CreateOrThrow(Runtime{}, settings);
  EXPECT_EQ(ClientPeer::CallLayers(*client), "redirects → retry loop");
  EXPECT_EQ(ClientPeer::AttemptLayers(*client),
            "attempt span → breaker → classify → attempt timeout → transport");
}

TEST(CallPathTest, ALayerSwitchedOnWhileCallsGoJoinsTheListAndLeavesItSwitchedOff) {
  Settings settings = DefaultSettings();
  settings.base_url = "http://payments:8080";
  auto client = Client::CreateOrThrow(Runtime{}, settings);
  ASSERT_TRUE(client->SetRateLimit(WithRateLimit(10)));
  client->SetFaults(FaultSettings{.enabled = true});
  EXPECT_EQ(ClientPeer::CallLayers(*client), "rate limit → redirects → retry loop");
  EXPECT_EQ(ClientPeer::AttemptLayers(*client),
            "attempt span → breaker → classify → attempt timeout → fault injection → transport");
  ASSERT_TRUE(client->SetRateLimit(std::nullopt));
  client->SetFaults(FaultSettings{});
  EXPECT_EQ(ClientPeer::CallLayers(*client), "redirects → retry loop");
  EXPECT_EQ(ClientPeer::AttemptLayers(*client),
            "attempt span → breaker → classify → attempt timeout → transport");
  // A limit Settings would refuse is refused here too, and changes nothing.
  auto refused = client->SetRateLimit(WithRateLimit(-1));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind(), ErrorKind::kInvalidSettings);
  EXPECT_EQ(client->rate_limit(), std::nullopt);
}

// --- Paths made by hand: layers that do one thing each ---

struct EventLog {
  std::vector<std::string> lines;
};

// Counts its slots' lives; records what it hears; hands every attempt on.
class Listening final : public AttemptLayer, public AttemptListener {
 public:
  struct Slot {
    Slot() { ++made; }
    ~Slot() { ++destroyed; }
    int value = 0;
    static inline int made = 0;
    static inline int destroyed = 0;
  };
  Listening(AttemptSlots& slots, EventLog& heard) : slot_(slots.Declare<Slot>()), heard_(heard) {}
  std::string_view name() const override { return "listening"; }
  void Start(Attempt& attempt) override {
    attempt.slot(slot_).value = attempt.number;
    attempt.Proceed(*this);
  }
  void Finish(Attempt& attempt, AttemptOutcome&) override {
    heard_.lines.push_back("finish " + std::to_string(attempt.slot(slot_).value));
  }
  void Heard(Attempt&, AttemptEvent event, TimePoint) override {
    heard_.lines.push_back(event == AttemptEvent::kSent              ? "sent"
                           : event == AttemptEvent::kAwaitingHeaders ? "awaiting"
                                                                     : "headers");
  }

 private:
  AttemptSlots::Index<Slot> slot_;
  EventLog& heard_;
};

// Keeps the attempts it is given; the test plays the transport.
class HeldTransport final : public AttemptLayer {
 public:
  std::string_view name() const override { return "transport"; }
  void Start(Attempt& attempt) override {
    ASSERT_TRUE(attempt.Launch());
    held.push_back(attempt.shared_from_this());
  }
  void Finish(Attempt&, AttemptOutcome&) override {}
  std::vector<std::shared_ptr<Attempt>> held;
};

// Hands the attempt on twice, or past the end of the path.
class Misbehaving final : public AttemptLayer {
 public:
  explicit Misbehaving(int proceeds) : proceeds_(proceeds) {}
  std::string_view name() const override { return "misbehaving"; }
  void Start(Attempt& attempt) override {
    for (int i = 0; i < proceeds_; ++i) attempt.Proceed(*this);
  }
  void Finish(Attempt&, AttemptOutcome&) override {}

 private:
  int proceeds_;
};

// Ends every attempt it is given with a 200.
class AnsweringTransport final : public AttemptLayer {
 public:
  std::string_view name() const override { return "transport"; }
  void Start(Attempt& attempt) override {
    AttemptOutcome outcome;
    outcome.result = Response{.status = 200};
    attempt.End(std::move(outcome));
  }
  void Finish(Attempt&, AttemptOutcome&) override {}
};

struct RecordingOwner final : AttemptOwner {
  void Ended(AttemptOutcome&& outcome) override { outcomes.push_back(std::move(outcome)); }
  std::vector<AttemptOutcome> outcomes;
};

class AttemptPathTest : public ::testing::Test {
 protected:
  std::shared_ptr<Attempt> NewAttempt(const AttemptPath& path, int number = 1) {
    auto attempt = std::make_shared<Attempt>(path, clock);
    attempt->request = std::make_shared<const CallRequest>();
    attempt->call = call;
    attempt->owner = owner;
    attempt->number = number;
    return attempt;
  }
  testing::ManualClock clock;
  std::shared_ptr<CallState> call =
      std::make_shared<CallState>(TimePoint{} + std::chrono::hours(1), nullptr);
  std::shared_ptr<RecordingOwner> owner = std::make_shared<RecordingOwner>();
  // A path of a Listening layer over a HeldTransport (`held`).
  std::unique_ptr<AttemptPath> ListeningPath(EventLog& heard, HeldTransport*& held) {
    AttemptSlots slots;
    std::vector<std::unique_ptr<AttemptLayer>> layers;
    layers.push_back(std::make_unique<Listening>(slots, heard));
    auto transport = std::make_unique<HeldTransport>();
    held = transport.get();
    layers.push_back(std::move(transport));
    return std::make_unique<AttemptPath>(std::move(slots), std::move(layers), report);
  }

  std::vector<std::string> misuses;
  std::function<void(std::string_view)> report = [this](std::string_view what) {
    misuses.emplace_back(what);
  };
};

TEST_F(AttemptPathTest, EachAttemptHasItsOwnSlotsForItsLife) {
  EventLog heard;
  HeldTransport* transport = nullptr;
  auto path_made = ListeningPath(heard, transport);
  AttemptPath& path = *path_made;
  HeldTransport& held = *transport;
  int made = Listening::Slot::made, destroyed = Listening::Slot::destroyed;
  {
    auto first = NewAttempt(path, 1);
    auto second = NewAttempt(path, 2);
    EXPECT_EQ(Listening::Slot::made, made + 2);
    first->Begin();
    second->Begin();
    ASSERT_EQ(held.held.size(), 2u);
    AttemptOutcome outcome;
    outcome.result = Response{.status = 200};
    EXPECT_TRUE(second->End(std::move(outcome)));
    EXPECT_TRUE(first->End(first->CancelledOutcome()));
    EXPECT_EQ(heard.lines, (std::vector<std::string>{"finish 2", "finish 1"}));
    EXPECT_EQ(Listening::Slot::destroyed, destroyed);
    held.held.clear();
  }
  EXPECT_EQ(Listening::Slot::destroyed, destroyed + 2);
  EXPECT_TRUE(misuses.empty());
}

TEST_F(AttemptPathTest, TheLayersThatProceededHearTheTransportsNewsUntilTheAttemptEnds) {
  EventLog heard;
  HeldTransport* transport = nullptr;
  auto path_made = ListeningPath(heard, transport);
  AttemptPath& path = *path_made;
  HeldTransport& held = *transport;

  auto attempt = NewAttempt(path);
  attempt->Begin();
  EXPECT_TRUE(attempt->Sent(TimePoint{}));
  EXPECT_TRUE(attempt->Sent(TimePoint{}));  // once
  attempt->HeadersArrived(TimePoint{});
  EXPECT_EQ(heard.lines, (std::vector<std::string>{"sent", "awaiting", "headers"}));
  EXPECT_EQ(call->attempts_sent.load(), 1);

  // An attempt that ended hears nothing more of its headers' wait.
  auto late = NewAttempt(path, 2);
  late->Begin();
  EXPECT_TRUE(late->End(late->CancelledOutcome()));
  EXPECT_FALSE(late->Sent(TimePoint{}));  // and is not to be sent
  EXPECT_EQ(heard.lines, (std::vector<std::string>{"sent", "awaiting", "headers", "finish 2"}));
  held.held.clear();
}

TEST_F(AttemptPathTest, AStreamedBodyIsOwedItsHeadersOnlyOnceItHasGone) {
  EventLog heard;
  AttemptSlots slots;
  std::vector<std::unique_ptr<AttemptLayer>> layers;
  layers.push_back(std::make_unique<Listening>(slots, heard));
  layers.push_back(std::make_unique<HeldTransport>());
  AttemptPath path(std::move(slots), std::move(layers), report);
  auto attempt = NewAttempt(path);
  auto request = std::make_shared<CallRequest>();
  request->body_source.open = [] { return BodyReader(); };
  attempt->request = request;
  attempt->Begin();
  EXPECT_TRUE(attempt->Sent(TimePoint{}));
  EXPECT_EQ(heard.lines, std::vector<std::string>{"sent"});
  attempt->RequestBodySent(TimePoint{});
  EXPECT_EQ(heard.lines, (std::vector<std::string>{"sent", "awaiting"}));
  EXPECT_TRUE(attempt->End(attempt->CancelledOutcome()));
}

TEST_F(AttemptPathTest, ALayerThatProceedsPastTheTransportFailsItsAttemptAndIsReported) {
  std::vector<std::unique_ptr<AttemptLayer>> layers;
  layers.push_back(std::make_unique<Misbehaving>(1));  // the last: nothing to proceed to
  AttemptPath path(AttemptSlots{}, std::move(layers), report);
  auto attempt = NewAttempt(path);
  EXPECT_DEBUG_DEATH(attempt->Begin(), "broke the attempt path's protocol");
#ifdef NDEBUG
  ASSERT_EQ(owner->outcomes.size(), 1u);
  ASSERT_FALSE(owner->outcomes[0].result);
  EXPECT_EQ(owner->outcomes[0].result.error().kind(), ErrorKind::kLocalResource);
  EXPECT_EQ(misuses, std::vector<std::string>{
                         "misbehaving handed on an attempt it was not running, or past the "
                         "transport"});
#endif
}

TEST_F(AttemptPathTest, ALayerThatProceedsTwiceIsReportedAndTheFirstEndStands) {
  std::vector<std::unique_ptr<AttemptLayer>> layers;
  layers.push_back(std::make_unique<Misbehaving>(2));
  layers.push_back(std::make_unique<AnsweringTransport>());
  AttemptPath path(AttemptSlots{}, std::move(layers), report);
  auto attempt = NewAttempt(path);
  EXPECT_DEBUG_DEATH(attempt->Begin(), "broke the attempt path's protocol");
#ifdef NDEBUG
  ASSERT_EQ(owner->outcomes.size(), 1u);
  ASSERT_TRUE(owner->outcomes[0].result);
  EXPECT_EQ(owner->outcomes[0].result->status, 200);
  EXPECT_EQ(misuses.size(), 1u);
#endif
}

// A call layer that ends the call it was given twice.
class EndsTwice final : public CallLayer {
 public:
  std::string_view name() const override { return "ends twice"; }
  void Send(CallState& call) override {
    CallOutcome first;
    first.result = Response{.status = 200};
    call.End(std::move(first));
    call.End(CallOutcome{});
  }
  bool Finish(CallState&, CallOutcome&) override { return true; }
};

TEST(CallPathMisuseTest, ACallEndedTwiceIsReportedAndTheFirstEndStands) {
  std::vector<std::string> misuses;
  std::vector<std::unique_ptr<CallLayer>> layers;
  layers.push_back(std::make_unique<EndsTwice>());
  CallPath path(std::move(layers), [&](std::string_view what) { misuses.emplace_back(what); });
  auto call = std::make_shared<CallState>(TimePoint{} + std::chrono::hours(1), nullptr);
  std::vector<int> statuses;
  call->done = [&](CallOutcome&& outcome) {
    statuses.push_back(outcome.result ? outcome.result->status : 0);
  };
  EXPECT_DEBUG_DEATH(call->Begin(path), "broke the call path's protocol");
#ifdef NDEBUG
  EXPECT_EQ(statuses, std::vector<int>{200});
  EXPECT_EQ(misuses, std::vector<std::string>{"a call was ended twice"});
#endif
}

// Outlier detection hears each attempt's verdict for the endpoint that
// carried it: an attempt the breaker ignores (a cancel, a hedge that lost)
// says nothing of the endpoint, so failures around it are still a run.
TEST_F(AttemptPathTest, OutlierDetectionTakesAnIgnoredAttemptForNothing) {
  EventLog heard;
  HeldTransport* held = nullptr;
  auto path = ListeningPath(heard, held);
  auto attempt = NewAttempt(*path);
  ClientTelemetry telemetry(telemetry::Telemetry{}, Origin{"https", "payments", 8443}, clock);
  auto layer = MakeOutlierDetection(telemetry);
  auto detector = std::make_shared<OutlierDetector>(OutlierDetection{.consecutive_failures = 2});
  auto endpoint = detector->Track(1, "10.0.0.7:8443");
  auto other = detector->Track(2, "10.0.0.8:8443");
  // Whether an attempt with this verdict ejected the endpoint.
  auto ends = [&](circuit::Outcome breaker) {
    AttemptOutcome outcome;
    outcome.result = Fail(ErrorKind::kTransport, "reset");
    outcome.ended = clock.Now();  // as Attempt::End sets it
    outcome.endpoint = endpoint;
    outcome.classification = Classification{.breaker = breaker};
    layer->Finish(*attempt, outcome);
    return outcome.ejected_endpoint;
  };
  EXPECT_FALSE(ends(circuit::Outcome::kFailure));
  EXPECT_FALSE(ends(circuit::Outcome::kIgnored));
  EXPECT_TRUE(ends(circuit::Outcome::kFailure)) << "the ignored attempt ended the run";
  EXPECT_FALSE(endpoint->Available(clock.Now()));
}

// Outlier detection over two endpoints, each failure on one reported
// through the layer as the classify layer below would hand it on.
class OutlierTakingTest : public AttemptPathTest {
 protected:
  void Detect(OutlierDetection settings) {
    detector = std::make_shared<OutlierDetector>(settings);
    first = detector->Track(1, "10.0.0.7:8443");
    second = detector->Track(2, "10.0.0.8:8443");
  }
  // Whether a failure on `endpoint` was taken by its ejection.
  bool Taken(const std::shared_ptr<EndpointHealth>& endpoint) {
    AttemptOutcome outcome;
    outcome.result = Fail(ErrorKind::kTransport, "reset");
    outcome.ended = clock.Now();
    outcome.endpoint = endpoint;
    outcome.classification = Classification{.breaker = circuit::Outcome::kFailure};
    layer->Finish(*attempt, outcome);
    return outcome.endpoint_took_failure;
  }

  EventLog heard;
  HeldTransport* held = nullptr;
  std::unique_ptr<AttemptPath> path = ListeningPath(heard, held);
  std::shared_ptr<Attempt> attempt = NewAttempt(*path);
  ClientTelemetry telemetry{telemetry::Telemetry{}, Origin{"https", "payments", 8443}, clock};
  std::unique_ptr<AttemptLayer> layer = MakeOutlierDetection(telemetry);
  std::shared_ptr<OutlierDetector> detector;
  std::shared_ptr<EndpointHealth> first, second;
};

// A failure that ejects its endpoint, or comes from one already out, is
// the endpoint's alone (the breaker above does not count it); the run's
// earlier failures, and any failure of an endpoint that may not be
// ejected, are the dependency's.
TEST_F(OutlierTakingTest, TheFailuresOfAnEndpointItEjectsAreTheEndpoints) {
  Detect({.consecutive_failures = 2, .max_ejected_share = 0.5});
  EXPECT_FALSE(Taken(first));
  EXPECT_TRUE(Taken(first)) << "the failure that ejects it";
  EXPECT_TRUE(Taken(first)) << "one under way as it went out";
  // Of two endpoints one may be out: the other's failures are the
  // dependency's, for the breaker to count.
  EXPECT_FALSE(Taken(second));
  EXPECT_FALSE(Taken(second));
  EXPECT_FALSE(Taken(second));
  EXPECT_TRUE(second->Available(clock.Now()));
}

// With every endpoint allowed out (a max_ejected_share of 1), the last one
// ejected leaves none serving: its failures are the dependency's, and the
// breaker counts them.
TEST_F(OutlierTakingTest, TheLastEndpointsFailuresAreLeftToTheBreaker) {
  Detect({.consecutive_failures = 1, .max_ejected_share = 1.0});
  EXPECT_TRUE(Taken(first)) << "the second still serves";
  EXPECT_FALSE(Taken(second)) << "ejected too, it leaves none";
  EXPECT_FALSE(second->Available(clock.Now()));
  EXPECT_FALSE(Taken(first));
}

}  // namespace
}  // namespace outbound::http::internal
