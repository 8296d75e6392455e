// SPDX-License-Identifier: Apache-2.0
// What a client records through the Runtime's telemetry: a CLIENT span per
// attempt (a child of the caller's span, its context on the wire), the HTTP
// client metrics, the library's own instruments and a log record per
// breaker transition. On the manual clock, against the FakeServer.
#include "outbound/testing/telemetry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <thread>

#include "client_test_support.h"
#include "outbound/telemetry/propagation.h"

namespace outbound::http {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using telemetry::SpanData;
using telemetry::SpanKind;
using testing::Reply;
using testing::ServerRequest;

const telemetry::Value* Attr(const SpanData& span, std::string_view key) {
  return telemetry::Find(span.attributes, key);
}
telemetry::Value Str(std::string_view s) { return std::string(s); }
telemetry::Value Int(std::int64_t i) { return i; }

// A caller's span, as a server handling a request would hold it.
telemetry::SpanContext CallerContext(Random& random) {
  telemetry::SpanContext context;
  context.trace_id = telemetry::NewTraceId(random);
  context.span_id = telemetry::NewSpanId(random);
  return context;
}

class TelemetryFixture : public ClientTestBase {
 protected:
  TelemetryFixture() { runtime.telemetry = recorded.telemetry(); }

  // Headers the server saw, per request, in order.
  std::vector<ServerRequest> Seen() {
    std::lock_guard lock(seen_mu);
    return seen;
  }
  void Keep(const ServerRequest& request) {
    std::lock_guard lock(seen_mu);
    seen.push_back(request);
  }

  testing::InMemoryTelemetry recorded{DefaultRandom()};  // ids unlike each other
  std::mutex seen_mu;
  std::vector<ServerRequest> seen;
};

class TelemetryTest : public TelemetryFixture, public ::testing::TestWithParam<Protocol> {};
class TelemetryH2Test : public TelemetryFixture, public ::testing::Test {};
class TelemetryH1Test : public TelemetryFixture, public ::testing::Test {};
class NoTelemetryTest : public ClientTestBase, public ::testing::Test {};

INSTANTIATE_TEST_SUITE_P(Protocols, TelemetryTest,
                         ::testing::Values(Protocol::kHttp2, Protocol::kHttp11),
                         [](const auto& param_info) {
                           return param_info.param == Protocol::kHttp2 ? "http2" : "http1";
                         });

TEST_P(TelemetryTest, ARetried503HasTwoSpansTheFirstEndingBeforeTheWait) {
  int calls = 0;
  Serve(
      [&](const ServerRequest& request) {
        Keep(request);
        if (++calls == 1) return Reply::Status(503).Header("Retry-After", "2");
        return Reply::Ok("ok");
      },
      GetParam());
  auto client = MakeClient();
  TimePoint start = clock.Now();
  Request request = Request::Get("/charges/1");
  request.context.trace = CallerContext(random);
  request.context.baggage = {{"tenant", "acme corp", ""}};
  auto call = client->SendAsync(request);
  AdvanceAfterAttempt(1, seconds(2));
  ASSERT_TRUE(call.get());

  auto spans = recorded.Spans(SpanKind::kClient);
  ASSERT_EQ(spans.size(), 2u);
  std::string version = GetParam() == Protocol::kHttp2 ? "2" : "1.1";
  for (const SpanData& span : spans) {
    EXPECT_EQ(span.name, "GET");
    EXPECT_EQ(span.scope, "outbound.http");
    EXPECT_EQ(span.context.trace_id, request.context.trace.trace_id);
    EXPECT_EQ(span.parent_span_id, request.context.trace.span_id);
    EXPECT_EQ(*Attr(span, "http.request.method"), Str("GET"));
    EXPECT_EQ(*Attr(span, "url.full"), Str("https://payments:8443/charges/1"));
    EXPECT_EQ(*Attr(span, "server.address"), Str("payments"));
    EXPECT_EQ(*Attr(span, "server.port"), Int(8443));
    EXPECT_EQ(*Attr(span, "network.protocol.version"), Str(version));
  }
  EXPECT_EQ(spans[0].start, start);
  EXPECT_EQ(spans[0].end, start);                 // the first ends before the wait...
  EXPECT_EQ(spans[1].start, start + seconds(2));  // ...the second starts after it
  EXPECT_EQ(*Attr(spans[0], "http.response.status_code"), Int(503));
  EXPECT_EQ(*Attr(spans[0], "error.type"), Str("503"));
  EXPECT_EQ(spans[0].status, telemetry::StatusCode::kError);
  EXPECT_EQ(Attr(spans[0], "http.request.resend_count"), nullptr);
  EXPECT_EQ(*Attr(spans[1], "http.request.resend_count"), Int(1));
  EXPECT_EQ(*Attr(spans[1], "http.response.status_code"), Int(200));
  EXPECT_EQ(spans[1].status, telemetry::StatusCode::kUnset);
  EXPECT_EQ(Attr(spans[1], "error.type"), nullptr);

  // On the wire: each attempt's own span is the parent the server sees.
  auto requests = Seen();
  ASSERT_EQ(requests.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(requests[i].header("traceparent"), telemetry::FormatTraceparent(spans[i].context));
    EXPECT_EQ(requests[i].header("baggage"), "tenant=acme%20corp");
  }
  // And the attempt records carry the same ids.
  auto records = Attempts();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1].trace_id, spans[1].context.trace_id);
  EXPECT_EQ(records[1].span_id, spans[1].context.span_id);

  // One duration point per attempt, by status.
  auto ok = recorded.Point("http.client.request.duration",
                           {{"http.response.status_code", std::int64_t{200}},
                            {"server.address", "payments"},
                            {"network.protocol.version", version}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->count, 1u);
  auto failed =
      recorded.Point("http.client.request.duration",
                     {{"http.response.status_code", std::int64_t{503}}, {"error.type", "503"}});
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->count, 1u);
  EXPECT_EQ(recorded.Value("outbound.retry.decisions", {{"decision", "again"}}), 1);
  EXPECT_EQ(recorded.Value("outbound.retry.decisions", {{"decision", "success"}}), 1);
  EXPECT_EQ(recorded.Value("outbound.circuit.calls", {{"outcome", "success"}}), 1);
}

