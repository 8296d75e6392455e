// SPDX-License-Identifier: Apache-2.0
// The gRPC client on the call core, over the library's own HTTP/2: against
// real grpc++ servers on loopback (plain text is h2c, TLS with a test CA),
// and on the kit's FakeTransport where what is sent must be exact. Waits run
// on a ManualClock.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../../src/rpc/wire/framing.h"
#include "echo_server.h"
#include "outbound/rpc/client.h"
#include "outbound/telemetry/propagation.h"
#include "outbound/testing/fake_grpc.h"
#include "outbound/testing/fake_transport.h"
#include "outbound/testing/telemetry.h"
#include "outbound/testing/test_ca.h"

namespace outbound::rpc {
namespace {

class CoreRpc : public RpcClient {
 protected:
  std::unique_ptr<Client> MakeCore(std::uint16_t port, Settings settings = DefaultSettings()) {
    network_.Add("backend", 9090, "127.0.0.1", port);
    settings.addr = "backend:9090";
    auto client = Client::Create(runtime_, std::move(settings));
    EXPECT_TRUE(client) << client.error().message();
    return client ? std::move(*client) : nullptr;
  }

  // Runs fn on its own thread until it returns, moving the fake clock to
  // the next timer whenever the client waits between attempts (the call's
  // deadline and the wait: two timers); never while an attempt is out, which
  // has the deadline's timer alone.
  template <typename Fn>
  auto Drive(Fn fn) {
    auto future = std::async(std::launch::async, std::move(fn));
    while (future.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready) {
      if (clock_.pending_timers() >= 2) clock_.AdvanceTo(*clock_.next_timer());
    }
    return future.get();
  }

  static std::string Request(const std::string& text) {
    EchoRequest request;
    request.set_text(text);
    return request.SerializeAsString();
  }

  static std::string TextOf(const Reply& reply) {
    EchoReply message;
    EXPECT_TRUE(message.ParseFromString(reply.body));
    return message.text();
  }
};

TEST_F(CoreRpc, AUnaryCallOverPlainTextIsAnsweredWithTheMessage) {
  EchoServer server(Echoing());
  auto client = MakeCore(server.port());
  Reply reply = Drive([&] { return client->Call(kSay, Request("hi")); });
  ASSERT_TRUE(reply.status.ok()) << reply.status.message;
  EXPECT_EQ(TextOf(reply), "echo: hi");
  EXPECT_EQ(reply.attempts, 1);
}

TEST_F(CoreRpc, UnavailableIsRetriedUntilOk) {
  EchoServer server(UnavailableThenEcho(2));
  auto client = MakeCore(server.port());
  Reply reply = Drive([&] { return client->Call(kSay, Request("again")); });
  ASSERT_TRUE(reply.status.ok()) << reply.status.message;
  EXPECT_EQ(TextOf(reply), "echo: again");
  EXPECT_EQ(server.calls(), 3);
  EXPECT_EQ(reply.attempts, 3);
}

TEST_F(CoreRpc, APushbackIsWaitedOnTheClockBeforeTheRetry) {
  EchoServer server(PushbackOnceThenEcho("250"));
  auto client = MakeCore(server.port());
  TimePoint start = clock_.Now();
  Reply reply = Drive([&] { return client->Call(kSay, Request("later")); });
  ASSERT_TRUE(reply.status.ok()) << reply.status.message;
  EXPECT_EQ(server.calls(), 2);
  // FixedRandom(0) makes the backoff nothing: the wait is the pushback.
  EXPECT_EQ(clock_.Now() - start, std::chrono::milliseconds(250));
}

TEST_F(CoreRpc, AStatusAndItsMessageComeBackAsTheServerSentThem) {
  EchoServer server([](int, grpc::ServerContext*, const EchoRequest&, EchoReply*) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "100% wrong: \xc3\xbc\n");
  });
  auto client = MakeCore(server.port());
  Reply reply = Drive([&] { return client->Call(kSay, Request("x")); });
  EXPECT_EQ(reply.status.code, Code::kInvalidArgument);
  EXPECT_EQ(reply.status.message, "100% wrong: \xc3\xbc\n");
  EXPECT_EQ(reply.attempts, 1);  // the default classify stops on it
}

