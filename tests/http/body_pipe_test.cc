// SPDX-License-Identifier: Apache-2.0
// Request bodies written while the answer streams (http::BodyPipe, issue
// 31's bidirectional streams) against Node 20's own servers
// (tests/peers/pipe_server.js): HTTP/2 over TLS (ALPN h2), h2c with prior
// knowledge, and HTTP/1.1 over TLS with a chunked body. The answer is read
// as it comes (StreamBodyTo) while the test still writes; timing is on a
// ManualClock, and the waits below are bounded safety nets in real time for
// what the peer does, never tolerances.
#include "outbound/http/body_pipe.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "node_peer.h"
#include "outbound/http/client.h"
#include "outbound/testing/manual_clock.h"
#include "outbound/testing/network_map.h"
#include "outbound/testing/test_ca.h"

namespace outbound::http {
namespace {

using namespace std::chrono_literals;

constexpr auto kRealLimit = 10s;  // for the peer to act: a broken test's net

// What the answer's body has brought so far, for the test thread to wait on.
class Received {
 public:
  BodySink Sink() {
    return [this](std::string_view piece) {
      std::lock_guard lock(mu_);
      text_.append(piece);
      changed_.notify_all();
      return true;
    };
  }
  // Waits until the body so far is `expected`; what it is then.
  std::string WaitFor(const std::string& expected) {
    std::unique_lock lock(mu_);
    changed_.wait_for(lock, kRealLimit, [&] { return text_.size() >= expected.size(); });
    return text_;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::string text_;
};

// Polls `done` until it holds, `kRealLimit` at most: for a state only a
// getter shows (the pipe's buffered bytes).
template <typename Done>
bool Eventually(Done done) {
  auto give_up = std::chrono::steady_clock::now() + kRealLimit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

enum class Wire { kH2, kH2c, kH1 };

std::string WireName(const ::testing::TestParamInfo<Wire>& info) {
  switch (info.param) {
    case Wire::kH2:
      return "h2";
    case Wire::kH2c:
      return "h2c";
    case Wire::kH1:
      return "http1";
  }
  return "";
}

class BodyPipeTest : public ::testing::TestWithParam<Wire> {
 protected:
  void SetUp() override { Start(GetParam()); }

  void Start(Wire wire) {
    wire_ = wire;
    std::vector<std::string> args;
    if (wire == Wire::kH2c) args.push_back("--plain");
    if (wire == Wire::kH1) args.push_back("--http1");
    peer_ = std::make_unique<peers::NodePeer>("pipe_server.js", files_.Args(args));
    network_.Add("chat", 8443, "127.0.0.1", peer_->port());
    runtime_.clock = &clock_;
    runtime_.network = &network_;
  }

  Settings ChatSettings() {
    Settings s = DefaultSettings();
    if (wire_ == Wire::kH2c) {
      s.base_url = "http://chat:8443";
      s.http2_prior_knowledge = true;
    } else {
      s.base_url = "https://chat:8443";
      s.tls = TlsSettings{.root_pem = ca_.pem()};
    }
    return s;
  }

  std::unique_ptr<Client> MakeClient(Settings settings) {
    auto client = Client::Create(runtime_, std::move(settings));
    EXPECT_TRUE(client) << client.error().message();
    return client ? std::move(*client) : nullptr;
  }

  std::string version() const { return wire_ == Wire::kH1 ? "1.1" : "2"; }

  Wire wire_ = Wire::kH2;
  testing::TestCA ca_;
  peers::PeerFiles files_{ca_.IssueServer({"chat"})};
  std::unique_ptr<peers::NodePeer> peer_;
  testing::ManualClock clock_;
  testing::NetworkMap network_;
  Runtime runtime_;
};

// Each piece comes back before the next is written: the body is not
// gathered to its end before it goes, nor the answer before it is read.
TEST_P(BodyPipeTest, EachWriteIsEchoedBeforeTheNextIsWritten) {
  auto client = MakeClient(ChatSettings());
  auto pipe = std::make_shared<BodyPipe>();
  Received received;
  auto call = client->SendAsync(
      Request::Post("/echo").StreamBodyFromPipe(pipe).StreamBodyTo(received.Sink()));
  ASSERT_TRUE(pipe->Write("a"));
  ASSERT_EQ(received.WaitFor("a"), "a") << "the first write did not come back before the second";
  ASSERT_TRUE(pipe->Write("b"));
  ASSERT_EQ(received.WaitFor("ab"), "ab");
  pipe->Close();
  ASSERT_EQ(call.wait_for(kRealLimit), std::future_status::ready);
  auto response = call.get();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->version, version());
  EXPECT_EQ(response->attempts, 1);
  if (wire_ != Wire::kH1) {
    EXPECT_EQ(response->trailers.Find("x-echoed-bytes"), "2") << "the answer ends with trailers";
  } else {
    EXPECT_EQ(peer_->Stats().at("chunked").get<int>(), 1) << "HTTP/1.1 sends the pipe chunked";
  }
  EXPECT_FALSE(pipe->Write("c")) << "the exchange is over";
  EXPECT_TRUE(pipe->ended());
}

// Past Settings::timeout, WithTimeout and the attempt timeout, with the
// pipe quiet all along: a stream is not cut by them.
TEST_P(BodyPipeTest, AQuietStreamOutlivesTheClientsTimeouts) {
  Settings settings = ChatSettings();
  settings.timeout = 1s;
  settings.attempt_timeout = 500ms;
  auto client = MakeClient(settings);
  auto pipe = std::make_shared<BodyPipe>();
  Received received;
  auto call = client->SendAsync(Request::Post("/echo")
                                    .StreamBodyFromPipe(pipe)
                                    .StreamBodyTo(received.Sink())
                                    .WithTimeout(2s));
  ASSERT_TRUE(pipe->Write("a"));
  ASSERT_EQ(received.WaitFor("a"), "a");
  clock_.Advance(1h);
  ASSERT_TRUE(pipe->Write("b")) << "the stream was cut by a timeout";
  ASSERT_EQ(received.WaitFor("ab"), "ab");
  pipe->Close();
  ASSERT_EQ(call.wait_for(kRealLimit), std::future_status::ready);
  auto response = call.get();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->status, 200);
}

// The Context's deadline still ends a stream, and its writer hears of it.
TEST_P(BodyPipeTest, TheContextsDeadlineEndsAStream) {
  auto client = MakeClient(ChatSettings());
  auto pipe = std::make_shared<BodyPipe>();
  Received received;
  auto call = client->SendAsync(Request::Post("/echo")
                                    .StreamBodyFromPipe(pipe)
                                    .StreamBodyTo(received.Sink())
                                    .WithContext(Context{.deadline = clock_.Now() + 1min}));
  ASSERT_TRUE(pipe->Write("a"));
  ASSERT_EQ(received.WaitFor("a"), "a");
  clock_.Advance(59s);
  ASSERT_TRUE(pipe->Write("b"));
  ASSERT_EQ(received.WaitFor("ab"), "ab");
  clock_.Advance(1s);
  ASSERT_EQ(call.wait_for(kRealLimit), std::future_status::ready);
  auto response = call.get();
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().kind(), ErrorKind::kDeadline) << response.error().message();
  EXPECT_FALSE(pipe->Write("c"));
}

// A Write blocked on a full pipe needs a server that stops reading, which
// HTTP/2's flow control shows at once (HTTP/1.1's socket buffers take
// megabytes first).
class BodyPipeH2Test : public BodyPipeTest {};

// The server stops reading: Write blocks once the pipe holds its bound, and
// goes on when the server reads again.
TEST_P(BodyPipeH2Test, WriteBlocksAtTheBoundUntilTheServerReads) {
  auto client = MakeClient(ChatSettings());
  constexpr std::size_t kBound = 16 * 1024;
  constexpr std::size_t kTotal = 4 * 1024 * 1024;
  auto pipe = std::make_shared<BodyPipe>(kBound);
  Received received;
  auto call = client->SendAsync(
      Request::Post("/hold").StreamBodyFromPipe(pipe).StreamBodyTo(received.Sink()));
  // The stream is open (its HEADERS go with the pipe empty): what fills the
  // pipe from here is flow control, not a connection still opening.
  ASSERT_TRUE(Eventually([&] { return peer_->Stats().at("streams").get<int>() == 1; }));
  std::atomic<std::size_t> accepted{0};
  auto writer = std::async(std::launch::async, [&] {
    std::string piece(8 * 1024, 'x');
    while (accepted < kTotal) {
      if (!pipe->Write(piece)) return false;
      accepted += piece.size();
    }
    pipe->Close();
    return true;
  });
  // Node's stream window is 64 KiB: the transport takes that much, then the
  // pipe fills.
  ASSERT_TRUE(Eventually([&] { return accepted >= 64 * 1024 && pipe->buffered() == kBound; }))
      << "the pipe never filled: buffered " << pipe->buffered() << ", accepted " << accepted;
  EXPECT_EQ(writer.wait_for(0s), std::future_status::timeout) << "Write did not block";
  EXPECT_LT(accepted.load(), kTotal / 8) << "the transport took far more than the server allowed";
  EXPECT_EQ(peer_->Command("release").at("released").get<int>(), 1);
  ASSERT_EQ(writer.wait_for(kRealLimit), std::future_status::ready);
  EXPECT_TRUE(writer.get());
  ASSERT_EQ(call.wait_for(kRealLimit), std::future_status::ready);
  auto response = call.get();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(received.WaitFor(std::to_string(kTotal)), std::to_string(kTotal));
  EXPECT_EQ(peer_->Stats().at("received").get<std::size_t>(), kTotal);
}

// A call to /hold (the server reads nothing) and a writer that blocks on
// its full pipe; says what the writer's last Write returned.
class BlockedWriter {
 public:
  BlockedWriter(Client& client, peers::NodePeer& peer, Context context)
      : pipe_(std::make_shared<BodyPipe>(1024)),
        call_(client.SendAsync(Request::Post("/hold")
                                   .StreamBodyFromPipe(pipe_)
                                   .StreamBodyTo([](std::string_view) { return true; })
                                   .WithContext(std::move(context)))),
        peer_(peer) {}

