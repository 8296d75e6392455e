// SPDX-License-Identifier: Apache-2.0
// The gRPC client against a server nobody here wrote: Python grpcio
// (Debian python3-grpcio), in tests/rpc/grpcio_peer.py, started by each test
// in plain text (h2c) or over TLS with a certificate of the test's own CA.
// What every server must see is StockGrpcServerTest's
// (stock_grpc_server_test.cc), run here against grpcio; this file adds the
// client's other ways to call (callbacks, coroutines, a reader far behind
// a flood), metadata added by middleware, gzip as grpcio answers it, a
// stream's deadline, a client stream sent again, the receive limit, and a
// call cut by the client's end.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "grpc_server_test.h"
#include "outbound/rpc/asio.h"

namespace outbound::rpc {
namespace {

using namespace std::chrono_literals;
using namespace std::string_literals;

GrpcServerProgram Grpcio() {
  return {"grpcio",
          {OUTBOUND_GRPCIO_PYTHON, OUTBOUND_GRPCIO_PEER_SCRIPT},
          "grpcio_peer.py (is python3-grpcio installed?)"};
}

INSTANTIATE_TEST_SUITE_P(Grpcio, StockGrpcServerTest, ::testing::Values(Grpcio()), ProgramName);

// Custom metadata on every call: `name: value` as given (a "-bin" value
// already in base64, as the caller sends it on the wire).
class AddMetadata final : public http::CallMiddleware {
 public:
  AddMetadata(std::string name, std::string value)
      : name_(std::move(name)), value_(std::move(value)) {}
  std::optional<Result<http::Response>> OnRequest(http::OutgoingRequest& request,
                                                  const http::CallInfo&) override {
    request.SetHeader(name_, value_);
    return std::nullopt;
  }