TEST_F(CoreRpc, TrailingMetadataReachesTheReply) {
  EchoServer server(
      [](int, grpc::ServerContext* context, const EchoRequest& request, EchoReply* reply) {
        context->AddTrailingMetadata("served-by", "replica-2");
        return Ok(reply, request);
      });
  auto client = MakeCore(server.port());
  Reply reply = Drive([&] { return client->Call(kSay, Request("x")); });
  ASSERT_TRUE(reply.status.ok()) << reply.status.message;
  auto served = reply.trailers.find("served-by");
  ASSERT_NE(served, reply.trailers.end());
  EXPECT_EQ(served->second, "replica-2");
  EXPECT_EQ(reply.trailers.count("grpc-status"), 0U);
}

TEST_F(CoreRpc, AMethodTheServerDoesNotHaveIsUnimplemented) {
  EchoServer server(Echoing());
  auto client = MakeCore(server.port());
  Reply reply = Drive([&] { return client->Call("/outbound.test.Echo/Nope", Request("x")); });
  EXPECT_EQ(reply.status.code, Code::kUnimplemented) << reply.status.message;
}

TEST_F(CoreRpc, AServerStreamDeliversEveryMessageInOrder) {
  EchoServer server(Echoing());
  server.service().stream = [](int, grpc::ServerContext*, const EchoRequest& request,
                               grpc::ServerWriter<EchoReply>* writer) {
    for (int i = 1; i <= 3; ++i) {
      EchoReply reply;
      reply.set_text(request.text() + std::to_string(i));
      writer->Write(reply);
    }
    return grpc::Status::OK;
  };
  auto client = MakeCore(server.port());
  std::vector<std::string> got;
  Reply reply = Drive([&] {
    return client->ServerStream("/outbound.test.Echo/Count", Request("n"),
                                [&](std::string_view message) {
                                  EchoReply one;
                                  EXPECT_TRUE(one.ParseFromString(std::string(message)));
                                  got.push_back(one.text());
                                });
  });
  ASSERT_TRUE(reply.status.ok()) << reply.status.message;
  EXPECT_EQ(got, (std::vector<std::string>{"n1", "n2", "n3"}));
}

TEST_F(CoreRpc, NothingListeningIsUnavailableAfterEveryAttempt) {
  auto client = MakeCore(PortNothingListensOn());
  Reply reply = Drive([&] { return client->Call(kSay, Request("x")); });
  EXPECT_EQ(reply.status.code, Code::kUnavailable) << reply.status.message;
  EXPECT_EQ(reply.attempts, 3);
}

TEST_F(CoreRpc, ACallOverTlsIsAnswered) {
  testing::TestCA ca;
  testing::Certificate leaf = ca.IssueServer({"backend"});
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({leaf.key_pem, leaf.chain_pem});
  EchoServer server(Echoing(), grpc::SslServerCredentials(options));
  Settings settings = DefaultSettings();
  settings.tls = TlsSettings{ca.pem(), "", ""};
  auto client = MakeCore(server.port(), settings);
  Reply reply = Drive([&] { return client->Call(kSay, Request("secret")); });
  ASSERT_TRUE(reply.status.ok()) << reply.status.message;
  EXPECT_EQ(TextOf(reply), "echo: secret");
}

