// SPDX-License-Identifier: Apache-2.0
// Streamed request bodies (Request::StreamBodyFrom) against Node 20's own
// http2 and https servers (tests/peers/*_server.js, path /digest: the size
// and SHA-256 of the body as the server read it): a body of 1 GiB goes out
// in constant memory and arrives byte for byte, with its length announced
// and without (chunked, on HTTP/1.1) — issue 17; and on /too-large, an
// answer before the body is read.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <string>

#include "generated_body.h"
#include "peer_test_support.h"

namespace outbound::peers {
namespace {

using http::Request;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr std::uint64_t kLarge = std::uint64_t{64} << 20;  // the same path, at their pace
#else
constexpr std::uint64_t kLarge = std::uint64_t{1} << 30;
#endif

class NodeUploadTest : public PeerTestBase, public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { StartPeer(GetParam(), {}); }
  bool http2() const { return std::string(GetParam()) == "h2_server.js"; }

  // Sends four uploads `upload()` makes (to /too-large or
  // /too-large-cancel), each answered 413 before its body is read, then a
  // GET: each upload's answer is the 413, in one attempt, and the client
  // is good for the next call.
  void ExpectEachAnsweredEarly(const std::function<Request()>& upload) {
    auto client = MakeClient(PaymentsSettings());
    for (int i = 0; i < 4; ++i) {
      auto response = client->Send(upload());
      ASSERT_TRUE(response) << "upload " << i << ": " << response.error().message();
      EXPECT_EQ(response->status, 413);
      EXPECT_EQ(response->body, "request body too large\n");
      EXPECT_EQ(response->attempts, 1);
    }
    auto next = client->Send(Request::Get("/"));
    ASSERT_TRUE(next) << next.error().message();
    EXPECT_EQ(next->status, 200);
  }
};

TEST_P(NodeUploadTest, AGibibyteUploadGoesOutInConstantMemoryAndArrivesWhole) {
  http::Settings settings = PaymentsSettings();
  settings.timeout = std::chrono::seconds(240);  // a sanitizer build's pace
  // Far less than the upload takes (seconds): the wait for the headers
  // starts once the body has gone, so it does not cut the upload.
  settings.attempt_timeout = std::chrono::milliseconds(500);
  auto client = MakeClient(settings);
  ASSERT_TRUE(client->Send(Request::Get("/")));  // the connection made, the code paged in
  GeneratedBody body(kLarge);
  long before = PeakResidentKib();
  auto response = client->Send(Request::Put("/digest").StreamBodyFrom(body.Opener(), body.size()));
  long grown = PeakResidentKib() - before;
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, body.Digest()) << "the server read another body";
  EXPECT_EQ(response->attempts, 1);
  std::printf("%llu MiB uploaded over %s: peak RSS %ld KiB before, grew by %ld KiB\n",
              static_cast<unsigned long long>(kLarge >> 20), http2() ? "h2" : "h1.1", before,
              grown);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  EXPECT_LT(grown, 16 * 1024) << "KiB";
#endif
}

// No length: HTTP/1.1 sends it chunked, HTTP/2 ends it with END_STREAM;
// Node reads either whole.
TEST_P(NodeUploadTest, ABodyOfUnknownLengthArrivesWhole) {
  auto client = MakeClient(PaymentsSettings());
  GeneratedBody body(5 * 1024 * 1024 + 123);
  auto response = client->Send(Request::Post("/digest").StreamBodyFrom(body.Opener()));
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, body.Digest()) << "the server read another body";
}

// A server that answers before it has read the body (413 on /too-large):
// its answer is the attempt's, not what follows it (over HTTP/2 Node
// resets the stream, over HTTP/1.1 it closes the connection, where nginx,
// in nginx_test.cc, drains the rest first), and the call does not wait for
// the rest of the upload. The client is good for the next call. Over
// HTTP/1.1 the close may come while the client is writing, its answer in
// the socket already (before the fix, "Broken pipe" in about one upload of
// three with another test running beside): several uploads, each on a new
// connection, so one of them meets it.
TEST_P(NodeUploadTest, AnAnswerBeforeTheBodyIsReadIsTheAnswer) {
  GeneratedBody body(std::uint64_t{256} << 20);  // far more than the socket buffers hold
  ExpectEachAnsweredEarly(
      [&] { return Request::Post("/too-large").StreamBodyFrom(body.Opener(), body.size()); });
}

// The same with a body the caller gave whole (Request::Post's): the client
// writes it a piece at a time from the request, and stops at the answer.
TEST_P(NodeUploadTest, AnAnswerBeforeABufferedBodyIsReadIsTheAnswer) {
  const std::string body(std::size_t{64} << 20, 'x');  // far more than the socket buffers hold
  ExpectEachAnsweredEarly([&] { return Request::Post("/too-large", body); });
}

// HAProxy answers an upload it turns away (a deny rule, a rate limit, no
// server) and then resets the stream with CANCEL, where RFC 9113 §8.1's
// example has NO_ERROR: the answer was whole at its END_STREAM, and is the
// call's (before, "the server reset the stream (CANCEL) before the body
// ended", and the breaker counted it).
TEST_P(NodeUploadTest, AnAnswerThenACancelOfTheUploadIsTheAnswer) {
  if (!http2()) GTEST_SKIP() << "a stream reset is HTTP/2's";
  const std::string body(std::size_t{64} << 20, 'x');  // far more than the socket buffers hold
  ExpectEachAnsweredEarly([&] { return Request::Post("/too-large-cancel", body); });
  EXPECT_EQ(peer->Stats()["cancelled_after_answer"].get<int>(), 4) << "not what HAProxy sends";
}

// The same answer, then the connection's end instead of a reset, the
// upload still going: the answer was whole, and is the call's.
TEST_P(NodeUploadTest, AnAnswerThenTheConnectionsEndIsTheAnswer) {
  if (!http2()) GTEST_SKIP() << "HTTP/1.1's early answers: AnAnswerBeforeTheBodyIsReadIsTheAnswer";
  const std::string body(std::size_t{64} << 20, 'x');  // far more than the socket buffers hold
  ExpectEachAnsweredEarly([&] { return Request::Post("/too-large-close", body); });
}

INSTANTIATE_TEST_SUITE_P(Peers, NodeUploadTest, ::testing::Values("h2_server.js", "h1_server.js"),
                         [](const ::testing::TestParamInfo<const char*>& param) {
                           return std::string(param.param) == "h2_server.js" ? "http2" : "http1";
                         });

}  // namespace
}  // namespace outbound::peers
