// SPDX-License-Identifier: Apache-2.0
// The gRPC client against grpc-go's server, the reference implementation
// (Debian golang-google-grpc-dev), in tests/rpc/grpc_go_peer, started by
// each test in plain text (h2c) or over TLS with a certificate of the
// test's own CA. What every server must see is StockGrpcServerTest's
// (stock_grpc_server_test.cc), run here against grpc-go; this file adds
// gzip as grpc-go answers it, the time a slow connection takes, and what
// grpc-go's server does that the other peers do not: connections ended at
// MaxConnectionAge with two GOAWAYs and cut after its grace, a
// MaxConcurrentStreams limit, a receive limit answered from the length
// prefix, a fixed flow-control window's stream of WINDOW_UPDATEs, and its
// PING policy. The peer reads the frames of a plain-text connection as
// they pass, so a test can say what went on the wire.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "grpc_server_test.h"
#include "held_door.h"

namespace outbound::rpc {
namespace {

using namespace std::chrono_literals;
using namespace std::string_literals;

GrpcServerProgram GrpcGo() { return {"grpc-go", {OUTBOUND_GRPC_GO_PEER}, "grpc_go_peer"}; }

INSTANTIATE_TEST_SUITE_P(GrpcGo, StockGrpcServerTest, ::testing::Values(GrpcGo()), ProgramName);

// HTTP/2's codes in the GOAWAYs the peer reports.
constexpr int kNoError = 0x0;
constexpr int kEnhanceYourCalm = 0xb;
// The last-stream-id of grpc-go's first GOAWAY of a graceful close: any
// stream, for the client may have sent some before it saw the GOAWAY.
constexpr std::uint32_t kAnyStream = 0x7fffffff;

// A context whose call the peer records under `id` (x-call-id).
Context WithCallId(const std::string& id) {
  Context context;
  context.metadata.emplace("x-call-id", id);
  return context;
}

class GrpcGoPeerTest : public GrpcServerTest {
 protected:
  GrpcGoPeerTest() : GrpcServerTest(GrpcGo()) {}
};

// The connections grpc-go has begun to end at their maximum age (its
// first GOAWAY sent).
int AgedConnections(const nlohmann::json& stats) {
  int aged = 0;
  for (const auto& connection : stats.at("connections")) {
    if (!connection.at("goaways").empty()) ++aged;
  }
  return aged;
}

// --- gzip ---

// grpc-go takes a gzip-coded request and, with no compressor of its own
// set, answers in the request's encoding: gzip both ways on one call.
TEST_F(GrpcGoPeerTest, AGzipRequestIsTakenAndAnsweredGzipCoded) {
  Settings settings = DefaultSettings();
  settings.gzip_requests = true;
  auto log = std::make_shared<WireLog>();
  settings.attempt_middleware.push_back(log);
  Start({}, settings);
  std::string request(5000, 'z');
  Reply reply = Call("Echo", request);
  ASSERT_TRUE(reply.status.ok()) << reply.status.message;
  EXPECT_EQ(reply.body, request);
  std::lock_guard lock(log->mu);
  EXPECT_EQ(log->request_encoding, "gzip");
  EXPECT_EQ(log->request_flag, 1) << "the message went uncompressed";
  EXPECT_EQ(log->answer_encoding, "gzip") << "grpc-go did not compress: the test proves nothing";
}

// A server told to compress everything (grpc.RPCCompressor) codes each
// message of a stream whose request went uncompressed.
TEST_F(GrpcGoPeerTest, AServerStreamsGzipCodedMessagesAreDecoded) {
  Settings settings = DefaultSettings();
  auto log = std::make_shared<WireLog>();
  settings.attempt_middleware.push_back(log);
  Start({"--compress-all"}, settings);
  std::vector<std::string> got;
  Reply reply = client_->ServerStream("/peer.Test/Count", "3",
                                      [&](std::string_view message) { got.emplace_back(message); });
  ASSERT_TRUE(reply.status.ok()) << reply.status.message;
  EXPECT_EQ(got, (std::vector<std::string>{"1", "2", "3"}));
  std::lock_guard lock(log->mu);
  EXPECT_EQ(log->answer_encoding, "gzip") << "grpc-go did not compress: the test proves nothing";
}

// --- Deadlines ---

// The call's connection takes 3 s of the client's clock to open (the
// grpc-go server sees the client's preface only then): its handler has at
// most the 7 s of the call's 10 that are left, less the trip.
TEST_F(GrpcGoPeerTest, TimeSpentOpeningTheConnectionIsNotTheServers) {
  Settings settings = DefaultSettings();
  settings.timeout = 10s;
  Start({}, settings);
  HeldDoor door(peer_->port());
  network_.Add("backend", 9090, "127.0.0.1", door.port());  // nothing dialled yet
  auto reply = client_->CallAsync("/peer.Test/Deadline", "");
  ASSERT_TRUE(door.WaitForConnection());
  clock_.Advance(3s);
  door.Open();
  ExpectTimeLeft(reply.get(), 7000);
}

// --- What grpc-go's server does that the other peers do not ---

// grpc-go's UNIMPLEMENTED names what it does not have, and its message
// reaches the caller as grpc-go wrote it (the shared suite checks the code).
TEST_F(GrpcGoPeerTest, ItsUnimplementedAnswerNamesTheMethodOrService) {
  Start();
  Reply method = Call("Nothing", "");
  EXPECT_EQ(method.status.code, Code::kUnimplemented) << method.status.message;
  EXPECT_THAT(method.status.message, ::testing::HasSubstr("unknown method Nothing"));
  Reply service = client_->Call("/peer.Elsewhere/Echo", "");
  EXPECT_EQ(service.status.code, Code::kUnimplemented) << service.status.message;
  EXPECT_THAT(service.status.message, ::testing::HasSubstr("unknown service peer.Elsewhere"));
}

// keepalive.ServerParameters{MaxConnectionAge}: grpc-go ends each
// connection at its age (here 40 ms, jittered) with a GOAWAY for any
// stream and a PING, then, the PING answered, a GOAWAY naming the last
// stream it takes (none when the client has closed the connection first,
// idle after the first). Calls kept in flight across many such ends all
// succeed, each reaches the server once (not even an unprocessed retry
// lands twice: the method is non-idempotent), no stream is opened on a
// connection after its GOAWAY was read, and once a call has gone on a
// newer connection no later call goes on an older one.
TEST_F(GrpcGoPeerTest, CallsAcrossManyMaxConnectionAgeGoawaysEachReachTheServerOnce) {
  Settings settings = DefaultSettings();
  settings.non_idempotent_methods = {"/peer.Test/Echo"};
  Start({"--max-connection-age=40ms"}, settings);
  constexpr int kInFlight = 8;
  constexpr int kAged = 10;
  int batches = 0;
  auto until = std::chrono::steady_clock::now() + kSafetyNet;
  while (AgedConnections(peer_->Stats()) < kAged) {
    ASSERT_LT(std::chrono::steady_clock::now(), until) << "grpc-go aged too few connections";
    std::vector<std::future<Reply>> calls;
    for (int i = 0; i < kInFlight; ++i) {
      std::string id = std::to_string(batches * kInFlight + i);
      calls.push_back(client_->CallAsync("/peer.Test/Echo", id, WithCallId(id)));
    }
    for (int i = 0; i < kInFlight; ++i) {
      auto& call = calls[static_cast<std::size_t>(i)];
      ASSERT_EQ(call.wait_for(kSafetyNet), std::future_status::ready);
      Reply reply = call.get();
      ASSERT_TRUE(reply.status.ok()) << "call " << batches * kInFlight + i << ": "
                                     << CodeName(reply.status.code) << " " << reply.status.message;
      EXPECT_EQ(reply.body, std::to_string(batches * kInFlight + i));
    }
    ++batches;
  }

  nlohmann::json stats = peer_->Stats();
  int newest_before = 0;  // the newest connection of the batches so far
  for (int batch = 0; batch < batches; ++batch) {
    int newest = newest_before;
    for (int i = 0; i < kInFlight; ++i) {
      std::string id = std::to_string(batch * kInFlight + i);
      const auto& received = stats.at("call_ids").at(id);
      ASSERT_EQ(received.size(), 1u)
          << "call " << id << " reached the server " << received.size() << " times";
      int connection = received[0].get<int>();
      EXPECT_GE(connection, newest_before) << "call " << id << " went on an older connection";
      newest = std::max(newest, connection);
    }
    newest_before = newest;
  }
  EXPECT_GE(newest_before, kAged) << "the calls never moved to a new connection";
  for (const auto& connection : stats.at("connections")) {
    EXPECT_EQ(connection.at("streams_after_goaway").get<int>(), 0) << connection.dump();
    EXPECT_EQ(connection.at("refused").get<int>(), 0) << connection.dump();
    const auto& goaways = connection.at("goaways");
    if (goaways.empty()) continue;
    EXPECT_LE(goaways.size(), 2u) << connection.dump();
    EXPECT_EQ(goaways[0].at("last_stream_id").get<std::uint32_t>(), kAnyStream);
    for (const auto& goaway : goaways) EXPECT_EQ(goaway.at("code").get<int>(), kNoError);
  }
}

// A stream open when its connection reaches its age goes on there to its
// end (grpc-go's grace outlasts it), while the next call goes on a new
// connection; the stream is neither cut nor opened again.
TEST_F(GrpcGoPeerTest, AStreamOpenWhenItsConnectionAgesFinishesThere) {
  Start({"--max-connection-age=40ms"});
  Stream chat = client_->OpenStream("/peer.Test/Chat", WithCallId("chat"));
  ASSERT_TRUE(chat.Write(std::string_view("before")));
  std::string echoed;
  ASSERT_TRUE(chat.Read(&echoed));
  EXPECT_EQ(echoed, "echo:before");
  int chat_connection = peer_->Stats().at("call_ids").at("chat")[0].get<int>();
  // Both GOAWAYs sent on the stream's connection.
  ASSERT_TRUE(peer_->WaitFor([&](const nlohmann::json& stats) {
    return stats.at("connections")[chat_connection - 1].at("goaways").size() >= 2;
  }));

  Reply reply = Call("Echo", "meanwhile", WithCallId("meanwhile"));
  ASSERT_TRUE(reply.status.ok()) << reply.status.message;
  ASSERT_TRUE(chat.Write(std::string_view("after")));
  ASSERT_TRUE(chat.Read(&echoed));
  EXPECT_EQ(echoed, "echo:after");
  ASSERT_TRUE(chat.WritesDone());
  EXPECT_FALSE(chat.Read(&echoed));
  Status status = chat.Finish();
  EXPECT_TRUE(status.ok()) << status.message;
  EXPECT_EQ(chat.attempts(), 1);

  nlohmann::json stats = peer_->Stats();
  EXPECT_EQ(stats.at("calls").value("Chat", 0), 1);
  EXPECT_EQ(stats.at("cancelled").get<int>(), 0);
  EXPECT_GT(stats.at("call_ids").at("meanwhile")[0].get<int>(), chat_connection);
}

// keepalive.ServerParameters{MaxConnectionAgeGrace}: a call still going
// that long after its connection's age is cut, the connection closed
// under it. It ends UNAVAILABLE and, its method non-idempotent and the
// call received, is not sent again; the next call opens a new connection.
TEST_F(GrpcGoPeerTest, ACallOutlastingTheAgesGraceIsCutAndNotSentAgain) {
  Settings settings = DefaultSettings();
  settings.timeout = 60s;
  settings.non_idempotent_methods = {"/peer.Test/Hang"};
  Start({"--max-connection-age=40ms", "--max-connection-age-grace=100ms"}, settings);
  auto call = client_->CallAsync("/peer.Test/Hang", "", WithCallId("hang"));
  ASSERT_EQ(call.wait_for(kSafetyNet), std::future_status::ready);
  Reply reply = call.get();
  EXPECT_EQ(reply.status.code, Code::kUnavailable) << reply.status.message;
  EXPECT_EQ(reply.attempts, 1);
  Reply next = client_->Call("/peer.Test/Echo", "next", WithCallId("next"));
  ASSERT_TRUE(next.status.ok()) << next.status.message;
  EXPECT_EQ(next.attempts, 1);

  EXPECT_TRUE(PeerSawCancelled(1));
  nlohmann::json stats = peer_->Stats();
  EXPECT_EQ(stats.at("calls").value("Hang", 0), 1);
  int hang_connection = stats.at("call_ids").at("hang")[0].get<int>();
  EXPECT_EQ(stats.at("connections")[hang_connection - 1].at("goaways").size(), 2u)
      << "grpc-go closed the connection before its GOAWAYs";
  EXPECT_GT(stats.at("call_ids").at("next")[0].get<int>(), hang_connection);
}

// grpc.MaxConcurrentStreams(3): twelve calls at once, each held by the
// server until three wait together, all complete on their first attempt.
// The client keeps to the limit, opening connections as it needs them
// (docs/grpc-client.md): grpc-go refuses no stream, and no connection
// carries more than three.
TEST_F(GrpcGoPeerTest, MoreCallsThanTheServersStreamLimitAllCompleteAndNoneIsRefused) {
  Start({"--max-concurrent-streams=3"});
  // The server's SETTINGS, with its limit, have come: no stream goes out
  // before them.
  auto warmed = client_->Warm().get();
  ASSERT_TRUE(warmed) << warmed.error().message();
  constexpr int kCalls = 12;
  std::vector<std::future<Reply>> calls;
  for (int i = 0; i < kCalls; ++i) calls.push_back(client_->CallAsync("/peer.Test/Gate", "3"));
  for (auto& call : calls) {
    ASSERT_EQ(call.wait_for(kSafetyNet), std::future_status::ready);
    Reply reply = call.get();
    ASSERT_TRUE(reply.status.ok()) << reply.status.message;
    EXPECT_EQ(reply.body, "passed");
    EXPECT_EQ(reply.attempts, 1);
  }
  nlohmann::json stats = peer_->Stats();
  EXPECT_EQ(stats.at("calls").value("Gate", 0), kCalls);
  int streams = 0;
  for (const auto& connection : stats.at("connections")) {
    EXPECT_EQ(connection.at("refused").get<int>(), 0) << connection.dump();
    EXPECT_LE(connection.at("max_in_flight").get<int>(), 3) << connection.dump();
    streams += connection.at("streams").get<int>();
  }
  EXPECT_EQ(streams, kCalls);
  // One opened only when every other is full: four hold twelve.
  EXPECT_LE(stats.at("connections").size(), 4u);
}

// grpc.MaxRecvMsgSize(1024): a larger request ends RESOURCE_EXHAUSTED with
// grpc-go's own message, read from its length prefix, and is not sent
// again. At 256 KiB the request outruns the stream's flow-control window:
// grpc-go answers and resets the stream (NO_ERROR) while the client still
// has bytes to send, and the answer is still the call's.
TEST_F(GrpcGoPeerTest, ARequestOverTheServersReceiveLimitIsResourceExhaustedAndNotRetried) {
  Start({"--max-receive-message-size=1024"});
  Reply at = Call("Echo", std::string(1024, 'a'));
  ASSERT_TRUE(at.status.ok()) << at.status.message;
  for (std::size_t size : {std::size_t{2000}, std::size_t{256 * 1024}}) {
    SCOPED_TRACE(size);
    Reply over = Call("Echo", std::string(size, 'a'));
    EXPECT_EQ(over.status.code, Code::kResourceExhausted) << over.status.message;
    EXPECT_THAT(over.status.message, ::testing::HasSubstr("received message larger than max (" +
                                                          std::to_string(size) + " vs. 1024)"));
    EXPECT_EQ(over.attempts, 1);
  }
  nlohmann::json stats = peer_->Stats();
  EXPECT_EQ(stats.at("calls").value("Echo", 0), 1);
  ASSERT_EQ(stats.at("connections").size(), 1u);
  EXPECT_EQ(stats.at("connections")[0].at("streams").get<int>(), 3) << "a request went twice";
}

// grpc-go's MaxHeaderListSize is advertised as SETTINGS_MAX_HEADER_LIST_SIZE
// and enforced by closing the whole connection, every call on it with it.
// A call whose metadata is over it is not sent: INTERNAL, as grpc-go's own
// client says, not retried, and not the server's failure (the breaker
// stays closed however many come); the connection carries on.
TEST_F(GrpcGoPeerTest, MetadataOverTheServersHeaderListSizeIsNotSent) {
  Start({"--max-header-list-size=8192"});
  ASSERT_TRUE(Call("Echo", "first").status.ok());  // the server's SETTINGS are in
  Context big;
  big.metadata.emplace("x-pad", std::string(9000, 'p'));
  for (int i = 0; i < 8; ++i) {
    Reply over = Call("Echo", "big", big);
    EXPECT_EQ(over.status.code, Code::kInternal) << over.status.message;
    EXPECT_THAT(over.status.message, ::testing::HasSubstr("SETTINGS_MAX_HEADER_LIST_SIZE"));
    EXPECT_FALSE(over.status.rejected);
    EXPECT_EQ(over.attempts, 1) << "retried";
  }
  Context fits;
  fits.metadata.emplace("x-pad", std::string(7000, 'p'));
  // Eight failures the breaker counted would have opened it (five in a
  // row do), and this call would be rejected.
  Reply under = Call("Echo", "fits", fits);
  EXPECT_TRUE(under.status.ok()) << under.status.message;
  nlohmann::json stats = peer_->Stats();
  EXPECT_EQ(stats.at("calls").value("Echo", 0), 2);
  ASSERT_EQ(stats.at("connections").size(), 1u) << stats.dump();
  EXPECT_EQ(stats.at("connections")[0].at("streams").get<int>(), 2) << stats.dump();
}

// grpc-go holds a gzip-coded request to its limit decoded, not as sent.
TEST_F(GrpcGoPeerTest, AGzipRequestOverTheServersReceiveLimitDecodedIsResourceExhausted) {
  Settings settings = DefaultSettings();
  settings.gzip_requests = true;
  Start({"--max-receive-message-size=1024"}, settings);
  Reply over = Call("Echo", std::string(5000, 'z'));  // far fewer than 1024 bytes coded
  EXPECT_EQ(over.status.code, Code::kResourceExhausted) << over.status.message;
  EXPECT_THAT(over.status.message,
              ::testing::HasSubstr("received message larger than max (5000 vs. 1024)"));
  EXPECT_EQ(over.attempts, 1);
  EXPECT_EQ(peer_->Calls("Echo"), 0);
}

// grpc.InitialWindowSize(64 KiB), a fixed window: through a 16 MiB upload
// grpc-go opens it again with two WINDOW_UPDATEs for each 16 KiB it reads,
// thousands of frames in a row with no HEADERS or DATA. Each lets the
// client send more, so none is the flood the client ends a connection
// for (docs/http-client.md): the upload arrives whole.
TEST_F(GrpcGoPeerTest, AnUploadThroughGrpcGosWindowUpdatesIsNoFlood) {
  Start({"--initial-window-size=65536"});
  Stream stream = client_->OpenStream("/peer.Test/Drain");
  const std::string message(16 * 1024, 'u');
  constexpr int kMessages = 1024;
  for (int i = 0; i < kMessages; ++i) ASSERT_TRUE(stream.Write(message)) << "message " << i;
  ASSERT_TRUE(stream.WritesDone());
  std::string reply;
  ASSERT_TRUE(stream.Read(&reply));
  Status status = stream.Finish();
  ASSERT_TRUE(status.ok()) << status.message;
  EXPECT_EQ(reply, std::to_string(kMessages * message.size()));
  nlohmann::json stats = peer_->Stats();
  ASSERT_EQ(stats.at("connections").size(), 1u);
  EXPECT_GT(stats.at("connections")[0].at("max_quiet_frames").get<int>(), 1000)
      << "grpc-go wrote too few frames without HEADERS or DATA: the test proves nothing";
}

// grpc-go's PING policy (keepalive.EnforcementPolicy, MinTime 5 min):
// each PING that comes sooner than MinTime after the last, while grpc-go
// has written no HEADERS or DATA since, is a strike, and the third strike
// ends the connection with GOAWAY ENHANCE_YOUR_CALM "too_many_pings". The
// client has no keepalive setting; the PINGs it sends are its probes of a
// quiet connection (a call cancelled after 1 s without a word from the
// server), one until the server sends HEADERS or DATA again
// (docs/http-client.md). So five quiet cancels in a row cost one PING,
// three more each after an answer one each, and grpc-go never ends the
// connection.
TEST_F(GrpcGoPeerTest, QuietConnectionProbesStayWithinGrpcGosPingPolicy) {
  Settings settings = DefaultSettings();
  settings.timeout = 60s;
  Start({}, settings);
  int hangs = 0;
  // A call the server holds, cancelled once the connection has been quiet
  // for a second of the client's clock.
  auto quiet_cancel = [&] {
    CancelSource cancel;
    Context context;
    context.cancel = cancel.token();
    std::future<Reply> call = client_->CallAsync("/peer.Test/Hang", "", context);
    WaitForCalls("Hang", ++hangs);
    clock_.Advance(1s);
    cancel.Cancel();
    ASSERT_EQ(call.wait_for(kSafetyNet), std::future_status::ready);
    EXPECT_EQ(call.get().status.code, Code::kCancelled);
    ASSERT_TRUE(PeerSawCancelled(hangs));
  };
  auto pings = [](const nlohmann::json& stats) {
    int sent = 0;
    for (const auto& connection : stats.at("connections")) {
      sent += connection.at("pings").get<int>();
    }
    return sent;
  };

  // Called directly, not through Call: that would move the clock to the
  // probe's answer timer.
  ASSERT_TRUE(client_->Call("/peer.Test/Echo", "first").status.ok());
  for (int i = 0; i < 5; ++i) quiet_cancel();
  int pings_while_quiet = pings(peer_->Stats());
  EXPECT_GE(pings_while_quiet, 1) << "the client never probed: the test proves nothing";
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(client_->Call("/peer.Test/Echo", "between").status.ok());
    quiet_cancel();
  }
  Reply last = client_->Call("/peer.Test/Echo", "last");
  ASSERT_TRUE(last.status.ok()) << last.status.message;

  nlohmann::json stats = peer_->Stats();
  EXPECT_GT(pings(stats), pings_while_quiet) << "no probe after the server spoke again";
  for (const auto& connection : stats.at("connections")) {
    EXPECT_LE(connection.at("max_quiet_pings").get<int>(), 1) << connection.dump();
    for (const auto& goaway : connection.at("goaways")) {
      EXPECT_NE(goaway.at("code").get<int>(), kEnhanceYourCalm) << goaway.dump();
      EXPECT_NE(goaway.at("debug").get<std::string>(), "too_many_pings");
    }
  }
}

}  // namespace
}  // namespace outbound::rpc