  // Starts the writer once the server has the stream; whether it then
  // blocks on the full pipe, past the server's flow-control window.
  bool Blocked() {
    if (!Eventually([&] { return peer_.Stats().at("streams").get<int>() == 1; })) return false;
    writer_ = std::async(std::launch::async, [this] {
      std::string piece(8 * 1024, 'x');
      for (int i = 0; i < 4096; ++i) {
        if (!pipe_->Write(piece)) return false;
        accepted_ += piece.size();
      }
      return true;
    });
    return Eventually([&] { return accepted_ >= 64 * 1024 && pipe_->buffered() == 1024; }) &&
           writer_.wait_for(0s) == std::future_status::timeout;
  }
  // What the writer's last Write returned, once it returned.
  std::optional<bool> Wrote() {
    if (writer_.wait_for(kRealLimit) != std::future_status::ready) return std::nullopt;
    return writer_.get();
  }
  std::future<Result<Response>>& call() { return call_; }
  BodyPipe& pipe() { return *pipe_; }

 private:
  std::shared_ptr<BodyPipe> pipe_;
  std::future<Result<Response>> call_;
  peers::NodePeer& peer_;
  std::atomic<std::size_t> accepted_{0};
  std::future<bool> writer_;
};

TEST_P(BodyPipeH2Test, ABlockedWriteReturnsFalseWhenTheCallIsCancelled) {
  auto client = MakeClient(ChatSettings());
  CancelSource cancel;
  BlockedWriter writer(*client, *peer_, Context{.cancel = cancel.token()});
  ASSERT_TRUE(writer.Blocked());
  cancel.Cancel();
  EXPECT_EQ(writer.Wrote(), std::optional<bool>(false));
  ASSERT_EQ(writer.call().wait_for(kRealLimit), std::future_status::ready);
  auto response = writer.call().get();
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().kind(), ErrorKind::kCancelled) << response.error().message();
  EXPECT_TRUE(Eventually([&] { return peer_->Stats().at("resets").get<int>() == 1; }))
      << "the server never heard the stream end";
}