TEST_P(TelemetryTest, BreakerTransitionsAreLoggedCountedAndReadAsState) {
  std::atomic<bool> healthy{false};
  Serve([&](const ServerRequest&) { return healthy ? Reply::Ok() : Reply::Status(500); },
        GetParam());
  auto client = MakeClient();
  auto state = [&](std::string_view s) {
    return recorded.Value(
        "outbound.circuit.state",
        {{"state", s}, {"server.address", "payments"}, {"server.port", std::int64_t{8443}}});
  };
  EXPECT_EQ(state("closed"), 1);
  EXPECT_EQ(state("open"), 0);
  telemetry::SpanContext fifth;
  for (int i = 0; i < 5; ++i) {
    Request request = Request::Get("/");
    request.context.trace = CallerContext(random);
    if (i == 4) fifth = request.context.trace;
    ASSERT_TRUE(client->Send(request));
  }
  EXPECT_EQ(state("open"), 1);
  EXPECT_EQ(state("closed"), 0);

  auto rejected = client->Send(Request::Get("/"));
  ASSERT_FALSE(rejected);
  healthy = true;
  clock.Advance(seconds(10));  // OpenFor
  EXPECT_EQ(state("half-open"), 1);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(client->Send(Request::Get("/")));
  EXPECT_EQ(state("closed"), 1);

  auto logs = recorded.Logs();
  ASSERT_EQ(logs.size(), 3u);
  EXPECT_EQ(logs[0].body, "circuit breaker open");
  EXPECT_EQ(logs[0].severity, telemetry::Severity::kWarn);
  EXPECT_EQ(logs[1].body, "circuit breaker half-open");
  EXPECT_EQ(logs[1].severity, telemetry::Severity::kInfo);
  EXPECT_EQ(logs[2].body, "circuit breaker closed");
  EXPECT_EQ(logs[2].severity, telemetry::Severity::kInfo);
  for (const auto& log : logs) {
    EXPECT_EQ(log.scope, "outbound.http");
    EXPECT_EQ(*telemetry::Find(log.attributes, "server.address"), Str("payments"));
    EXPECT_EQ(*telemetry::Find(log.attributes, "server.port"), Int(8443));
  }
  const auto& open = logs[0].attributes;
  EXPECT_EQ(*telemetry::Find(open, "outbound.circuit.previous_state"), Str("closed"));
  EXPECT_EQ(*telemetry::Find(open, "outbound.circuit.consecutive_failures"), Int(5));
  EXPECT_EQ(*telemetry::Find(open, "outbound.circuit.failures"), Int(5));
  EXPECT_EQ(*telemetry::Find(open, "outbound.circuit.successes"), Int(0));
  EXPECT_EQ(*telemetry::Find(open, "outbound.circuit.consecutive_successes"), Int(0));
  EXPECT_EQ(*telemetry::Find(open, "outbound.circuit.timed_out"), Int(0));
  EXPECT_EQ(*telemetry::Find(logs[1].attributes, "outbound.circuit.previous_state"), Str("open"));
  EXPECT_EQ(*telemetry::Find(logs[2].attributes, "outbound.circuit.previous_state"),
            Str("half-open"));
  EXPECT_EQ(*telemetry::Find(logs[2].attributes, "outbound.circuit.consecutive_successes"), Int(3));
  // The open record is in the trace of the call that opened the breaker:
  // its attempt's span, a child of the fifth caller's.
  EXPECT_EQ(logs[0].trace.trace_id, fifth.trace_id);
  auto spans = recorded.Spans(SpanKind::kClient);
  ASSERT_GE(spans.size(), 5u);
  EXPECT_EQ(logs[0].trace.span_id, spans[4].context.span_id);

  EXPECT_EQ(recorded.Value("outbound.circuit.transitions", {{"state", "open"}}), 1);
  EXPECT_EQ(recorded.Value("outbound.circuit.transitions", {{"state", "half-open"}}), 1);
  EXPECT_EQ(recorded.Value("outbound.circuit.transitions", {{"state", "closed"}}), 1);
  EXPECT_EQ(recorded.Value("outbound.circuit.calls", {{"outcome", "failure"}}), 5);
  EXPECT_EQ(recorded.Value("outbound.circuit.calls", {{"outcome", "rejected"}}), 1);
  EXPECT_EQ(recorded.Value("outbound.circuit.calls", {{"outcome", "success"}}), 3);
}