TEST_F(CoreRpc, EachAttemptHasASpanAndADurationPointInRpcTerms) {
  EchoServer server(UnavailableThenEcho(1));
  testing::InMemoryTelemetry recorded;
  runtime_.telemetry = recorded.telemetry();
  auto client = MakeCore(server.port());
  Reply reply = Drive([&] { return client->Call(kSay, Request("x")); });
  ASSERT_TRUE(reply.status.ok()) << reply.status.message;
  auto spans = recorded.Spans(telemetry::SpanKind::kClient);
  ASSERT_EQ(spans.size(), 2U);
  auto attribute = [](const telemetry::SpanData& span, std::string_view name) {
    const auto* value = telemetry::Find(span.attributes, name);
    return value == nullptr ? std::string("(none)") : telemetry::ToString(*value);
  };
  for (const auto& span : spans) {
    EXPECT_EQ(span.scope, "outbound.rpc");
    EXPECT_EQ(span.name, "outbound.test.Echo/Say");
    EXPECT_EQ(attribute(span, "rpc.system.name"), "grpc");
    EXPECT_EQ(attribute(span, "rpc.method"), "outbound.test.Echo/Say");
    EXPECT_EQ(attribute(span, "server.address"), "backend");
  }
  EXPECT_EQ(attribute(spans[0], "rpc.response.status_code"), "UNAVAILABLE");
  EXPECT_EQ(attribute(spans[0], "error.type"), "UNAVAILABLE");
  EXPECT_EQ(spans[0].status, telemetry::StatusCode::kError);
  EXPECT_EQ(attribute(spans[1], "rpc.response.status_code"), "OK");
  EXPECT_EQ(attribute(spans[1], "error.type"), "(none)");
  EXPECT_EQ(spans[0].context.trace_id, spans[1].context.trace_id);
  auto failed =
      recorded.Point("rpc.client.call.duration", {{"rpc.response.status_code", "UNAVAILABLE"}});
  auto answered = recorded.Point("rpc.client.call.duration", {{"rpc.response.status_code", "OK"}});
  ASSERT_TRUE(failed && answered);
  EXPECT_EQ(failed->count, 1U);
  EXPECT_EQ(answered->count, 1U);
}

// Where what is sent must be exact: the kit's transport, in fake time.
class CoreRpcOnFakeTransport : public ::testing::Test {
 protected:
  CoreRpcOnFakeTransport()
      : transport_(clock_, [this](const testing::ServerRequest&) {
          std::lock_guard lock(mu_);
          return answers_.empty() ? Unavailable() : Next();
        }) {
    runtime_.clock = &clock_;
    runtime_.random = &random_;
    runtime_.transport = &transport_;
  }

  static testing::Reply Unavailable() {
    return testing::Reply::Ok()
        .Header("content-type", "application/grpc")
        .Header("grpc-status", "14")
        .Header("grpc-retry-pushback-ms", "250");
  }

  testing::Reply Next() {
    testing::Reply reply = std::move(answers_.front());
    answers_.erase(answers_.begin());
    return reply;
  }

  std::unique_ptr<Client> Make(Settings settings = DefaultSettings()) {
    settings.addr = "backend:9090";
    return std::move(*Client::Create(runtime_, std::move(settings)));
  }

  testing::ManualClock clock_;
  testing::FixedRandom random_{0.0};
  std::mutex mu_;
  std::vector<testing::Reply> answers_;
  testing::FakeTransport transport_;
  Runtime runtime_;
};

// A server stream's attempt timeout bounds the wait for its headers, not
// the stream: the server is told the call's deadline, or it would cancel
// a stream that outlasts the attempt timeout. A unary call's server is
// told the attempt timeout.
TEST_F(CoreRpcOnFakeTransport, AServerStreamTellsTheServerTheCallsDeadlineNotItsAttemptTimeout) {
  answers_ = {testing::GrpcReply::Messages({"a", "b"}).ToReply(),
              testing::GrpcReply::Ok("c").ToReply()};
  Settings settings = DefaultSettings();
  settings.attempt_timeout = std::chrono::milliseconds(200);
  auto client = Make(settings);
  std::vector<std::string> messages;
  Reply streamed =
      client->ServerStream(kSay, "x", [&](std::string_view m) { messages.emplace_back(m); });
  EXPECT_TRUE(streamed.status.ok()) << streamed.status.message;
  EXPECT_EQ(messages, (std::vector<std::string>{"a", "b"}));
  Reply unary = client->Call(kSay, "x");
  EXPECT_TRUE(unary.status.ok()) << unary.status.message;
  auto requests = transport_.requests();
  ASSERT_EQ(requests.size(), 2U);
  EXPECT_EQ(requests[0].header("grpc-timeout"), "10000000u");
  EXPECT_EQ(requests[1].header("grpc-timeout"), "200000u");
}