TEST_P(BodyPipeH2Test, ABlockedWriteReturnsFalseWhenTheServerResetsTheStream) {
  auto client = MakeClient(ChatSettings());
  BlockedWriter writer(*client, *peer_, Context{});
  ASSERT_TRUE(writer.Blocked());
  EXPECT_EQ(peer_->Command("reset").at("reset").get<int>(), 1);
  EXPECT_EQ(writer.Wrote(), std::optional<bool>(false));
  ASSERT_EQ(writer.call().wait_for(kRealLimit), std::future_status::ready);
  auto response = writer.call().get();
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().kind(), ErrorKind::kTransport) << response.error().message();
}

TEST_P(BodyPipeH2Test, ABlockedWriteReturnsFalseWhenTheClientIsDestroyed) {
  auto client = MakeClient(ChatSettings());
  BlockedWriter writer(*client, *peer_, Context{});
  ASSERT_TRUE(writer.Blocked());
  client.reset();
  EXPECT_EQ(writer.Wrote(), std::optional<bool>(false));
  ASSERT_EQ(writer.call().wait_for(kRealLimit), std::future_status::ready);
  auto response = writer.call().get();
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().kind(), ErrorKind::kCancelled) << response.error().message();
  EXPECT_TRUE(writer.pipe().ended());
}