 private:
  std::string name_;
  std::string value_;
};

class GrpcioPeerTest : public GrpcServerTest {
 protected:
  GrpcioPeerTest() : GrpcServerTest(Grpcio()) {}
};

// --- The client's other ways to call ---

// The callback form: ServerStreamAsync returns at once; each message
// comes in order, then `done` once with the status, and no message after.
TEST_F(GrpcioPeerTest, AnAsyncServerStreamDeliversEveryMessageThenItsEnd) {
  Start({}, DefaultSettings(), /*tls=*/true);
  std::mutex mu;
  std::vector<std::string> got;
  bool ended = false;
  int after_end = 0;
  std::promise<Reply> replied;
  client_->ServerStreamAsync(
      "/peer.Test/Count", "50",
      [&](std::string_view message) {
        std::lock_guard lock(mu);
        if (ended) ++after_end;
        got.emplace_back(message);
      },
      [&](Reply reply, std::exception_ptr thrown) {
        {
          std::lock_guard lock(mu);
          ended = true;
        }
        EXPECT_EQ(thrown, nullptr);
        replied.set_value(std::move(reply));
      });
  Reply reply = replied.get_future().get();
  EXPECT_TRUE(reply.status.ok()) << reply.status.message;
  EXPECT_EQ(reply.attempts, 1);
  std::lock_guard lock(mu);
  ASSERT_EQ(got.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(got[i], std::to_string(i + 1));
  EXPECT_EQ(after_end, 0);
}

// A request over the send limit never leaves: `done` hears it, never on
// the caller's own stack.
TEST_F(GrpcioPeerTest, AnAsyncServerStreamThatCannotBeSentEndsThroughDone) {
  Settings settings = DefaultSettings();
  settings.max_send_message_bytes = 4;
  Start({}, settings, /*tls=*/true);
  std::promise<Reply> replied;
  std::thread::id caller = std::this_thread::get_id();
  std::thread::id told_on;
  client_->ServerStreamAsync(
      "/peer.Test/Count", "too long for the limit", [](std::string_view) {},
      [&](Reply reply, std::exception_ptr) {
        told_on = std::this_thread::get_id();
        replied.set_value(std::move(reply));
      });
  Reply reply = replied.get_future().get();
  EXPECT_EQ(reply.status.code, Code::kResourceExhausted) << reply.status.message;
  EXPECT_EQ(reply.attempts, 0);
  EXPECT_NE(told_on, caller);
  EXPECT_EQ(peer_->Calls("Count"), 0);
}

// A reader far behind the server: the client stops asking for more once
// about 1 MiB waits unread (rpc/stream.h), so grpcio runs ahead by what
// that and the stream's 1 MiB window take and then waits; the reader that
// catches up gets every message, in order, and the call ends OK.
TEST_F(GrpcioPeerTest, AReaderFarBehindAFloodGetsEveryMessageInOrder) {
  Start({}, DefaultSettings(), /*tls=*/true);
  constexpr int kMessages = 4096;
  constexpr int kSize = 4096;  // 16 MiB in all
  Stream flood = client_->OpenStream("/peer.Test/Flood");
  ASSERT_TRUE(flood.Write(std::to_string(kMessages) + ":" + std::to_string(kSize)));
  ASSERT_TRUE(flood.WritesDone());
  // Nothing read until the server has handed grpcio 1.5 MiB, past the
  // 1 MiB the client reads ahead before it holds the stream's window.
  ASSERT_TRUE(peer_->WaitFor([&](const nlohmann::json& stats) {
    return stats.at("flooded").get<int>() * kSize >= 1536 * 1024;
  }));
  std::string message;
  int next = 0;
  while (flood.Read(&message)) {
    ASSERT_EQ(message.size(), static_cast<std::size_t>(kSize));
    char index[16];
    std::snprintf(index, sizeof index, "%08d", next++);
    ASSERT_EQ(message.substr(0, 8), index);
  }
  Status status = flood.Finish();
  EXPECT_TRUE(status.ok()) << status.message;
  EXPECT_EQ(next, kMessages);
}

// ReadAsync, each read asking for the next from its callback, through the
// same flood: every message in order, then nullopt, then Finish says OK.
TEST_F(GrpcioPeerTest, ReadsChainedFromTheirCallbacksGetAFloodInOrder) {
  Start({}, DefaultSettings(), /*tls=*/true);
  constexpr int kMessages = 4096;
  constexpr int kSize = 4096;
  Stream flood = client_->OpenStream("/peer.Test/Flood");
  ASSERT_TRUE(flood.Write(std::to_string(kMessages) + ":" + std::to_string(kSize)));
  ASSERT_TRUE(flood.WritesDone());
  std::atomic<int> next{0};
  std::atomic<int> wrong{0};
  std::promise<void> ended;
  std::function<void(std::optional<std::string>)> read = [&](std::optional<std::string> message) {
    if (!message) return ended.set_value();
    char index[16];
    std::snprintf(index, sizeof index, "%08d", next.load());
    if (message->size() != static_cast<std::size_t>(kSize) || message->substr(0, 8) != index) {
      ++wrong;
    }
    ++next;
    flood.ReadAsync(read);
  };
  flood.ReadAsync(read);
  ended.get_future().get();
  EXPECT_EQ(next.load(), kMessages);
  EXPECT_EQ(wrong.load(), 0);
  Status status = flood.Finish();
  EXPECT_TRUE(status.ok()) << status.message;
}

// The co_await form (outbound/rpc/asio.h): a coroutine writes each line
// and awaits its echo, then the stream's end.
TEST_F(GrpcioPeerTest, ACoroutineAwaitsEachEchoOfABidiStream) {
  namespace asio = boost::asio;
  asio::io_context io;
  Start({}, DefaultSettings(), /*tls=*/true);
  Stream chat = client_->OpenStream("/peer.Test/Chat");
  std::vector<std::optional<std::string>> got;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        for (const char* line : {"a", "b", "c"}) {
          chat.Write(std::string_view(line));
          got.push_back(co_await AsyncRead(chat, asio::use_awaitable));
        }
        chat.WritesDone();
        got.push_back(co_await AsyncRead(chat, asio::use_awaitable));
      },
      asio::detached);
  io.run();
  EXPECT_EQ(got,
            (std::vector<std::optional<std::string>>{"echo:a", "echo:b", "echo:c", std::nullopt}));
  Status status = chat.Finish();
  EXPECT_TRUE(status.ok()) << status.message;
}

// A read that waits for a message the server never sends hears the
// stream's end; a second read while one waits gets nothing at once.
TEST_F(GrpcioPeerTest, AWaitingReadHearsTheEndAndASecondReadGetsNothing) {
  Start({}, DefaultSettings(), /*tls=*/true);
  Stream chat = client_->OpenStream("/peer.Test/Chat");
  ASSERT_TRUE(chat.Write(std::string_view("hello")));
  std::promise<std::optional<std::string>> first;
  chat.ReadAsync([&](std::optional<std::string> m) { first.set_value(std::move(m)); });
  EXPECT_EQ(first.get_future().get(), std::optional<std::string>("echo:hello"));
  std::promise<std::optional<std::string>> waiting;
  std::promise<std::optional<std::string>> second;
  chat.ReadAsync([&](std::optional<std::string> m) { waiting.set_value(std::move(m)); });
  chat.ReadAsync([&](std::optional<std::string> m) { second.set_value(std::move(m)); });
  EXPECT_EQ(second.get_future().get(), std::nullopt);
  std::string blocked;
  EXPECT_FALSE(chat.Read(&blocked)) << "a Read while a ReadAsync waits";
  ASSERT_TRUE(chat.WritesDone());
  EXPECT_EQ(waiting.get_future().get(), std::nullopt);
  Status status = chat.Finish();
  EXPECT_TRUE(status.ok()) << status.message;
}

// --- Metadata ---

// Binary metadata sent in base64 reaches grpcio as its bytes (the peer
// echoes it into its trailers, encoding it again), and comes back decoded
// in Reply::trailers; text metadata as it was.
TEST_F(GrpcioPeerTest, BinaryMetadataGoesAndComesBackAsItsBytes) {
  Settings settings = DefaultSettings();
  const std::string bytes("\x00\x01\xfe\xff binary", 11);
  // base64 of `bytes` without padding, as gRPC sends it.
  settings.call_middleware.push_back(
      std::make_shared<AddMetadata>("x-blob-bin", "AAH+/yBiaW5hcnk"));
  settings.call_middleware.push_back(std::make_shared<AddMetadata>("x-text", "plain value"));
  Start({}, settings);
  Reply reply = Call("Echo", "m");
  ASSERT_TRUE(reply.status.ok()) << reply.status.message;
  nlohmann::json seen = peer_->Stats().at("last_metadata");
  EXPECT_EQ(seen.value("x-blob-bin", ""), "0001feff2062696e617279");  // the bytes, in hex
  EXPECT_EQ(seen.value("x-text", ""), "plain value");
  auto blob = reply.trailers.find("x-blob-bin");
  ASSERT_NE(blob, reply.trailers.end());
  EXPECT_EQ(blob->second, bytes);
  auto text = reply.trailers.find("x-text");
  ASSERT_NE(text, reply.trailers.end());
  EXPECT_EQ(text->second, "plain value");
}

// A call's own metadata (Context::metadata) reaches grpcio: a name in any
// case arrives in lower case, a "-bin" value as its bytes; and each call
// sends its own.
TEST_F(GrpcioPeerTest, EachCallSendsItsContextsMetadata) {
  Start();
  const std::string bytes("\x00\x01\xfe\xff binary", 11);
  Context first;
  first.metadata.emplace("Authorization", "Bearer first");
  first.metadata.emplace("x-id-bin", bytes);
  Reply reply = Call("Echo", "m", first);
  ASSERT_TRUE(reply.status.ok()) << reply.status.message;
  nlohmann::json seen = peer_->Stats().at("last_metadata");
  EXPECT_EQ(seen.value("authorization", ""), "Bearer first");
  EXPECT_EQ(seen.value("x-id-bin", ""), "0001feff2062696e617279");  // the bytes, in hex
  auto echoed = reply.trailers.find("x-id-bin");
  ASSERT_NE(echoed, reply.trailers.end());
  EXPECT_EQ(echoed->second, bytes);

  Context second;
  second.metadata.emplace("authorization", "Bearer second");
  reply = Call("Echo", "m", second);
  ASSERT_TRUE(reply.status.ok()) << reply.status.message;
  seen = peer_->Stats().at("last_metadata");
  EXPECT_EQ(seen.value("authorization", ""), "Bearer second");
  EXPECT_FALSE(seen.contains("x-id-bin"));
}

TEST_F(GrpcioPeerTest, AStreamSendsItsContextsMetadata) {
  Start();
  Context context;
  context.metadata.emplace("x-tenant", "acme");
  Stream stream = client_->OpenStream("/peer.Test/Join", context);
  ASSERT_TRUE(stream.Write(std::string_view("a")));
  ASSERT_TRUE(stream.WritesDone());
  std::string reply;
  ASSERT_TRUE(stream.Read(&reply));
  Status status = stream.Finish();
  ASSERT_TRUE(status.ok()) << status.message;
  EXPECT_EQ(peer_->Stats().at("last_metadata").value("x-tenant", ""), "acme");
  EXPECT_THAT(stream.headers(), ::testing::ElementsAre(::testing::Pair("x-served-by", "grpcio")));
}

// Metadata gRPC does not allow ends the call with INTERNAL naming it, and
// nothing reaches the server: a unary call, and a stream.
TEST_F(GrpcioPeerTest, BadMetadataEndsTheCallWithInternalAndNothingIsSent) {
  Start();
  Context context;
  context.metadata.emplace("grpc-timeout", "1S");
  Reply reply = Call("Echo", "m", context);
  EXPECT_EQ(reply.status.code, Code::kInternal);
  EXPECT_THAT(reply.status.message, ::testing::HasSubstr("\"grpc-timeout\""));
  EXPECT_EQ(reply.attempts, 0);

  Context bad_value;
  bad_value.metadata.emplace("x-note", "line\r\nbreak");
  Stream stream = client_->OpenStream("/peer.Test/Join", bad_value);
  EXPECT_FALSE(stream.Write(std::string_view("a")));
  std::string message;
  EXPECT_FALSE(stream.Read(&message));
  Status status = stream.Finish();
  EXPECT_EQ(status.code, Code::kInternal);
  EXPECT_THAT(status.message, ::testing::HasSubstr("\"x-note\""));
  EXPECT_EQ(stream.attempts(), 0);

  EXPECT_EQ(peer_->Calls("Echo"), 0);
  EXPECT_EQ(peer_->Calls("Join"), 0);
}

// --- gzip ---

TEST_F(GrpcioPeerTest, AGzipAnswerIsDecoded) {
  Settings settings = DefaultSettings();
  auto log = std::make_shared<WireLog>();
  settings.attempt_middleware.push_back(log);
  Start({}, settings);
  Reply reply = Call("Gzip", "abc");
  ASSERT_TRUE(reply.status.ok()) << reply.status.message;
  EXPECT_EQ(reply.body.size(), 3000u);
  EXPECT_EQ(reply.body.substr(0, 6), "abcabc");
  std::lock_guard lock(log->mu);
  EXPECT_EQ(log->answer_encoding, "gzip") << "grpcio did not compress: the test proves nothing";
}

// A stream asks for gzip as a unary call does, and grpcio, told to
// compress, codes each message: the answer's head tells the stream's
// Deframer (made before it) how to read them.
TEST_F(GrpcioPeerTest, AServerStreamsGzipCodedMessagesAreDecoded) {
  Settings settings = DefaultSettings();
  auto log = std::make_shared<WireLog>();
  settings.attempt_middleware.push_back(log);
  Start({}, settings);
  std::vector<std::string> got;
  Reply reply = client_->ServerStream("/peer.Test/GzipStream", "3",
                                      [&](std::string_view message) { got.emplace_back(message); });
  ASSERT_TRUE(reply.status.ok()) << reply.status.message;
  EXPECT_EQ(got, (std::vector<std::string>{std::string(100, '1'), std::string(100, '2'),
                                           std::string(100, '3')}));
  std::lock_guard lock(log->mu);
  EXPECT_EQ(log->answer_encoding, "gzip") << "grpcio did not compress: the test proves nothing";
}

// The same on a bidirectional stream, read as each message comes.
TEST_F(GrpcioPeerTest, ABidiStreamsGzipCodedMessagesAreDecoded) {
  Settings settings = DefaultSettings();
  auto log = std::make_shared<WireLog>();
  settings.attempt_middleware.push_back(log);
  Start({}, settings);
  Stream chat = client_->OpenStream("/peer.Test/GzipChat");
  std::string first, second, more;
  ASSERT_TRUE(chat.Write("ab"));
  ASSERT_TRUE(chat.Read(&first));
  ASSERT_TRUE(chat.Write("cd"));
  ASSERT_TRUE(chat.Read(&second));
  chat.WritesDone();
  EXPECT_FALSE(chat.Read(&more));
  Status status = chat.Finish();
  EXPECT_TRUE(status.ok()) << status.message;
  std::string ab, cd;
  for (int i = 0; i < 100; ++i) {
    ab += "ab";
    cd += "cd";
  }
  EXPECT_EQ(first, "echo:" + ab);
  EXPECT_EQ(second, "echo:" + cd);
  std::lock_guard lock(log->mu);
  EXPECT_EQ(log->answer_encoding, "gzip") << "grpcio did not compress: the test proves nothing";
}

// A gzip-coded answer is held to the receive limit decoded, not as sent.
TEST_F(GrpcioPeerTest, AGzipAnswerOverTheLimitDecodedIsResourceExhausted) {
  Settings settings = DefaultSettings();
  settings.max_receive_message_bytes = 2000;  // the answer is 3000 bytes decoded, far fewer coded
  Start({}, settings);
  Reply reply = Call("Gzip", "abc");
  EXPECT_EQ(reply.status.code, Code::kResourceExhausted) << reply.status.message;
}

TEST_F(GrpcioPeerTest, AGzipRequestIsTakenByTheServer) {
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
}

// --- Deadlines ---

// With an attempt timeout of 200 ms, a unary call's attempt tells grpcio
// 200 ms; a server stream's tells it the call's 7 s, for its attempt
// timeout bounds only the wait for its headers (told 200 ms, grpcio would
// cancel a stream that outlasted them).
TEST_F(GrpcioPeerTest, AServerStreamTellsTheServerTheCallsDeadlineNotItsAttemptTimeout) {
  Settings settings = DefaultSettings();
  settings.timeout = 7s;
  settings.attempt_timeout = 200ms;
  Start({}, settings);
  // Called here, not through Call: that moves the clock to each timer, the
  // 200 ms attempt timeout's too, and grpcio answers in real time.
  Reply unary = client_->Call("/peer.Test/Deadline", "");
  ASSERT_TRUE(unary.status.ok()) << unary.status.message;
  EXPECT_LE(std::stoi(unary.body), 200);
  std::vector<std::string> got;
  Reply stream =
      client_->ServerStream("/peer.Test/DeadlineStream", "",
                            [&](std::string_view message) { got.emplace_back(message); });
  ASSERT_TRUE(stream.status.ok()) << stream.status.message;
  ASSERT_EQ(got.size(), 1u);
  ASSERT_NE(got[0], "none") << "no grpc-timeout arrived";
  EXPECT_LE(std::stoi(got[0]), 7000);
  EXPECT_GT(std::stoi(got[0]), 6000);
}

// --- Retries and pushback ---

// A client stream the server fails before answering any message opens
// again, and grpcio receives every message the caller wrote a second time.
TEST_F(GrpcioPeerTest, AClientStreamFailedBeforeAnyMessageIsSentAgainWhole) {
  Start({"--answers=UNAVAILABLE,OK"});
  Stream stream = client_->OpenStream("/peer.Test/FlakyJoin");
  for (const char* part : {"a", "b", "c"}) ASSERT_TRUE(stream.Write(std::string_view(part)));
  ASSERT_TRUE(stream.WritesDone());
  auto ended = std::async(std::launch::async, [&] {
    std::string reply;
    bool read = stream.Read(&reply);
    Status status = stream.Finish();
    return std::tuple(read, reply, status);
  });
  TimePoint until = clock_.Now() + timeout_;
  while (ended.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready) {
    if (auto next = clock_.next_timer(); next && *next < until) clock_.AdvanceTo(*next);
  }
  auto [read, reply, status] = ended.get();
  EXPECT_TRUE(status.ok()) << status.message;
  ASSERT_TRUE(read);
  EXPECT_EQ(reply, "a+b+c");
  EXPECT_EQ(stream.attempts(), 2);
  EXPECT_EQ(peer_->Calls("FlakyJoin"), 2);
}

TEST_F(GrpcioPeerTest, ANonIdempotentClientStreamIsNotSentAgainAfterUnavailable) {
  Settings settings = DefaultSettings();
  settings.non_idempotent_methods = {"/peer.Test/FlakyJoin"};
  Start({"--answers=UNAVAILABLE,OK"}, settings);
  Stream stream = client_->OpenStream("/peer.Test/FlakyJoin");
  ASSERT_TRUE(stream.Write(std::string_view("a")));
  ASSERT_TRUE(stream.WritesDone());
  Status status = stream.Finish();
  EXPECT_EQ(status.code, Code::kUnavailable) << status.message;
  EXPECT_EQ(stream.attempts(), 1);
  EXPECT_EQ(peer_->Calls("FlakyJoin"), 1);
}

// --- Limits and cancellation ---

TEST_F(GrpcioPeerTest, AnAnswerOverTheReceiveLimitIsResourceExhausted) {
  Settings settings = DefaultSettings();
  settings.max_receive_message_bytes = 1024 * 1024;
  Start({}, settings);
  Reply over = Call("Big", std::to_string(1024 * 1024 + 1));
  EXPECT_EQ(over.status.code, Code::kResourceExhausted) << over.status.message;
  EXPECT_EQ(over.attempts, 1);
  // At the limit is fine, on the same client.
  Reply at = Call("Big", std::to_string(1024 * 1024));
  ASSERT_TRUE(at.status.ok()) << at.status.message;
  EXPECT_EQ(at.body.size(), 1024u * 1024u);
}

// A call mid-attempt when the client goes: its RPC is cancelled, which
// grpcio sees, and `done` has run by the time ~Client returns.
TEST_F(GrpcioPeerTest, DestroyingTheClientCancelsACallMidAttemptAtTheServer) {
  Settings settings = DefaultSettings();
  settings.timeout = 60s;
  Start({}, settings);
  std::promise<Reply> ended;
  auto future = ended.get_future();
  client_->CallAsync("/peer.Test/Hang", "", [&ended](Reply reply, std::exception_ptr) {
    ended.set_value(std::move(reply));
  });
  WaitForCalls("Hang", 1);
  client_.reset();
  ASSERT_EQ(future.wait_for(0s), std::future_status::ready);
  EXPECT_EQ(future.get().status.code, Code::kCancelled);
  EXPECT_TRUE(PeerSawCancelled(1));
}

}  // namespace
}  // namespace outbound::rpc