// The time an attempt waited for a connection is its own: one connection
// of HTTP/1.1, the second call waits for the first's answer, 1 s of fake
// time, before it is sent; each span says so, and so does the histogram.
TEST_F(TelemetryH1Test, TheTimeAnAttemptWaitedForAConnectionIsRecorded) {
  Serve(
      [](const ServerRequest& r) {
        Reply reply = Reply::Ok(r.target);
        if (r.target == "/first") reply.DelayHeaders(seconds(1));
        return reply;
      },
      Protocol::kHttp11);
  Settings settings = PaymentsSettings();
  settings.max_connections = 1;
  auto client = MakeClient(std::move(settings));
  auto first = client->SendAsync(Request::Get("/first"));
  ASSERT_TRUE(
      server->WaitFor([](const testing::FakeServer& s) { return s.request_count() == 1u; }));
  auto second = client->SendAsync(Request::Get("/second"));
  ASSERT_TRUE(clock.WaitForTimers(3));  // two deadlines and the delayed headers
  clock.Advance(seconds(1));
  ASSERT_TRUE(first.get());
  ASSERT_TRUE(second.get());
  auto spans = recorded.Spans(SpanKind::kClient);
  ASSERT_EQ(spans.size(), 2u);
  // The first went on the connection as it opened; the second after 1 s.
  std::vector<double> waits;
  for (const SpanData& span : spans) {
    const telemetry::Value* waited = Attr(span, "http.client.request.time_in_queue");
    ASSERT_NE(waited, nullptr);
    waits.push_back(std::get<double>(*waited));
  }
  std::sort(waits.begin(), waits.end());
  EXPECT_EQ(waits, (std::vector<double>{0.0, 1.0}));
  auto point = recorded.Point("http.client.request.time_in_queue");
  ASSERT_TRUE(point);
  EXPECT_EQ(point->count, 2u);
  EXPECT_EQ(point->sum, 1.0);
}