// The server resets the stream on the body's first piece: the call fails,
// and the writer's next Write says so.
TEST_P(BodyPipeTest, WriteReturnsFalseAfterTheServerResetsTheStream) {
  auto client = MakeClient(ChatSettings());
  auto pipe = std::make_shared<BodyPipe>();
  auto call = client->SendAsync(Request::Post("/reset").StreamBodyFromPipe(pipe));
  ASSERT_TRUE(pipe->Write("a"));
  ASSERT_EQ(call.wait_for(kRealLimit), std::future_status::ready);
  auto response = call.get();
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().kind(), ErrorKind::kTransport) << response.error().message();
  EXPECT_EQ(response.error().attempts(), 1) << "a pipe's body is never sent twice";
  EXPECT_FALSE(pipe->Write("b"));
}

// The server ends its answer (HTTP/2: with trailers) while the pipe is
// open: the exchange is over, with that answer, and Writes say so.
TEST_P(BodyPipeTest, TheServerEndingItsAnswerEndsTheExchange) {
  auto client = MakeClient(ChatSettings());
  auto pipe = std::make_shared<BodyPipe>();
  auto call = client->SendAsync(Request::Post("/finish").StreamBodyFromPipe(pipe));
  ASSERT_EQ(call.wait_for(kRealLimit), std::future_status::ready)
      << "the exchange waited for the pipe to close";
  auto response = call.get();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "done");
  if (wire_ != Wire::kH1) {
    EXPECT_EQ(response->trailers.Find("x-finished"), "yes");
  }
  EXPECT_FALSE(pipe->Write("late"));
}

// A pipe carries one call's body: a second call given it fails at once.
TEST_P(BodyPipeTest, APipeCarriesOneCallsBody) {
  auto client = MakeClient(ChatSettings());
  auto pipe = std::make_shared<BodyPipe>();
  Received received;
  auto first = client->SendAsync(
      Request::Post("/echo").StreamBodyFromPipe(pipe).StreamBodyTo(received.Sink()));
  auto second = client->Send(Request::Post("/echo").StreamBodyFromPipe(pipe));
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().kind(), ErrorKind::kInvalidRequest) << second.error().message();
  ASSERT_TRUE(pipe->Write("a")) << "the second call ended the first one's pipe";
  ASSERT_EQ(received.WaitFor("a"), "a");
  pipe->Close();
  ASSERT_EQ(first.wait_for(kRealLimit), std::future_status::ready);
  EXPECT_TRUE(first.get());

  auto none = client->Send(Request::Post("/echo").StreamBodyFromPipe(nullptr));
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().kind(), ErrorKind::kInvalidRequest) << none.error().message();
}

// A call refused before anything is sent (its caller had cancelled) ends
// its pipe: the writer is not left waiting for a reader that never comes.
TEST_P(BodyPipeTest, ACallRefusedBeforeItIsSentEndsItsPipe) {
  auto client = MakeClient(ChatSettings());
  auto pipe = std::make_shared<BodyPipe>(4);
  CancelSource cancel;
  cancel.Cancel();
  auto refused = client->Send(
      Request::Post("/echo").StreamBodyFromPipe(pipe).WithContext({.cancel = cancel.token()}));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind(), ErrorKind::kCancelled) << refused.error().message();
  EXPECT_TRUE(pipe->ended());
  EXPECT_FALSE(pipe->Write("more than four bytes")) << "a Write that would block on no reader";
}

// A sink (on the client's loop) that writes to the pipe is refused what
// does not fit, rather than blocking the loop that would make room.
TEST_P(BodyPipeTest, AWriteOnTheClientsLoopNeverBlocks) {
  auto client = MakeClient(ChatSettings());
  auto pipe = std::make_shared<BodyPipe>(4);
  Received received;
  std::optional<bool> small;
  std::optional<bool> large;
  BodySink sink = received.Sink();
  auto call = client->SendAsync(Request::Post("/echo").StreamBodyFromPipe(pipe).StreamBodyTo(
      [&, sink](std::string_view piece) {
        if (!small) {
          small = pipe->Write("bc");
          large = pipe->Write("more than four bytes");
        }
        return sink(piece);
      }));
  ASSERT_TRUE(pipe->Write("a"));
  ASSERT_EQ(received.WaitFor("abc"), "abc") << "the sink's Write that fit was not sent";
  pipe->Close();
  ASSERT_EQ(call.wait_for(kRealLimit), std::future_status::ready);
  ASSERT_TRUE(call.get());
  EXPECT_EQ(small, std::optional<bool>(true));
  EXPECT_EQ(large, std::optional<bool>(false));
}

INSTANTIATE_TEST_SUITE_P(Peers, BodyPipeTest, ::testing::Values(Wire::kH2, Wire::kH2c, Wire::kH1),
                         WireName);
INSTANTIATE_TEST_SUITE_P(Peers, BodyPipeH2Test, ::testing::Values(Wire::kH2, Wire::kH2c), WireName);

}  // namespace
}  // namespace outbound::http
