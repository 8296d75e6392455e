// SPDX-License-Identifier: Apache-2.0
// Request bodies read as they are sent (Request::StreamBodyFrom), over
// HTTP/2 and HTTP/1.1, on both transports: the body arrives whole, with its
// Content-Length when known and chunked (HTTP/1.1) when not; a replayable
// body is read again from its start for a retry and a 307; a body read once
// is never sent twice; a reader's failure, throw or short body fails the
// call with kInvalidRequest, the breaker counting nothing and the client
// still usable.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "client_test_support.h"
#include "text_source.h"

namespace outbound::http {
namespace {

using testing::Reply;
using testing::ServerRequest;

class StreamedRequestBodyTest : public ClientTestBase, public ::testing::TestWithParam<Protocol> {
 protected:
  bool http2() const { return GetParam() == Protocol::kHttp2; }
};

TEST_P(StreamedRequestBodyTest, ABodyOfKnownLengthArrivesWholeWithItsContentLength) {
  Serve([](const ServerRequest& r) { return Reply::Ok(std::to_string(r.body.size())); },
        GetParam());
  auto client = MakeClient();
  TextSource source{Pattern(1 << 20)};
  auto result =
      client->Send(Request::Put("/objects/1").StreamBodyFrom(source.Opener(), source.text.size()));
  ASSERT_TRUE(result) << result.error().message();
  EXPECT_EQ(result->body, std::to_string(1 << 20));
  auto got = server->requests();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].body == source.text) << "the body arrived changed";
  EXPECT_EQ(got[0].header("content-length"), std::to_string(1 << 20));
  EXPECT_EQ(got[0].header("transfer-encoding"), "");
  EXPECT_EQ(*source.opened, 1);
}

TEST_P(StreamedRequestBodyTest, ABodyOfUnknownLengthIsChunkedOnHttp11AndUnannouncedOnHttp2) {
  Serve([](const ServerRequest&) { return Reply::Ok("stored"); }, GetParam());
  auto client = MakeClient();
  TextSource source{Pattern(300 * 1024 + 17), 4096};
  auto result = client->Send(Request::Post("/objects").StreamBodyFrom(source.Opener()));
  ASSERT_TRUE(result) << result.error().message();
  auto got = server->requests();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].body == source.text) << "the body arrived changed";
  EXPECT_EQ(got[0].header("content-length"), "");
  EXPECT_EQ(got[0].header("transfer-encoding"), http2() ? "" : "chunked");
}

TEST_P(StreamedRequestBodyTest, AnEmptyBodyEndsAtOnce) {
  Serve([](const ServerRequest& r) { return Reply::Ok(std::to_string(r.body.size())); },
        GetParam());
  auto client = MakeClient();
  TextSource empty{""};
  auto chunked = client->Send(Request::Post("/objects").StreamBodyFrom(empty.Opener()));
  ASSERT_TRUE(chunked) << chunked.error().message();
  EXPECT_EQ(chunked->body, "0");
  auto announced = client->Send(Request::Post("/objects").StreamBodyFrom(empty.Opener(), 0));
  ASSERT_TRUE(announced) << announced.error().message();
  EXPECT_EQ(announced->body, "0");
  EXPECT_EQ(server->requests().back().header("content-length"), "0");
}

// Each attempt reads the body from its start.
TEST_P(StreamedRequestBodyTest, ARetryReadsTheBodyAgainFromItsStart) {
  std::atomic<int> seen{0};
  Serve([&](const ServerRequest&) { return ++seen == 1 ? Reply::Status(503) : Reply::Ok(); },
        GetParam());
  auto client = MakeClient();
  TextSource source{Pattern(200 * 1024)};
  auto call = client->SendAsync(
      Request::Put("/objects/1").StreamBodyFrom(source.Opener(), source.text.size()));
  AdvanceAfterAttempt(1, std::chrono::milliseconds(50));
  auto result = call.get();
  ASSERT_TRUE(result) << result.error().message();
  EXPECT_EQ(result->status, 200);
  EXPECT_EQ(result->attempts, 2);
  EXPECT_EQ(*source.opened, 2);
  auto got = server->requests();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[0].body == source.text && got[1].body == source.text);
}

