// SPDX-License-Identifier: Apache-2.0
// A client-streaming or bidirectional call sent again while it opens
// (outbound/rpc/stream.h): before the answer's first message, what the
// caller wrote goes again, under a unary call's rules for its method; once
// a message has arrived, or more than 64 KiB went, never. Against the kit's
// fake gRPC dependency over h2c on loopback (the native transport, a real
// socket), with no grpc++ in the process, so TSan runs it too.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "outbound/rpc/client.h"
#include "outbound/testing/fake_grpc.h"
#include "outbound/testing/manual_clock.h"
#include "outbound/testing/network_map.h"

namespace outbound::rpc {
namespace {

using std::chrono::milliseconds;
using testing::GrpcReply;
using testing::GrpcRequest;

constexpr char kUpload[] = "/outbound.test.Files/Upload";

struct Ended {
  std::vector<std::string> read;  // every message the answer brought
  Status status;
  int attempts = 0;
};

class StreamRetryTest : public ::testing::Test {
 protected:
  StreamRetryTest() {
    runtime_.clock = &clock_;
    runtime_.network = &network_;
  }

  // The fake as files:9090, answering Upload with `replies` in turn (the
  // last for every later call).
  void Serve(std::vector<testing::Reply> replies) {
    testing::FakeGrpcOptions options;
    options.script = {{kUpload, std::move(replies)}};
    options.clock = &clock_;
    auto started = testing::StartFakeGrpc(std::move(options));
    ASSERT_TRUE(started) << started.error().message();
    server_ = std::move(*started);
    network_.Add("files", 9090, "127.0.0.1", server_->port());
  }

  std::unique_ptr<Client> Make(std::vector<std::string> non_idempotent = {}) {
    Settings settings = DefaultSettings();
    settings.addr = "files:9090";
    settings.non_idempotent_methods = std::move(non_idempotent);
    auto client = Client::Create(runtime_, std::move(settings));
    EXPECT_TRUE(client) << client.error().message();
    return client ? std::move(*client) : nullptr;
  }

  // Reads the stream to its end and finishes it, on a thread of its own.
  static std::future<Ended> ReadToEnd(Stream& stream) {
    return std::async(std::launch::async, [&stream] {
      Ended ended;
      std::string message;
      while (stream.Read(&message)) ended.read.push_back(message);
      ended.status = stream.Finish();
      ended.attempts = stream.attempts();
      return ended;
    });
  }

  // Waits for the client's backoff (full jitter under the default 100 ms)
  // to begin on the clock, and moves the clock past it.
  void PassTheBackoff() {
    ASSERT_TRUE(clock_.WaitForTimerBy(clock_.Now() + milliseconds(100)));
    clock_.Advance(milliseconds(100));
  }

  // The messages of each call the fake received, in order.
  std::vector<std::vector<std::string>> Received() const {
    std::vector<std::vector<std::string>> calls;
    for (const auto& request : server_->requests()) {
      calls.push_back(GrpcRequest::From(request).messages);
    }
    return calls;
  }

