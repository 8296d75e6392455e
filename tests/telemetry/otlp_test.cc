// SPDX-License-Identifier: Apache-2.0
// The OTLP exporter, against a receiver nobody here wrote: otlp_receiver.js
// decodes every request through OpenTelemetry JS's generated OTLP types and
// hands back what they decoded, which is what these tests read. The client
// under test and the exporter share a ManualClock; the FakeServer plays the
// dependency.
#include "outbound/telemetry/otlp.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "../http/client_test_support.h"
#include "../peers/node_peer.h"
#include "outbound/testing/black_hole.h"
#include "outbound/testing/telemetry.h"

namespace outbound::telemetry {
namespace {

using nlohmann::json;
using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::Reply;
using testing::ServerRequest;

std::string UnixNanos(std::chrono::system_clock::time_point t) {
  return std::to_string(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

// The value object ({"stringValue": ...}) of attribute `key`, or null.
json Attr(const json& item, std::string_view key) {
  for (const json& a : item.value("attributes", json::array())) {
    if (a.at("key") == key) return a.at("value");
  }
  return nullptr;
}

json Str(std::string_view s) { return {{"stringValue", s}}; }
json Int(std::int64_t i) { return {{"intValue", std::to_string(i)}}; }

class OtlpTest : public http::ClientTestBase, public ::testing::Test {
 protected:
  OtlpTest() { network.Add("collector", 4318, "127.0.0.1", receiver.port()); }

  // Flushes after an hour only: each test says when to send.
  OtlpSettings Settings() {
    OtlpSettings s;
    s.endpoint = "http://collector:4318";
    s.service_name = "checkout";
    s.flush_interval = hours(1);
    return s;
  }

  // Settings() with the endpoint at another receiver, listening on `port`
  // and reached by the name `host`.
  OtlpSettings SettingsFor(const std::string& host, std::uint16_t port) {
    network.Add(host, 4318, "127.0.0.1", port);
    OtlpSettings s = Settings();
    s.endpoint = "http://" + host + ":4318";
    return s;
  }

  std::unique_ptr<OtlpExporter> MakeExporter(const OtlpSettings& settings) {
    auto exporter = OtlpExporter::Create(runtime, settings);
    EXPECT_TRUE(exporter) << exporter.error().message();
    return exporter ? std::move(*exporter) : nullptr;
  }

  // The requests the receiver decoded on `path`, in arrival order; fails
  // the test on any request it refused.
  std::vector<json> Received(std::string_view path) {
    json stats = receiver.Stats();
    EXPECT_EQ(stats.at("errors"), json::array()) << stats.at("errors").dump(1);
    std::vector<json> out;
    for (const json& r : stats.at("received")) {
      if (r.at("path") == path) out.push_back(r.at("request"));
    }
    return out;
  }

  // Every item under `resource_key` > `scope_key` > `items_key` of the
  // requests on `path`, each with its scope's name as "scope" and its
  // resource as "resource".
  std::vector<json> Items(std::string_view path, const char* resource_key, const char* scope_key,
                          const char* items_key) {
    std::vector<json> out;
    for (const json& request : Received(path)) {
      for (const json& resource : request.at(resource_key)) {
        for (const json& scope : resource.at(scope_key)) {
          for (json item : scope.at(items_key)) {
            item["scope"] = scope.at("scope").at("name");
            item["resource"] = resource.at("resource");
            out.push_back(std::move(item));
          }
        }
      }
    }
    return out;
  }
  std::vector<json> Spans() { return Items("/v1/traces", "resourceSpans", "scopeSpans", "spans"); }
  std::vector<json> Logs() { return Items("/v1/logs", "resourceLogs", "scopeLogs", "logRecords"); }
  std::vector<json> Metrics() {
    return Items("/v1/metrics", "resourceMetrics", "scopeMetrics", "metrics");
  }

  // Polls the receiver (a process: readiness, not timing) until it has
  // decoded `n` requests; gives up after 10 s of real time.
  bool WaitForRequests(std::size_t n) {
    for (int i = 0; i < 1000; ++i) {
      if (receiver.Stats().at("received").size() >= n) return true;
      std::this_thread::sleep_for(milliseconds(10));
    }
    return false;
  }

  peers::NodePeer receiver{OUTBOUND_OTLP_RECEIVER, {"--modules=" OUTBOUND_OTLP_MODULES}};
  MetricStore metrics;
  Random& ids = DefaultRandom();
};

SpanData SomeSpan(Random& random, std::string name) {
  SpanData span;
  span.scope = "test";
  span.name = std::move(name);
  span.context.trace_id = NewTraceId(random);
  span.context.span_id = NewSpanId(random);
  return span;
}

TEST_F(OtlpTest, ARetried503CallsSpansMetricsAndBreakerRecordsAsTheReceiverDecodesThem) {
  int calls = 0;
  Serve([&](const ServerRequest&) {
    if (++calls == 1) return Reply::Status(503).Header("Retry-After", "2");
    return Reply::Ok("ok");
  });
  auto exporter = MakeExporter(Settings());
  ASSERT_TRUE(exporter);
  // Ids from real randomness: the fixture's jitter draws one number always.
  RecordingTracer tracer(ids, *exporter);
  runtime.telemetry = {.tracer = &tracer, .meters = &metrics, .logger = exporter.get()};
  http::Settings settings = PaymentsSettings();
  // The first failure opens the breaker, for less than the Retry-After: the
  // retry is its half-open probe, and closes it. Three log records.
  settings.breaker.open_for = seconds(1);
  settings.breaker_policy.trip = [](const circuit::Counts& c) {
    return c.consecutive_failures >= 1;
  };
  settings.breaker_policy.probe = [](const circuit::Counts& c) {
    return c.successes >= 1 ? circuit::ProbeVerdict::kClose : circuit::ProbeVerdict::kReopen;
  };
  auto client = MakeClient(std::move(settings));

  SpanContext caller;
  caller.trace_id = NewTraceId(ids);
  caller.span_id = NewSpanId(ids);
  http::Request request = http::Request::Get("/charges/1");
  request.context.trace = caller;
  TimePoint start = clock.Now();
  std::string start_unix = UnixNanos(clock.WallNow());
  std::string retry_unix = UnixNanos(clock.WallNow() + seconds(2));
  auto call = client->SendAsync(request);
  ASSERT_TRUE(WaitForAttempts(1));
  ASSERT_TRUE(clock.WaitForTimerBy(start + seconds(2)));
  clock.Advance(seconds(2));
  auto response = call.get();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  auto records = Attempts();
  ASSERT_EQ(records.size(), 2u);

  exporter->ExportMetrics(metrics);
  EXPECT_TRUE(exporter->ForceFlush());
  EXPECT_EQ(exporter->dropped(), 0u);
  EXPECT_EQ(exporter->failed(), 0u);

  // Spans: both attempts, children of the caller's span, in its trace.
  auto spans = Spans();
  ASSERT_EQ(spans.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const json& span = spans[i];
    SCOPED_TRACE(span.dump());
    EXPECT_EQ(Attr(span["resource"], "service.name"), Str("checkout"));
    EXPECT_EQ(span["scope"], "outbound.http");
    EXPECT_EQ(span["name"], "GET");
    EXPECT_EQ(span["kind"], 3);  // SPAN_KIND_CLIENT
    EXPECT_EQ(span["traceId"], caller.trace_id.Hex());
    EXPECT_EQ(span["parentSpanId"], caller.span_id.Hex());
    EXPECT_EQ(span["spanId"], records[i].span_id.Hex());
    EXPECT_EQ(span["flags"], 1);  // sampled
    EXPECT_EQ(Attr(span, "http.request.method"), Str("GET"));
    EXPECT_EQ(Attr(span, "server.address"), Str("payments"));
    EXPECT_EQ(Attr(span, "server.port"), Int(8443));
    EXPECT_EQ(Attr(span, "url.full"), Str("https://payments:8443/charges/1"));
  }
  EXPECT_NE(spans[0]["spanId"], spans[1]["spanId"]);
  // The first attempt ends before the wait; the second starts after it.
  EXPECT_EQ(spans[0]["startTimeUnixNano"], start_unix);
  EXPECT_EQ(spans[0]["endTimeUnixNano"], start_unix);
  EXPECT_EQ(spans[1]["startTimeUnixNano"], retry_unix);
  EXPECT_EQ(spans[1]["endTimeUnixNano"], retry_unix);
  EXPECT_EQ(spans[0]["status"], json({{"code", 2}}));  // STATUS_CODE_ERROR
  EXPECT_FALSE(spans[1].contains("status"));           // unset
  EXPECT_EQ(Attr(spans[0], "http.response.status_code"), Int(503));
  EXPECT_EQ(Attr(spans[0], "error.type"), Str("503"));
  EXPECT_EQ(Attr(spans[0], "http.request.resend_count"), nullptr);
  EXPECT_EQ(Attr(spans[1], "http.request.resend_count"), Int(1));
  EXPECT_EQ(Attr(spans[1], "http.response.status_code"), Int(200));

  // The breaker's records, in the call's trace; the open one in its first
  // attempt's span.
  auto logs = Logs();
  ASSERT_EQ(logs.size(), 3u);
  const json& open = logs[0];
  SCOPED_TRACE(open.dump());
  EXPECT_EQ(open["scope"], "outbound.http");
  EXPECT_EQ(Attr(open["resource"], "service.name"), Str("checkout"));
  EXPECT_EQ(open["severityNumber"], 13);  // SEVERITY_NUMBER_WARN
  EXPECT_EQ(open["severityText"], "WARN");
  EXPECT_EQ(open["body"], Str("circuit breaker open"));
  EXPECT_EQ(open["timeUnixNano"], start_unix);
  EXPECT_EQ(open["traceId"], caller.trace_id.Hex());
  EXPECT_EQ(open["spanId"], records[0].span_id.Hex());
  EXPECT_EQ(Attr(open, "server.address"), Str("payments"));
  EXPECT_EQ(Attr(open, "server.port"), Int(8443));
  EXPECT_EQ(Attr(open, "outbound.circuit.previous_state"), Str("closed"));
  EXPECT_EQ(Attr(open, "outbound.circuit.consecutive_failures"), Int(1));
  EXPECT_EQ(logs[1]["body"], Str("circuit breaker half-open"));
  EXPECT_EQ(logs[1]["severityNumber"], 9);  // SEVERITY_NUMBER_INFO
  EXPECT_EQ(logs[2]["body"], Str("circuit breaker closed"));
  EXPECT_EQ(logs[2]["traceId"], caller.trace_id.Hex());

  // Metrics, cumulative: the breaker's count of each outcome, and the
  // durations (0 s on the manual clock: the first bucket).
  auto metric = [&](std::string_view name) -> json {
    for (const json& m : Metrics()) {
      if (m["name"] == name) return m;
    }
    return nullptr;
  };
  json calls_metric = metric("outbound.circuit.calls");
  ASSERT_FALSE(calls_metric.is_null());
  EXPECT_EQ(calls_metric["scope"], "outbound.http");
  EXPECT_EQ(Attr(calls_metric["resource"], "service.name"), Str("checkout"));
  const json& sum = calls_metric["sum"];
  EXPECT_EQ(sum["isMonotonic"], true);
  EXPECT_EQ(sum["aggregationTemporality"], 2);  // AGGREGATION_TEMPORALITY_CUMULATIVE
  std::map<std::string, double> outcomes;
  for (const json& point : sum["dataPoints"]) {
    EXPECT_EQ(Attr(point, "server.address"), Str("payments"));
    outcomes[Attr(point, "outcome")["stringValue"]] = point["asDouble"];
  }
  EXPECT_EQ(outcomes, (std::map<std::string, double>{{"failure", 1}, {"success", 1}}));

  json duration = metric("http.client.request.duration");
  ASSERT_FALSE(duration.is_null());
  EXPECT_EQ(duration["unit"], "s");
  const json& histogram = duration["histogram"];
  EXPECT_EQ(histogram["aggregationTemporality"], 2);
  ASSERT_EQ(histogram["dataPoints"].size(), 2u);  // by status: 503 and 200
  for (const json& point : histogram["dataPoints"]) {
    SCOPED_TRACE(point.dump());
    EXPECT_EQ(point["explicitBounds"], json(kDurationBuckets));
    json buckets = json::array();
    for (std::size_t i = 0; i <= kDurationBuckets.size(); ++i) buckets.push_back(i ? "0" : "1");
    EXPECT_EQ(point["bucketCounts"], buckets);
    EXPECT_EQ(point["count"], "1");
    EXPECT_EQ(point["sum"], 0);
    EXPECT_EQ(point["timeUnixNano"], retry_unix);  // collected after the call
  }
}

// OTLP/HTTP's partial success: a 200 whose body says the receiver rejected
// some of the spans counts them as failed, and ForceFlush says not all
// were accepted.
TEST_F(OtlpTest, SpansAPartialSuccessRejectedCountAsFailed) {
  peers::NodePeer rejecting{OUTBOUND_OTLP_RECEIVER,
                            {"--modules=" OUTBOUND_OTLP_MODULES, "--reject-spans=3"}};
  OtlpSettings settings = SettingsFor("strict-collector", rejecting.port());
  auto exporter = MakeExporter(settings);
  ASSERT_TRUE(exporter);
  for (int i = 0; i < 5; ++i) exporter->OnEnd(SomeSpan(ids, "s" + std::to_string(i)));
  EXPECT_FALSE(exporter->ForceFlush());
  EXPECT_EQ(exporter->failed(), 3u);
  EXPECT_EQ(exporter->dropped(), 0u);
}

// The answers `peer` gave, in order, once it has given `n`; empty when it
// has not after 10 s of real time (a process: readiness, not timing).
std::vector<json> AnswersOnceThereAre(peers::NodePeer& peer, std::size_t n) {
  for (int i = 0; i < 1000; ++i) {
    json answered = peer.Stats().at("answered");
    if (answered.size() >= n) return answered;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return {};
}

// ForceFlush on a thread of its own, as a program's would run while this
// thread moves the clock between attempts. Result waits for it at most
// `real_limit` (a safety net, not a tolerance); if it has not returned by
// the end of the test, the clock is moved an hour at a time until it does,
// so a failing test ends instead of hanging.
class FlushOnAThread {
 public:
  FlushOnAThread(OtlpExporter& exporter, testing::ManualClock& clock)
      : clock_(clock),
        flushed_(std::async(std::launch::async, [&exporter] { return exporter.ForceFlush(); })) {}
  ~FlushOnAThread() {
    for (int i = 0; i < 1000 && !done(); ++i) clock_.Advance(hours(1));
  }
  FlushOnAThread(const FlushOnAThread&) = delete;
  FlushOnAThread& operator=(const FlushOnAThread&) = delete;

  bool done() const {
    return !flushed_.valid() || flushed_.wait_for(milliseconds(10)) == std::future_status::ready;
  }
  // What ForceFlush returned, or nothing if it had not within `real_limit`.
  std::optional<bool> Result(std::chrono::milliseconds real_limit = seconds(10)) {
    if (flushed_.wait_for(real_limit) != std::future_status::ready) return std::nullopt;
    return flushed_.get();
  }

 private:
  testing::ManualClock& clock_;
  std::future<bool> flushed_;
};

// OTLP/HTTP's retry rule: a batch answered 429, 502, 503 or 504 is sent
// again, no sooner than the Retry-After the receiver named, under the key
// it first had, until it is accepted.
TEST_F(OtlpTest, ABatchAnsweredWithARetryableStatusIsSentAgainUnderItsKeyUntilAccepted) {
  peers::NodePeer shedding{OUTBOUND_OTLP_RECEIVER,
                           {"--modules=" OUTBOUND_OTLP_MODULES, "--answer-first=503:3,429:2,502"}};
  OtlpSettings settings = SettingsFor("shedding-collector", shedding.port());
  settings.export_timeout = std::chrono::minutes(1);
  auto exporter = MakeExporter(settings);
  ASSERT_TRUE(exporter);
  for (int i = 0; i < 2; ++i) exporter->OnEnd(SomeSpan(ids, "s" + std::to_string(i)));

  FlushOnAThread flush(*exporter, clock);
  // After each refusal the next attempt waits on the clock: exactly the
  // Retry-After when one was named (the jitter is below it), else the
  // jitter alone, below the second retry's four seconds. (The receiver's
  // Keep-Alive timeout sets a timer of its own: the connection's close.)
  const std::optional<Duration> waits[] = {seconds(3), seconds(2), std::nullopt};
  for (std::size_t i = 0; i < std::size(waits); ++i) {
    ASSERT_EQ(AnswersOnceThereAre(shedding, i + 1).size(), i + 1);
    TimePoint answered_at = clock.Now();
    ASSERT_TRUE(clock.WaitForTimerBy(answered_at + seconds(4)));
    TimePoint retry_at = answered_at + seconds(4);
    if (waits[i]) {
      retry_at = answered_at + *waits[i];
      EXPECT_THAT(clock.timers(), ::testing::Contains(retry_at)) << "after answer " << i;
    }
    clock.AdvanceTo(retry_at);
  }
  EXPECT_EQ(flush.Result(), std::optional(true));
  EXPECT_EQ(exporter->failed(), 0u);

  std::vector<json> answers = AnswersOnceThereAre(shedding, 4);
  ASSERT_EQ(answers.size(), 4u);
  const int statuses[] = {503, 429, 502, 200};
  for (std::size_t i = 0; i < answers.size(); ++i) {
    EXPECT_EQ(answers[i].at("status"), statuses[i]);
    EXPECT_EQ(answers[i].at("path"), "/v1/traces");
    EXPECT_EQ(answers[i].at("key"), answers[0].at("key"));
  }
  // The exporter's random number, then the batch's: the first.
  EXPECT_THAT(answers[0].at("key").get<std::string>(), ::testing::MatchesRegex("[0-9]+-1"));
  // Accepted once, whole.
  json stats = shedding.Stats();
  ASSERT_EQ(stats.at("received").size(), 1u);
  EXPECT_EQ(stats.at("received")[0]
                .at("request")
                .at("resourceSpans")[0]
                .at("scopeSpans")[0]
                .at("spans")
                .size(),
            2u);
}

// Any other status is final: the batch fails at once, is counted, and the
// next batch has a key of its own.
TEST_F(OtlpTest, ABatchAnsweredWithAFinalStatusFailsAtOnce) {
  peers::NodePeer strict{OUTBOUND_OTLP_RECEIVER,
                         {"--modules=" OUTBOUND_OTLP_MODULES, "--answer-first=500,400,408"}};
  OtlpSettings settings = SettingsFor("strict-collector", strict.port());
  auto exporter = MakeExporter(settings);
  ASSERT_TRUE(exporter);
  for (int batch = 0; batch < 3; ++batch) {
    exporter->OnEnd(SomeSpan(ids, "refused"));
    // Not sent again: the flush ends with the clock where it was.
    EXPECT_EQ(FlushOnAThread(*exporter, clock).Result(), std::optional(false));
    EXPECT_EQ(exporter->failed(), batch + 1u);
  }
  exporter->OnEnd(SomeSpan(ids, "accepted"));
  EXPECT_TRUE(exporter->ForceFlush());

  std::vector<json> answers = AnswersOnceThereAre(strict, 4);
  ASSERT_EQ(answers.size(), 4u);
  const int statuses[] = {500, 400, 408, 200};
  for (std::size_t i = 0; i < answers.size(); ++i) {
    EXPECT_EQ(answers[i].at("status"), statuses[i]);
    for (std::size_t j = 0; j < i; ++j) EXPECT_NE(answers[i].at("key"), answers[j].at("key"));
  }
}

TEST_F(OtlpTest, AFullQueueDropsAndCountsWithoutBlocking) {
  auto hole = testing::BlackHole::Start();
  ASSERT_TRUE(hole) << hole.error().message();
  OtlpSettings settings = SettingsFor("silent", (*hole)->port());
  settings.max_batch_size = 2;
  settings.max_queue_size = 4;
  auto exporter = MakeExporter(settings);
  ASSERT_TRUE(exporter);

  // Nothing is sent from OnEnd: a full batch waits for the clock's next
  // chance, which a manual clock gives only when it moves.
  for (int i = 0; i < 10; ++i) exporter->OnEnd(SomeSpan(ids, "s" + std::to_string(i)));
  EXPECT_EQ(exporter->dropped(), 6u);
  for (int i = 0; i < 3; ++i) {
    LogRecord record;
    record.body = "r";
    exporter->Emit(std::move(record));
  }
  EXPECT_EQ(exporter->dropped(), 6u);  // a queue per signal

  // A batch of each goes to the black hole, and hangs there: two more
  // spans fit, the third is dropped.
  clock.Advance(Duration::zero());
  for (int i = 0; i < 3; ++i) exporter->OnEnd(SomeSpan(ids, "t"));
  EXPECT_EQ(exporter->dropped(), 7u);
  EXPECT_EQ(exporter->failed(), 0u);

  // The receiver goes: the batch in flight and every one after it fails,
  // after attempts of its own, and is counted. Between attempts the
  // exporter waits on the clock, which this thread moves as each wait begins.
  hole->reset();
  int waits = 0;
  {
    FlushOnAThread flush(*exporter, clock);
    for (int i = 0; i < 1000 && !flush.done(); ++i) {
      // A backoff, or a batch's export_timeout: both within 10 s.
      if (clock.WaitForTimerBy(clock.Now() + settings.export_timeout, milliseconds(10))) {
        clock.AdvanceTo(*clock.next_timer());
        ++waits;
      }
    }
    EXPECT_EQ(flush.Result(), std::optional(false));
  }
  // How often depends on when the failures open the breaker of the
  // exporter's client; once it is open, the rest fail at once.
  EXPECT_GT(waits, 0);
  EXPECT_EQ(exporter->failed(), 6u + 3u);
  EXPECT_EQ(exporter->dropped(), 7u);
}

TEST_F(OtlpTest, TheDestructorWaitsForTheQueueAtMostTheExportTimeoutOnTheClock) {
  auto hole = testing::BlackHole::Start();
  ASSERT_TRUE(hole) << hole.error().message();
  OtlpSettings settings = SettingsFor("silent", (*hole)->port());
  auto exporter = MakeExporter(settings);
  ASSERT_TRUE(exporter);
  for (int i = 0; i < 3; ++i) exporter->OnEnd(SomeSpan(ids, "late"));

  // Nothing is in flight; the destructor arms its bound before it sends,
  // so its timer is the first more to be pending.
  std::size_t before = clock.pending_timers();
  std::atomic<bool> gone{false};
  std::thread destroy([&] {
    exporter.reset();
    gone = true;
  });
  ASSERT_TRUE(clock.WaitForTimers(before + 1));
  clock.Advance(settings.export_timeout - Duration(1));
  EXPECT_FALSE(gone);
  clock.Advance(Duration(1));
  destroy.join();
  EXPECT_TRUE(gone);
}

TEST_F(OtlpTest, TheExportersOwnClientRecordsNothing) {
  // The Runtime the exporter is made with records everything...
  testing::InMemoryTelemetry recorded(random);
  runtime.telemetry = recorded.telemetry();
  auto exporter = MakeExporter(Settings());
  ASSERT_TRUE(exporter);
  exporter->OnEnd(SomeSpan(ids, "work"));
  LogRecord record;
  record.scope = "test";
  record.body = "hello";
  exporter->Emit(std::move(record));
  exporter->ExportMetrics(recorded.metrics());
  ASSERT_TRUE(exporter->ForceFlush());

  // ...yet its three POSTs made no span, point or record there...
  EXPECT_EQ(Received("/v1/traces").size(), 1u);
  EXPECT_EQ(Received("/v1/logs").size(), 1u);
  EXPECT_EQ(Received("/v1/metrics").size(), 1u);
  EXPECT_TRUE(recorded.Spans().empty());
  EXPECT_TRUE(recorded.Logs().empty());
  for (const MetricData& metric : recorded.Metrics()) {
    EXPECT_TRUE(metric.points.empty()) << metric.name;
  }
  // ...and nothing of its own came back to it to send.
  ASSERT_TRUE(exporter->ForceFlush());
  auto spans = Spans();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0]["name"], "work");
  EXPECT_EQ(Received("/v1/traces").size(), 1u);
}

TEST_F(OtlpTest, ThePartialBatchIsSentWhenTheFlushIntervalComesRound) {
  OtlpSettings settings = Settings();
  settings.flush_interval = seconds(5);
  auto exporter = MakeExporter(settings);
  ASSERT_TRUE(exporter);
  exporter->OnEnd(SomeSpan(ids, "lonely"));
  clock.Advance(seconds(5));
  ASSERT_TRUE(WaitForRequests(1));
  auto spans = Spans();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0]["name"], "lonely");
  EXPECT_EQ(spans[0]["scope"], "test");
  EXPECT_EQ(spans[0]["kind"], 1);                   // SPAN_KIND_INTERNAL
  EXPECT_FALSE(spans[0].contains("parentSpanId"));  // a root
}

TEST_F(OtlpTest, AFullBatchIsSentAtTheClocksNextChance) {
  OtlpSettings settings = Settings();
  settings.max_batch_size = 3;
  auto exporter = MakeExporter(settings);
  ASSERT_TRUE(exporter);
  for (int i = 0; i < 7; ++i) exporter->OnEnd(SomeSpan(ids, "s" + std::to_string(i)));
  clock.Advance(Duration::zero());
  // Two full batches, one after the other; the seventh span waits.
  ASSERT_TRUE(WaitForRequests(2));
  EXPECT_EQ(Spans().size(), 6u);
  ASSERT_TRUE(exporter->ForceFlush());
  auto spans = Spans();
  ASSERT_EQ(spans.size(), 7u);
  for (int i = 0; i < 7; ++i) EXPECT_EQ(spans[i]["name"], "s" + std::to_string(i));
  auto requests = Received("/v1/traces");
  ASSERT_EQ(requests.size(), 3u);
}

TEST(OtlpSettingsTest, ValidateNamesEveryBadField) {
  OtlpSettings s;
  s.endpoint = "ftp://collector";
  s.service_name = "";
  s.max_batch_size = 0;
  s.flush_interval = Duration::zero();
  auto valid = Validate(s);
  ASSERT_FALSE(valid);
  EXPECT_EQ(valid.error().kind(), ErrorKind::kInvalidSettings);
  for (const char* field : {"OtlpSettings.endpoint", "OtlpSettings.service_name",
                            "OtlpSettings.max_batch_size", "OtlpSettings.flush_interval"}) {
    EXPECT_NE(valid.error().message().find(field), std::string::npos) << field;
  }
  s = OtlpSettings{};
  s.endpoint = "https://collector:4318";
  EXPECT_NE(Validate(s).error().message().find("OtlpSettings.tls must be set"), std::string::npos);
  s.max_batch_size = 10;
  s.max_queue_size = 5;
  s.tls = http::TlsSettings{};
  EXPECT_EQ(Validate(s).error().message(),
            "OtlpSettings.max_batch_size must be at most OtlpSettings.max_queue_size");
  s.max_queue_size = 10;
  EXPECT_TRUE(Validate(s));
  EXPECT_FALSE(Validate(OtlpSettings{}));  // no endpoint
}

}  // namespace
}  // namespace outbound::telemetry