// gzip_requests codes unary requests only. A server stream's request goes
// as it is: grpc-go answers in the request's encoding, and a stream's
// answer is read as it comes, without the grpc-encoding its headers would
// name, so a gzip-coded one could not be read.
TEST_F(CoreRpcOnFakeTransport, AServerStreamsRequestIsNotGzipCoded) {
  Settings settings = DefaultSettings();
  settings.gzip_requests = true;
  auto client = Make(settings);
  answers_ = {testing::GrpcReply::Messages({"a"}).ToReply(), testing::GrpcReply::Ok("b").ToReply()};
  std::vector<std::string> messages;
  Reply streamed =
      client->ServerStream(kSay, "x", [&](std::string_view m) { messages.emplace_back(m); });
  EXPECT_TRUE(streamed.status.ok()) << streamed.status.message;
  EXPECT_TRUE(client->Call(kSay, "x").status.ok());
  auto requests = transport_.requests();
  ASSERT_EQ(requests.size(), 2U);
  EXPECT_EQ(requests[0].header("grpc-encoding"), "");
  EXPECT_EQ(requests[0].body, std::string("\0\0\0\0\1x", 6));
  EXPECT_EQ(requests[1].header("grpc-encoding"), "gzip");
  ASSERT_FALSE(requests[1].body.empty());
  EXPECT_EQ(requests[1].body[0], '\1') << "the unary request's message is compressed";
}

// A stream's Deframer is made before the answer: the answer's head tells it
// the grpc-encoding, so a server that compresses a stream's messages (as
// the call asked for gzip) is read as a unary call is.
TEST_F(CoreRpcOnFakeTransport, AServerStreamsGzipCodedMessagesAreDecodedByItsHead) {
  auto client = Make(DefaultSettings());
  std::string body = *internal::FrameForSending("first", 1 << 20, /*gzip=*/true) +
                     *internal::FrameForSending("second", 1 << 20, /*gzip=*/true);
  answers_ = {testing::Reply::Ok(body)
                  .Header("content-type", "application/grpc")
                  .Header("grpc-encoding", "gzip")
                  .Trailer("grpc-status", "0")};
  std::vector<std::string> messages;
  Reply streamed =
      client->ServerStream(kSay, "x", [&](std::string_view m) { messages.emplace_back(m); });
  EXPECT_TRUE(streamed.status.ok()) << streamed.status.message;
  EXPECT_EQ(messages, (std::vector<std::string>{"first", "second"}));
  ASSERT_EQ(transport_.requests().size(), 1U);
  EXPECT_EQ(transport_.requests()[0].header("grpc-accept-encoding"), "gzip");
}

// A 200 that is not gRPC's (a proxy's page) is UNKNOWN on a stream, as on
// a unary call: its body is not read as messages.
TEST_F(CoreRpcOnFakeTransport, AServerStreamAnsweredByAnHtmlPageIsUnknown) {
  auto client = Make(DefaultSettings());
  auto page = [] {
    return testing::Reply::Ok("<html>upstream down</html>").Header("content-type", "text/html");
  };
  answers_ = {page(), page()};
  Reply streamed = client->ServerStream(
      kSay, "x", [](std::string_view) { ADD_FAILURE() << "a page is not a message"; });
  EXPECT_EQ(streamed.status.code, Code::kUnknown) << streamed.status.message;
  EXPECT_NE(streamed.status.message.find("text/html"), std::string::npos)
      << streamed.status.message;
  EXPECT_EQ(client->Call(kSay, "x").status.code, Code::kUnknown);
}