// The client binds the series of the attribute sets it sees (at most 32);
// beyond that it records unbound. Either way each set is one series with
// every attempt of it: 40 statuses, each answered twice.
TEST_F(TelemetryH2Test, EveryAttributeSetIsOneSeriesBeyondTheSetsTheClientBinds) {
  Serve([](const ServerRequest& r) { return Reply::Status(std::stoi(r.target.substr(1))); },
        Protocol::kHttp2);
  Settings settings = PaymentsSettings();
  settings.max_attempts = 1;
  settings.breaker_policy.trip = [](const circuit::Counts&) { return false; };
  auto client = MakeClient(settings);
  for (int round = 0; round < 2; ++round) {
    for (int status = 200; status < 240; ++status) {
      ASSERT_TRUE(client->Send(Request::Get("/" + std::to_string(status))));
    }
  }
  for (int status = 200; status < 240; ++status) {
    auto point = recorded.Point("http.client.request.duration",
                                {{"http.response.status_code", std::int64_t{status}}});
    ASSERT_TRUE(point) << status;
    EXPECT_EQ(point->count, 2u) << status;
    auto size = recorded.Point("http.client.request.body.size",
                               {{"http.response.status_code", std::int64_t{status}}});
    ASSERT_TRUE(size) << status;
    EXPECT_EQ(size->count, 2u) << status;
  }
  EXPECT_EQ(recorded.Value("outbound.circuit.calls", {{"outcome", "success"}}), 80);
  EXPECT_EQ(recorded.Value("outbound.retry.decisions", {{"decision", "success"}}), 80);
}

TEST_F(TelemetryH2Test, ARejectedAttemptHasItsSpanAndDurationPoint) {
  Serve([](const ServerRequest&) { return Reply::Status(500); });
  auto client = MakeClient();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(client->Send(Request::Get("/")));
  recorded.Clear();
  double stopped =
      recorded.Value("outbound.retry.decisions", {{"decision", "stopped"}, {"reason", "rejected"}});
  TimePoint at = clock.Now();
  auto rejected = client->Send(Request::Get("/"));
  ASSERT_FALSE(rejected);
  ASSERT_EQ(rejected.error().kind(), ErrorKind::kRejected);

  auto spans = recorded.Spans(SpanKind::kClient);
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].start, at);
  EXPECT_EQ(spans[0].end, at);  // ended at once
  EXPECT_EQ(spans[0].status, telemetry::StatusCode::kError);
  EXPECT_EQ(*Attr(spans[0], "error.type"), Str("rejected"));
  EXPECT_EQ(Attr(spans[0], "http.response.status_code"), nullptr);
  auto point = recorded.Point("http.client.request.duration", {{"error.type", "rejected"}});
  ASSERT_TRUE(point);
  EXPECT_EQ(point->count, 1u);
  EXPECT_EQ(point->sum, 0.0);
  // A rejected attempt is not retried: the loop stopped.
  EXPECT_EQ(
      recorded.Value("outbound.retry.decisions", {{"decision", "stopped"}, {"reason", "rejected"}}),
      stopped + 1);
}