TEST_P(StreamedRequestBodyTest, ABodyReadOnceIsSentOnceWhateverTheMethod) {
  Serve([](const ServerRequest&) { return Reply::Status(503); }, GetParam());
  auto client = MakeClient();
  std::string text = Pattern(70 * 1024);
  std::size_t at = 0;
  auto result =
      client->Send(Request::Put("/objects/1").StreamBodyFromOnce([&](std::span<char> buffer) {
        std::size_t n = std::min(buffer.size(), text.size() - at);
        text.copy(buffer.data(), n, at);
        at += n;
        return Result<std::size_t>(n);
      }));
  ASSERT_TRUE(result) << result.error().message();
  EXPECT_EQ(result->status, 503);  // the answer, not retried
  EXPECT_EQ(result->attempts, 1);
  ASSERT_EQ(server->request_count(), 1u);
  EXPECT_TRUE(server->requests()[0].body == text);
}

TEST_P(StreamedRequestBodyTest, A307ReadsTheBodyAgainAndABodyReadOnceStopsAtIt) {
  Serve(
      [](const ServerRequest& r) {
        if (r.target == "/old") return Reply::Status(307).Header("Location", "/new");
        return Reply::Ok(r.body);
      },
      GetParam());
  auto client = MakeClient();
  TextSource source{"the same body twice"};
  auto followed =
      client->Send(Request::Post("/old").StreamBodyFrom(source.Opener(), source.text.size()));
  ASSERT_TRUE(followed) << followed.error().message();
  EXPECT_EQ(followed->status, 200);
  EXPECT_EQ(followed->body, source.text);
  EXPECT_EQ(followed->redirects, 1);
  EXPECT_EQ(*source.opened, 2);

  BodyReader once = source.Opener()();
  auto stopped = client->Send(Request::Post("/old").StreamBodyFromOnce(once));
  ASSERT_TRUE(stopped) << stopped.error().message();
  EXPECT_EQ(stopped->status, 307);  // the caller's to handle
  EXPECT_EQ(stopped->redirects, 0);
  EXPECT_EQ(server->request_count(), 3u);
}

// The caller's reader failing is not the dependency failing: no retry, no
// breaker failure, and the next call goes through.
TEST_P(StreamedRequestBodyTest, AReaderThatFailsEndsTheCallAndTheBreakerCountsNothing) {
  Serve([](const ServerRequest&) { return Reply::Ok("fine"); }, GetParam());
  auto client = MakeClient(TripOnFirstFailure(PaymentsSettings()));
  auto opened = std::make_shared<int>(0);
  auto failing = [opened]() -> BodyReader {
    ++*opened;
    auto given = std::make_shared<std::size_t>(0);
    return [given](std::span<char> buffer) -> Result<std::size_t> {
      if (*given >= 128 * 1024) return Fail(ErrorKind::kLocalResource, "disk unplugged");
      std::size_t n = std::min<std::size_t>(buffer.size(), 128 * 1024 - *given);
      std::fill_n(buffer.data(), n, 'z');
      *given += n;
      return n;
    };
  };
  auto result = client->Send(Request::Put("/objects/1").StreamBodyFrom(failing));
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind(), ErrorKind::kInvalidRequest) << result.error().message();
  EXPECT_NE(result.error().message().find("disk unplugged"), std::string::npos)
      << result.error().message();
  EXPECT_EQ(*opened, 1) << "a PUT whose reader failed was retried";
  EXPECT_TRUE(Transitions().empty());
  auto next = client->Send(Request::Get("/after"));
  ASSERT_TRUE(next) << next.error().message();
  EXPECT_EQ(next->body, "fine");
}

TEST_P(StreamedRequestBodyTest, AReaderThatThrowsEndsTheCallWithWhatItSaid) {
  Serve([](const ServerRequest&) { return Reply::Ok(); }, GetParam());
  auto client = MakeClient(TripOnFirstFailure(PaymentsSettings()));
  auto result = client->Send(Request::Post("/objects").StreamBodyFrom([]() -> BodyReader {
    return [](std::span<char>) -> Result<std::size_t> {
      throw std::runtime_error("the generator broke");
    };
  }));
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind(), ErrorKind::kInvalidRequest);
  EXPECT_NE(result.error().message().find("the generator broke"), std::string::npos)
      << result.error().message();
  EXPECT_TRUE(Transitions().empty());
  EXPECT_TRUE(client->Send(Request::Get("/after")));
}