// A page over the receive limit holds no message either: UNKNOWN on a
// stream as on a unary call, to the caller and to the metrics alike, not
// RESOURCE_EXHAUSTED (the page is dropped, whatever its size).
TEST_F(CoreRpcOnFakeTransport, AServerStreamsHtmlPageOverTheReceiveLimitIsUnknown) {
  testing::InMemoryTelemetry recorded;
  runtime_.telemetry = recorded.telemetry();
  Settings settings = DefaultSettings();
  settings.max_receive_message_bytes = 10;
  auto client = Make(settings);
  auto page = [] {
    return testing::Reply::Ok(std::string(100, 'h')).Header("content-type", "text/html");
  };
  answers_ = {page(), page()};
  Reply streamed = client->ServerStream(kSay, "x", [](std::string_view) {});
  EXPECT_EQ(streamed.status.code, Code::kUnknown) << streamed.status.message;
  EXPECT_EQ(client->Call(kSay, "x").status.code, Code::kUnknown);
  auto point =
      recorded.Point("rpc.client.call.duration", {{"rpc.response.status_code", "UNKNOWN"}});
  ASSERT_TRUE(point);
  EXPECT_EQ(point->count, 2U);
}

// classify, the span and the metrics hear what the caller hears: a
// message compressed with an encoding the client cannot decode is
// UNIMPLEMENTED to all, though the answer's grpc-status says OK; and a
// message announced over the receive limit RESOURCE_EXHAUSTED, though the
// whole answer is within the core's bound.
TEST_F(CoreRpcOnFakeTransport, ClassifyAndTelemetryHearAnUndecodableMessageAsTheCallerDoes) {
  auto answer = [](std::string body) {
    return testing::Reply::Ok(std::move(body))
        .Header("content-type", "application/grpc")
        .Header("grpc-encoding", "deflate")
        .Trailer("grpc-status", "0");
  };
  // Compressed, 3 bytes; then uncompressed, announcing 100 bytes of 3.
  answers_ = {answer(std::string("\1\0\0\0\3abc", 8)), answer(std::string("\0\0\0\0\x64"
                                                                          "abc",
                                                                          8))};
  testing::InMemoryTelemetry recorded;
  runtime_.telemetry = recorded.telemetry();
  Settings settings = DefaultSettings();
  settings.max_receive_message_bytes = 10;
  std::vector<Code> heard;
  settings.classify = [&](std::string_view method, const Status& status, const Trailers& trailers) {
    heard.push_back(status.code);
    return DefaultClassify(method, status, trailers);
  };
  auto client = Make(settings);
  Reply reply = client->Call(kSay, "x");
  EXPECT_EQ(reply.status.code, Code::kUnimplemented) << reply.status.message;
  Reply over = client->Call(kSay, "x");
  EXPECT_EQ(over.status.code, Code::kResourceExhausted) << over.status.message;
  EXPECT_EQ(heard, (std::vector<Code>{Code::kUnimplemented, Code::kResourceExhausted}));
  for (const char* code : {"UNIMPLEMENTED", "RESOURCE_EXHAUSTED"}) {
    auto point = recorded.Point("rpc.client.call.duration", {{"rpc.response.status_code", code}});
    ASSERT_TRUE(point) << code;
    EXPECT_EQ(point->count, 1U) << code;
  }
}

TEST_F(CoreRpcOnFakeTransport, EachAttemptSendsTheTimeTheCallHasLeftAsGrpcTimeout) {
  auto client = Make();
  std::promise<Reply> replied;
  client->CallAsync(kSay, "x",
                    [&](Reply reply, std::exception_ptr) { replied.set_value(std::move(reply)); });
  auto reply = replied.get_future();
  while (reply.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready) {
    if (auto next = clock_.next_timer()) clock_.AdvanceTo(*next);
  }
  EXPECT_EQ(reply.get().status.code, Code::kUnavailable);
  auto requests = transport_.requests();
  ASSERT_EQ(requests.size(), 3U);
  // 10 s is 10 000 000 000 ns, past 8 digits: microseconds. Each retry
  // waited the 250 ms pushback.
  EXPECT_EQ(requests[0].header("grpc-timeout"), "10000000u");
  EXPECT_EQ(requests[1].header("grpc-timeout"), "9750000u");
  EXPECT_EQ(requests[2].header("grpc-timeout"), "9500000u");
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].target, kSay);
  EXPECT_EQ(requests[0].header("content-type"), "application/grpc");
  EXPECT_EQ(requests[0].header("te"), "trailers");
  EXPECT_EQ(requests[0].body, std::string("\0\0\0\0\1x", 6));
}

}  // namespace
}  // namespace outbound::rpc