TEST_F(TelemetryH2Test, EachAttemptSpanIsAChildOfItsOwnCallersSpanUnderConcurrency) {
  Serve([&](const ServerRequest& request) {
    Keep(request);
    return Reply::Ok();
  });
  auto client = MakeClient();
  constexpr int kThreads = 8;
  constexpr int kCallsPerThread = 13;  // 104 calls
  std::mutex callers_mu;
  std::map<std::string, telemetry::SpanContext> callers;  // by trace id
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kCallsPerThread; ++i) {
        Request request = Request::Get("/");
        request.context.trace = CallerContext(DefaultRandom());
        {
          std::lock_guard lock(callers_mu);
          callers[request.context.trace.trace_id.Hex()] = request.context.trace;
        }
        EXPECT_TRUE(client->Send(request));
      }
    });
  }
  for (auto& thread : threads) thread.join();

  auto spans = recorded.Spans(SpanKind::kClient);
  ASSERT_EQ(spans.size(), std::size_t{kThreads * kCallsPerThread});
  std::map<std::string, std::string> span_of_trace;
  for (const SpanData& span : spans) {
    auto caller = callers.find(span.context.trace_id.Hex());
    ASSERT_NE(caller, callers.end()) << "a span outside every caller's trace";
    EXPECT_EQ(span.parent_span_id, caller->second.span_id);
    span_of_trace[span.context.trace_id.Hex()] = span.context.span_id.Hex();
  }
  EXPECT_EQ(span_of_trace.size(), callers.size());  // one span per call
  for (const ServerRequest& request : Seen()) {
    auto context = telemetry::ParseTraceparent(request.header("traceparent"));
    ASSERT_TRUE(context);
    EXPECT_EQ(span_of_trace[context->trace_id.Hex()], context->span_id.Hex());
  }
}

// A caller's trace that upstream chose not to sample stays unsampled: the
// attempt's span and the traceparent it sends say so (flags 00), so the
// services after this one do not record a trace whose root recorded nothing.
TEST_F(TelemetryH2Test, ACallersUnsampledTraceStaysUnsampled) {
  std::string traceparent;
  Serve([&](const ServerRequest& request) {
    traceparent = request.header("traceparent");
    return Reply::Ok();
  });
  auto client = MakeClient();
  Request request = Request::Get("/");
  auto caller =
      telemetry::ParseTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00");
  ASSERT_TRUE(caller);
  request.context.trace = *caller;
  ASSERT_TRUE(client->Send(request));
  auto spans = recorded.Spans(SpanKind::kClient);
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_FALSE(spans[0].context.sampled);
  EXPECT_EQ(spans[0].context.trace_id, caller->trace_id);
  EXPECT_EQ(traceparent, telemetry::FormatTraceparent(spans[0].context));
  EXPECT_TRUE(traceparent.ends_with("-00")) << traceparent;
}

// A call made without a trace of the caller's is one trace all the same:
// its first attempt starts it, and every later attempt joins it.
TEST_F(TelemetryH2Test, WithoutACallersTraceACallsAttemptsShareOneTrace) {
  int calls = 0;
  Serve([&](const ServerRequest&) { return ++calls == 1 ? Reply::Status(503) : Reply::Ok(); });
  auto client = MakeClient();
  auto retried = client->SendAsync(Request::Get("/"));
  AdvanceAfterAttempt(1, seconds(1));
  ASSERT_TRUE(retried.get());
  ASSERT_TRUE(client->Send(Request::Get("/")));
  auto spans = recorded.Spans(SpanKind::kClient);
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[0].context.trace_id, spans[1].context.trace_id);
  EXPECT_FALSE(spans[0].parent_span_id.valid());
  EXPECT_FALSE(spans[1].parent_span_id.valid());
  EXPECT_NE(spans[1].context.trace_id, spans[2].context.trace_id);  // another call
}

TEST_F(TelemetryH2Test, CredentialsInTheQueryAreNotInTheSpan) {
  Serve([](const ServerRequest&) { return Reply::Ok(); });
  auto client = MakeClient();
  ASSERT_TRUE(client->Send(Request::Get("/files?id=7&X-Amz-Signature=s3cr3t&sig=abc&page=2")));
  auto spans = recorded.Spans(SpanKind::kClient);
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(*Attr(spans[0], "url.full"),
            Str("https://payments:8443/files?id=7&X-Amz-Signature=REDACTED&sig=REDACTED&page=2"));
}