TEST_P(StreamedRequestBodyTest, ABodyShorterThanItsLengthFailsAndIsNotAnswered) {
  Serve([](const ServerRequest&) { return Reply::Ok(); }, GetParam());
  auto client = MakeClient(TripOnFirstFailure(PaymentsSettings()));
  TextSource source{Pattern(50)};
  auto result = client->Send(Request::Put("/objects/1").StreamBodyFrom(source.Opener(), 100));
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind(), ErrorKind::kInvalidRequest);
  EXPECT_NE(result.error().message().find("after 50 of the 100 bytes"), std::string::npos)
      << result.error().message();
  EXPECT_EQ(server->request_count(), 0u) << "a body cut short reached the handler as whole";
  EXPECT_TRUE(Transitions().empty());
  EXPECT_TRUE(client->Send(Request::Get("/after")));
}

TEST_P(StreamedRequestBodyTest, ALongerBodyIsCutAtItsLength) {
  Serve([](const ServerRequest& r) { return Reply::Ok(r.body); }, GetParam());
  auto client = MakeClient();
  TextSource source{"0123456789"};
  auto result = client->Send(Request::Put("/objects/1").StreamBodyFrom(source.Opener(), 4));
  ASSERT_TRUE(result) << result.error().message();
  EXPECT_EQ(result->body, "0123");
}

TEST_P(StreamedRequestBodyTest, AFileIsReadFromItsStartForEachAttempt) {
  std::atomic<int> seen{0};
  Serve(
      [&](const ServerRequest& r) { return ++seen == 1 ? Reply::Status(503) : Reply::Ok(r.body); },
      GetParam());
  auto client = MakeClient();
  std::string path = ::testing::TempDir() + "outbound_upload_" + std::to_string(getpid()) +
                     (http2() ? "_h2" : "_h1");
  std::string text = Pattern(100 * 1024 + 3);
  std::ofstream(path, std::ios::binary) << text;
  auto call = client->SendAsync(
      Request::Put("/files/a").StreamBodyFrom(FileReader(path), std::filesystem::file_size(path)));
  AdvanceAfterAttempt(1, std::chrono::milliseconds(50));
  auto result = call.get();
  std::filesystem::remove(path);
  ASSERT_TRUE(result) << result.error().message();
  EXPECT_TRUE(result->body == text) << "the file arrived changed";
  EXPECT_EQ(result->attempts, 2);

  auto missing = client->Send(Request::Put("/files/b").StreamBodyFrom(FileReader(path)));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind(), ErrorKind::kInvalidRequest);
  EXPECT_NE(missing.error().message().find(path), std::string::npos) << missing.error().message();
}

TEST_P(StreamedRequestBodyTest, ABodyAndASourceTogetherAreRefusedBeforeAnythingIsSent) {
  Serve([](const ServerRequest&) { return Reply::Ok(); }, GetParam());
  auto client = MakeClient();
  TextSource source{"streamed"};
  auto result = client->Send(Request::Put("/objects/1", "inline").StreamBodyFrom(source.Opener()));
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind(), ErrorKind::kInvalidRequest);
  EXPECT_EQ(server->request_count(), 0u);
  EXPECT_EQ(*source.opened, 0);
}

// The server stops reading part way and closes: the attempt failed, the
// POST is not sent again, and the client goes on with a new connection.
TEST_P(StreamedRequestBodyTest, AServerThatStopsReadingFailsTheAttemptNotTheClient) {
  testing::FakeServer::Options options;
  options.cut_reading = [](const ServerRequest& head) -> std::optional<testing::ReadCut> {
    if (head.target != "/too-big") return std::nullopt;
    return testing::ReadCut{.body_bytes = 64 * 1024, .end = Reply::Close()};
  };
  Serve([](const ServerRequest&) { return Reply::Ok("small"); }, GetParam(), options);
  auto client = MakeClient();
  TextSource source{Pattern(8 << 20), 64 * 1024};
  auto result = client->Send(Request::Post("/too-big").StreamBodyFrom(source.Opener()));
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind(), ErrorKind::kTransport) << result.error().message();
  EXPECT_EQ(*source.opened, 1);
  auto next = client->Send(Request::Get("/after"));
  ASSERT_TRUE(next) << next.error().message();
  EXPECT_EQ(next->body, "small");
}

INSTANTIATE_TEST_SUITE_P(Protocols, StreamedRequestBodyTest,
                         ::testing::Values(Protocol::kHttp2, Protocol::kHttp11), ProtocolName);

}  // namespace
}  // namespace outbound::http
