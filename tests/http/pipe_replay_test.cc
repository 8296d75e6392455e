// SPDX-License-Identifier: Apache-2.0
// A pipe's body (Request::StreamBodyFromPipe) sent again while the stream
// opens: the pipe keeps what the transport took until the answer's body
// begins, up to BodyPipe::kReplayBytes, and the next attempt sends those
// same bytes, under the rules of any request of its method. On the kit's
// FakeTransport, in fake time.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>

#include "client_test_support.h"
#include "outbound/http/body_pipe.h"

namespace outbound::http {
namespace {

using retry::ReasonKind;
using std::chrono::milliseconds;
using testing::Reply;
using testing::ServerRequest;

class PipeReplayTest : public FakeTransportTestBase, public ::testing::Test {
 protected:
  // Answers the first attempt `first`, and every later one 200 with the
  // body it received.
  void ServeFirst(Reply first) {
    Serve([this, first](const ServerRequest& request) {
      return answered_.fetch_add(1) == 0 ? first : Reply::Ok(request.body);
    });
  }

  // A pipe holding `body`, closed: the transport takes it all at once.
  static std::shared_ptr<BodyPipe> Written(const std::string& body) {
    auto pipe = std::make_shared<BodyPipe>(body.size() + 1);
    EXPECT_TRUE(pipe->Write(body));
    pipe->Close();
    return pipe;
  }

  std::atomic<int> answered_{0};
};

TEST_F(PipeReplayTest, AnIdempotentStreamIsSentAgainWithTheSameBytes) {
  ServeFirst(Reply::Status(503));
  auto client = MakeClient();
  auto pipe = Written("ab|cd");
  auto call = client->SendAsync(Request::Put("/notes/1").StreamBodyFromPipe(pipe));
  AdvanceAfterAttempt(1, milliseconds(50));  // the backoff, jitter one half
  auto response = call.get();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->attempts, 2);
  EXPECT_EQ(response->body, "ab|cd");
  ASSERT_EQ(server->request_count(), 2u);
  EXPECT_EQ(server->requests()[0].body, "ab|cd");
  EXPECT_EQ(server->requests()[1].body, "ab|cd");
  EXPECT_EQ(Attempts()[0].reason.kind, ReasonKind::kRetryable);
  EXPECT_TRUE(pipe->ended()) << "the call's end ends the pipe";
}

TEST_F(PipeReplayTest, ANonIdempotentStreamTheServerMayHaveSeenIsSentOnce) {
  ServeFirst(Reply::Status(503));
  auto client = MakeClient();
  auto response = client->Send(Request::Post("/notes").StreamBodyFromPipe(Written("ab")));
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->status, 503);
  EXPECT_EQ(server->request_count(), 1u);
  EXPECT_EQ(Attempts()[0].reason.kind, ReasonKind::kUnsafe);
}

TEST_F(PipeReplayTest, ARefusedStreamIsSentAgainWhateverItsMethod) {
  ServeFirst(Reply::Reset(7));  // REFUSED_STREAM: the server did nothing with it
  auto client = MakeClient();
  auto response = client->Send(Request::Post("/notes").StreamBodyFromPipe(Written("ab")));
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->attempts, 2);
  ASSERT_EQ(server->request_count(), 2u);
  EXPECT_EQ(server->requests()[1].body, "ab");
  // A new client has earned no transparent retries: this one goes through
  // the policy, which lets it go again because the server did nothing
  // with it (and at once: there is nothing to wait out).
  EXPECT_EQ(Attempts()[0].reason.kind, ReasonKind::kRetryable);
}

TEST_F(PipeReplayTest, MoreThanTheReplayBytesSentIsSentOnce) {
  ServeFirst(Reply::Status(503));
  auto client = MakeClient();
  std::string body(BodyPipe::kReplayBytes + 1, 'x');
  auto response = client->Send(Request::Put("/notes/1").StreamBodyFromPipe(Written(body)));
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->status, 503);
  EXPECT_EQ(server->request_count(), 1u);
  EXPECT_EQ(Attempts()[0].reason.kind, ReasonKind::kBodyNotReplayable);
}

TEST_F(PipeReplayTest, ExactlyTheReplayBytesSentIsSentAgain) {
  ServeFirst(Reply::Status(503));
  auto client = MakeClient();
  std::string body(BodyPipe::kReplayBytes, 'x');
  auto call = client->SendAsync(Request::Put("/notes/1").StreamBodyFromPipe(Written(body)));
  AdvanceAfterAttempt(1, milliseconds(50));
  auto response = call.get();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->attempts, 2);
  EXPECT_EQ(response->body.size(), body.size());
}

// An answer whose body has begun streaming to the caller is final: what
// came cannot be taken back, so the stream is not sent again.
TEST_F(PipeReplayTest, AStreamWhoseAnswerBodyBeganIsSentOnce) {
  ServeFirst(Reply::ResetAfter(3, "abcdef"));
  auto client = MakeClient();
  std::string seen;
  auto response = client->Send(Request::Put("/notes/1")
                                   .StreamBodyFromPipe(Written("ab"))
                                   .StreamBodyTo([&](std::string_view piece) {
                                     seen.append(piece);
                                     return true;
                                   }));
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().attempts(), 1);
  EXPECT_EQ(seen, "abc");
  EXPECT_EQ(server->request_count(), 1u);
}

}  // namespace
}  // namespace outbound::http