// Nothing global: a second Runtime's telemetry sees none of this client's
// spans, points or records.
TEST_F(TelemetryH2Test, AnotherRuntimesTelemetrySeesNothingOfThisClient) {
  Serve([](const ServerRequest&) { return Reply::Status(500); });
  testing::InMemoryTelemetry elsewhere(random);
  Runtime other = runtime;
  other.telemetry = elsewhere.telemetry();
  auto unrelated = Client::Create(other, PaymentsSettings());
  ASSERT_TRUE(unrelated);
  auto client = MakeClient();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(client->Send(Request::Get("/")));
  EXPECT_EQ(recorded.Spans().size(), 5u);
  EXPECT_EQ(recorded.Logs().size(), 1u);
  EXPECT_TRUE(elsewhere.Spans().empty());
  EXPECT_TRUE(elsewhere.Logs().empty());
  EXPECT_EQ(elsewhere.Value("outbound.circuit.calls", {{"outcome", "failure"}}), 0);
  EXPECT_EQ(elsewhere.Value("outbound.circuit.state", {{"state", "closed"}}), 1);  // its own client
}

// Without telemetry nothing is recorded, and the caller's own context still
// reaches the dependency (the trace is not broken by a client that does not
// record).
TEST_F(NoTelemetryTest, WithoutTelemetryTheCallersContextStillReachesTheDependency) {
  std::string traceparent, baggage;
  Serve([&](const ServerRequest& request) {
    traceparent = request.header("traceparent");
    baggage = request.header("baggage");
    return Reply::Ok();
  });
  auto client = MakeClient();
  ASSERT_TRUE(client->Send(Request::Get("/")));
  EXPECT_EQ(traceparent, "");  // nothing made up
  EXPECT_EQ(baggage, "");

  Request request = Request::Get("/");
  request.context.trace = CallerContext(random);
  request.context.baggage = {{"k", "v", ""}};
  request.headers.emplace_back("traceparent",
                               "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  ASSERT_TRUE(client->Send(request));
  EXPECT_EQ(traceparent, telemetry::FormatTraceparent(request.context.trace));
  EXPECT_EQ(baggage, "k=v");
}

}  // namespace
}  // namespace outbound::http

namespace outbound::http {
namespace {

std::vector<std::string> FieldNames(const testing::ServerRequest& request) {
  std::vector<std::string> names;
  for (const auto& field : request.headers) names.push_back(field.first);
  return names;
}

// The kit's FakeTransport records a request's fields as FakeServer records
// what the wire carries, in its order (:authority as host, the attempt's
// own fields, traceparent here, then the request's, then the default
// user-agent), so a test on it sees what a server would.
TEST_F(TelemetryH2Test, TheFakeTransportRecordsFieldsInTheWiresOrder) {
  Serve([](const ServerRequest&) { return Reply::Ok(""); });
  auto wire = MakeClient();
  ASSERT_TRUE(wire->Send(Request::Get("/").Header("X-A", "1")));
  testing::FakeTransport fake(clock, [](const ServerRequest&) { return Reply::Ok(""); });
  Runtime fake_runtime = runtime;
  fake_runtime.transport = &fake;
  auto faked = Client::Create(fake_runtime, PaymentsSettings());
  ASSERT_TRUE(faked) << faked.error().message();
  ASSERT_TRUE((*faked)->Send(Request::Get("/").Header("X-A", "1")));
  ASSERT_EQ(server->requests().size(), 1u);
  ASSERT_EQ(fake.requests().size(), 1u);
  EXPECT_EQ(FieldNames(fake.requests()[0]), FieldNames(server->requests()[0]));
  EXPECT_EQ(FieldNames(fake.requests()[0]),
            (std::vector<std::string>{"host", "traceparent", "x-a", "user-agent"}));
  EXPECT_EQ(fake.requests()[0].header("host"), server->requests()[0].header("host"));
  EXPECT_EQ(fake.requests()[0].scheme, server->requests()[0].scheme);
}

}  // namespace
}  // namespace outbound::http