  testing::ManualClock clock_;
  testing::NetworkMap network_;
  Runtime runtime_;
  std::unique_ptr<testing::FakeServer> server_;
};

using Messages = std::vector<std::string>;

TEST_F(StreamRetryTest, AnUnavailableAnswerBeforeAnyMessageSendsTheStreamAgain) {
  Serve({GrpcReply::TrailersOnly(Code::kUnavailable, "draining"), GrpcReply::Ok("stored")});
  auto client = Make();
  Stream upload = client->OpenStream(kUpload);
  ASSERT_TRUE(upload.Write("part 1"));
  ASSERT_TRUE(upload.Write("part 2"));
  upload.WritesDone();
  auto ended = ReadToEnd(upload);
  PassTheBackoff();
  Ended got = ended.get();
  EXPECT_TRUE(got.status.ok()) << got.status.message;
  EXPECT_EQ(got.read, Messages{"stored"});
  EXPECT_EQ(got.attempts, 2);
  EXPECT_EQ(Received(), (std::vector<Messages>{{"part 1", "part 2"}, {"part 1", "part 2"}}));
}

TEST_F(StreamRetryTest, ANonIdempotentMethodIsNotSentAgainOnUnavailable) {
  Serve({GrpcReply::TrailersOnly(Code::kUnavailable), GrpcReply::Ok("stored")});
  auto client = Make({kUpload});
  Stream upload = client->OpenStream(kUpload);
  ASSERT_TRUE(upload.Write("part 1"));
  upload.WritesDone();
  Ended got = ReadToEnd(upload).get();
  EXPECT_EQ(got.status.code, Code::kUnavailable);
  EXPECT_EQ(got.attempts, 1);
  EXPECT_EQ(server_->request_count(), 1u);
}

// REFUSED_STREAM: the server did nothing with it, so even a method that
// is not idempotent goes again, at once.
TEST_F(StreamRetryTest, ARefusedStreamIsSentAgainWhateverItsMethod) {
  Serve({GrpcReply::ResetStream(7), GrpcReply::Ok("stored")});
  auto client = Make({kUpload});
  Stream upload = client->OpenStream(kUpload);
  ASSERT_TRUE(upload.Write("part 1"));
  upload.WritesDone();
  Ended got = ReadToEnd(upload).get();
  EXPECT_TRUE(got.status.ok()) << got.status.message;
  EXPECT_EQ(got.attempts, 2);
  EXPECT_EQ(Received(), (std::vector<Messages>{{"part 1"}, {"part 1"}}));
}

// grpc-previous-rpc-attempts counts only attempts the server may have
// acted on: the one sent again after a refused stream says none went
// before it; the retry after its UNAVAILABLE says one did.
TEST_F(StreamRetryTest, ARefusedStreamIsNotCountedAmongThePreviousAttempts) {
  Serve({GrpcReply::ResetStream(7), GrpcReply::TrailersOnly(Code::kUnavailable),
         GrpcReply::Ok("stored")});
  auto client = Make();
  Stream upload = client->OpenStream(kUpload);
  ASSERT_TRUE(upload.Write("part 1"));
  upload.WritesDone();
  auto ended = ReadToEnd(upload);
  // A new client has earned no transparent resends, so the refused stream
  // was the retry loop's first attempt, and this is its second backoff
  // (full jitter under 200 ms).
  ASSERT_TRUE(clock_.WaitForTimerBy(clock_.Now() + milliseconds(200)));
  clock_.Advance(milliseconds(200));
  Ended got = ended.get();
  EXPECT_TRUE(got.status.ok()) << got.status.message;
  EXPECT_EQ(got.attempts, 3);
  std::vector<std::string> previous;  // "-" where the field was not sent
  for (const auto& request : server_->requests()) {
    std::string value = request.header("grpc-previous-rpc-attempts");
    previous.push_back(value.empty() ? "-" : value);
  }
  EXPECT_EQ(previous, (std::vector<std::string>{"-", "-", "1"}));
}

// A message has arrived: the caller has read it, so the stream is final.
TEST_F(StreamRetryTest, AStreamThatFailsAfterAMessageIsNotSentAgain) {
  Serve({GrpcReply::Messages({"first"}).EndWith(Code::kUnavailable), GrpcReply::Ok("stored")});
  auto client = Make();
  Stream upload = client->OpenStream(kUpload);
  ASSERT_TRUE(upload.Write("part 1"));
  upload.WritesDone();
  Ended got = ReadToEnd(upload).get();
  EXPECT_EQ(got.status.code, Code::kUnavailable);
  EXPECT_EQ(got.read, Messages{"first"});
  EXPECT_EQ(got.attempts, 1);
  EXPECT_EQ(server_->request_count(), 1u);
}

// More than 64 KiB went (http::BodyPipe::kReplayBytes): the client no
// longer holds all of it, so it cannot send it again.
TEST_F(StreamRetryTest, AStreamPastTheReplayBytesIsNotSentAgain) {
  Serve({GrpcReply::TrailersOnly(Code::kUnavailable), GrpcReply::Ok("stored")});
  auto client = Make();
  Stream upload = client->OpenStream(kUpload);
  ASSERT_TRUE(upload.Write(std::string(40 * 1024, 'a')));
  ASSERT_TRUE(upload.Write(std::string(40 * 1024, 'b')));
  upload.WritesDone();
  Ended got = ReadToEnd(upload).get();
  EXPECT_EQ(got.status.code, Code::kUnavailable);
  EXPECT_EQ(got.attempts, 1);
  EXPECT_EQ(server_->request_count(), 1u);
}

}  // namespace
}  // namespace outbound::rpc
