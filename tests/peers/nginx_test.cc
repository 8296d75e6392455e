// SPDX-License-Identifier: Apache-2.0
// The client against nginx (Debian's nginx-light 1.22), a server nobody here
// wrote, over HTTP/2 and HTTP/1.1 with TLS (issue 13's peers). What a stock
// server does that the kit's FakeServer only scripts: it ends a connection
// after `keepalive_requests` (a GOAWAY on HTTP/2 that leaves out the streams
// already sent above it; `Connection: close` on HTTP/1.1), it caps the
// streams of a connection, and it sends a file larger than the client takes.
// Every case counts what nginx logged, never only what the client says.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include "../http/text_source.h"
#include "generated_body.h"
#include "nginx_peer.h"
#include "peer_test_support.h"

namespace outbound::peers {
namespace {

using http::Request;

class NginxTest : public PeerTestBase, public ::testing::TestWithParam<bool> {
 protected:
  bool http2() const { return GetParam(); }

  NginxPeer& StartNginx(NginxOptions options) {
    options.http2 = http2();
    nginx = std::make_unique<NginxPeer>(files, options);
    network.Add("payments", 8443, "127.0.0.1", nginx->port());
    return *nginx;
  }

  std::unique_ptr<NginxPeer> nginx;
};

// 2 000 GETs, 64 in flight, on connections nginx ends after 10 requests
// each: every call succeeds, the breaker never leaves closed, and nginx
// processed each call once. (On HTTP/2 each GOAWAY leaves out the streams
// above the tenth; they are sent again, in their turn, on the next
// connection: a request waits through 64 / 10 rotations at most.)
TEST_P(NginxTest, ConnectionsEndedAfterTenRequestsCostNoCall) {
  StartNginx({.keepalive_requests = 10});
  auto client = MakeClient(PaymentsSettings());
  LoadReport report = RunInFlight(*client, 2000, 64, [](int) { return Request::Get("/"); });
  auto requests = nginx->WaitForRequests(2000);
  std::string figures = report.Summary() + "; " + log->Summary();
  std::printf("%s\n", figures.c_str());
  SCOPED_TRACE(figures);
  EXPECT_EQ(report.ok, 2000);
  EXPECT_TRUE(Transitions().empty());
  EXPECT_EQ(client->breaker_state(), circuit::State::kClosed);
  EXPECT_EQ(requests.size(), 2000u);
  std::set<std::uint64_t> connections;
  for (const auto& request : requests) connections.insert(request.connection);
  EXPECT_GE(connections.size(), 200u);  // the scenario happened: ~10 requests per connection
}

// POSTs without an Idempotency-Key on the same connections: each body is
// processed by nginx exactly once, and every call is answered (a stream
// above the GOAWAY was not processed, so it is sent again; one the server
// answered never is).
TEST_P(NginxTest, PostsOnConnectionsEndedAfterTenRequestsAreEachProcessedOnce) {
  StartNginx({.keepalive_requests = 10});
  auto client = MakeClient(PaymentsSettings());
  LoadReport report = RunInFlight(*client, 500, 16, [](int i) {
    return Request::Post("/echo", "charge-" + std::to_string(i));
  });
  auto requests = nginx->WaitForRequests(500);
  SCOPED_TRACE(report.Summary() + "; " + log->Summary());
  EXPECT_EQ(report.ok, 500);
  std::map<std::string, int> processed;
  for (const auto& request : requests) ++processed[request.body];
  for (int i = 0; i < 500; ++i) {
    EXPECT_EQ(processed["charge-" + std::to_string(i)], 1) << "charge-" << i;
  }
}

// nginx allows 8 streams per HTTP/2 connection: 64 in flight open no more
// connections than that limit requires, and no call fails.
TEST_P(NginxTest, AStreamLimitOfEightCostsNoCall) {
  if (!http2()) GTEST_SKIP() << "a stream limit is HTTP/2's";
  StartNginx({.max_concurrent_streams = 8});
  auto client = MakeClient(PaymentsSettings());
  LoadReport report = RunInFlight(*client, 2000, 64, [](int) { return Request::Get("/"); });
  auto requests = nginx->WaitForRequests(2000);
  SCOPED_TRACE(report.Summary() + "; " + log->Summary());
  EXPECT_EQ(report.ok, 2000);
  EXPECT_EQ(requests.size(), 2000u);
  std::set<std::uint64_t> connections;
  for (const auto& request : requests) connections.insert(request.connection);
  EXPECT_LE(connections.size(), 8u);  // 64 / 8
}

// A 2 MiB file to a client that takes 1 MiB: too large, one attempt, and the
// dependency's health untouched.
TEST_P(NginxTest, AFileOverTheLimitIsTooLargeAndNotTheDependencysFault) {
  StartNginx({.big_bytes = 2 << 20});
  http::Settings settings = PaymentsSettings();
  settings.max_response_bytes = 1 << 20;
  auto client = MakeClient(settings);
  auto response = client->Send(Request::Get("/big"));
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().kind(), ErrorKind::kResponseTooLarge) << response.error().message();
  EXPECT_EQ(log->attempts(), 1);
  auto fine = client->Send(Request::Get("/"));
  ASSERT_TRUE(fine) << fine.error().message();
  EXPECT_EQ(fine->body, "ok");
  EXPECT_TRUE(Transitions().empty());
}

// A 1 GiB file streamed to a sink that counts it (Request::StreamBodyTo):
// the process's peak RSS grows by no more than a few MiB, whatever the
// body's size (issue 17: a download in constant memory).
TEST_P(NginxTest, AGibibyteDownloadStreamsInConstantMemory) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  constexpr std::uint64_t kBytes = std::uint64_t{64} << 20;  // the same path, at their pace
#else
  constexpr std::uint64_t kBytes = std::uint64_t{1} << 30;
#endif
  StartNginx({.big_bytes = kBytes});
  http::Settings settings = PaymentsSettings();
  settings.timeout = std::chrono::seconds(120);  // a sanitizer build's pace
  auto client = MakeClient(settings);
  ASSERT_TRUE(client->Send(Request::Get("/")));  // the connection made, the code paged in
  long before = PeakResidentKib();
  std::uint64_t got = 0;
  bool zeros = true;
  auto response = client->Send(Request::Get("/big").StreamBodyTo([&](std::string_view chunk) {
    got += chunk.size();
    zeros = zeros && chunk.find_first_not_of('\0') == std::string_view::npos;
    return true;
  }));
  long grown = PeakResidentKib() - before;
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "");
  EXPECT_EQ(got, kBytes);
  EXPECT_TRUE(zeros);
  std::printf("%llu MiB streamed over %s: peak RSS %ld KiB before, grew by %ld KiB\n",
              static_cast<unsigned long long>(kBytes >> 20), http2() ? "h2" : "h1.1", before,
              grown);
  // The sanitizers' own bookkeeping (ASan's quarantine keeps freed memory
  // on purpose) is not the client's: the normal build judges memory.
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  EXPECT_LT(grown, 16 * 1024) << "KiB";
#endif
}

// OnBodyHead on nginx's answers: a download's head, its length and type,
// comes before any of its body; a gzip-coded one's too, its body then
// reaching the sink decoded.
TEST_P(NginxTest, AStreamedAnswersHeadComesBeforeItsBody) {
  StartNginx({.big_bytes = 1 << 20});
  http::Settings settings = PaymentsSettings();
  settings.gzip = true;
  auto client = MakeClient(settings);
  std::string heard;  // each head, with what the sink had by then
  std::string body;
  auto sink = [&](std::string_view chunk) {
    body.append(chunk);
    return true;
  };
  auto head = [&](const http::Response& answer) -> Result<void> {
    heard += std::to_string(answer.status) + " " +
             std::string(answer.headers.Find("content-length")) + " " +
             std::string(answer.headers.Find("content-encoding")) + " after " +
             std::to_string(body.size()) + ";";
    return {};
  };
  auto big = client->Send(Request::Get("/big").StreamBodyTo(sink).OnBodyHead(head));
  ASSERT_TRUE(big) << big.error().message();
  EXPECT_EQ(heard, "200 1048576  after 0;");
  EXPECT_EQ(body.size(), std::size_t{1} << 20);
  heard.clear();
  body.clear();
  auto text = client->Send(Request::Get("/text").StreamBodyTo(sink).OnBodyHead(head));
  ASSERT_TRUE(text) << text.error().message();
  EXPECT_EQ(heard, "200  gzip after 0;") << "nginx did not gzip: the test proves less";
  EXPECT_EQ(body, NginxText());
}

// A sink that cancels its own call, or throws, while nginx's 1 MiB comes
// in many frames: it hears nothing after that, the call ends cancelled
// (or Send rethrows), the breaker counts nothing, and the client's next
// call is whole.
TEST_P(NginxTest, ASinkThatCancelsOrThrowsHearsNothingMoreAndTheClientGoesOn) {
  StartNginx({.big_bytes = 1 << 20});
  auto client = MakeClient(PaymentsSettings());
  CancelSource cancel;
  Context context;
  context.cancel = cancel.token();
  int pieces = 0;
  auto cancelled =
      client->Send(Request::Get("/big").WithContext(context).StreamBodyTo([&](std::string_view) {
        ++pieces;
        cancel.Cancel();
        return true;
      }));
  ASSERT_FALSE(cancelled);
  EXPECT_EQ(cancelled.error().kind(), ErrorKind::kCancelled) << cancelled.error().message();
  EXPECT_EQ(pieces, 1);

  pieces = 0;
  auto throwing = [&](std::string_view) -> Result<bool> {
    if (++pieces == 2) throw std::runtime_error("the disk is full");
    return true;
  };
  try {
    (void)client->Send(Request::Get("/big").StreamBodyTo(throwing));
    ADD_FAILURE() << "Send returned instead of rethrowing";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "the disk is full");
  }
  EXPECT_EQ(pieces, 2) << "the sink was called again after it threw";
  EXPECT_TRUE(Transitions().empty());

  auto next = client->Send(Request::Get("/big"));
  ASSERT_TRUE(next) << next.error().message();
  EXPECT_EQ(next->body.size(), std::size_t{1} << 20);
}

// Settings::gzip against nginx's own gzip: the request asks for it, nginx
// codes the body, the client decodes it; without the setting nothing is
// asked and the body comes as it is.
TEST_P(NginxTest, GzipBodiesAreAskedForAndDecoded) {
  StartNginx({});
  http::Settings settings = PaymentsSettings();
  settings.gzip = true;
  auto client = MakeClient(settings);
  auto coded = client->Send(Request::Get("/text"));
  ASSERT_TRUE(coded) << coded.error().message();
  EXPECT_EQ(coded->status, 200);
  EXPECT_EQ(coded->header("content-encoding"), "gzip");  // nginx did code it
  EXPECT_EQ(coded->body, NginxText());

  // Streamed, the sink gets the decoded bytes.
  std::string streamed;
  auto sunk = client->Send(Request::Get("/text").StreamBodyTo([&](std::string_view chunk) {
    streamed += chunk;
    return true;
  }));
  ASSERT_TRUE(sunk) << sunk.error().message();
  EXPECT_EQ(streamed, NginxText());

  // A decoded body over the limit fails, though its coded form is under it.
  settings.max_response_bytes = 16 * 1024;
  auto limited = MakeClient(settings)->Send(Request::Get("/text"));
  ASSERT_FALSE(limited);
  EXPECT_EQ(limited.error().kind(), ErrorKind::kResponseTooLarge);

  auto plain = MakeClient(PaymentsSettings())->Send(Request::Get("/text"));
  ASSERT_TRUE(plain) << plain.error().message();
  EXPECT_EQ(plain->header("content-encoding"), "");
  EXPECT_EQ(plain->body, NginxText());
}

// Streamed request bodies (Request::StreamBodyFrom) as nginx reads them:
// chunked on HTTP/1.1 or unannounced on HTTP/2 when the length is unknown,
// with Content-Length when known; /echo answers with the body it read.
TEST_P(NginxTest, StreamedRequestBodiesArriveWhole) {
  StartNginx({});
  auto client = MakeClient(PaymentsSettings());
  http::TextSource source{http::Pattern(48 * 1024), 5000};
  auto unannounced = client->Send(Request::Post("/echo").StreamBodyFrom(source.Opener()));
  ASSERT_TRUE(unannounced) << unannounced.error().message();
  EXPECT_EQ(unannounced->status, 200);
  EXPECT_TRUE(unannounced->body == source.text) << "nginx read another body";
  auto announced =
      client->Send(Request::Post("/echo").StreamBodyFrom(source.Opener(), source.text.size()));
  ASSERT_TRUE(announced) << announced.error().message();
  EXPECT_TRUE(announced->body == source.text) << "nginx read another body";
}

// nginx refuses a body over its client_max_body_size (1k here) with 413
// while the client is still sending it: the 413 is the call's answer, the
// breaker counts nothing, and the next call goes through.
TEST_P(NginxTest, AnUploadOverTheServersLimitIsAnsweredWith413) {
  StartNginx({});
  auto client = MakeClient(PaymentsSettings());
  GeneratedBody body(8 << 20);
  auto announced =
      client->Send(Request::Post("/small-upload").StreamBodyFrom(body.Opener(), body.size()));
  ASSERT_TRUE(announced) << announced.error().message();
  EXPECT_EQ(announced->status, 413);
  auto unannounced = client->Send(Request::Post("/small-upload").StreamBodyFrom(body.Opener()));
  ASSERT_TRUE(unannounced) << unannounced.error().message();
  EXPECT_EQ(unannounced->status, 413);
  EXPECT_TRUE(Transitions().empty());
  auto small = client->Send(Request::Post("/small-upload", "tiny"));
  ASSERT_TRUE(small) << small.error().message();
  EXPECT_EQ(small->body, "stored");
}

// nginx ends every connection after its one request: each new connection
// resumes a TLS session nginx gave an earlier one (a ticket), under TLS 1.3
// as under 1.2, where every one made a full handshake.
TEST_P(NginxTest, EachNewConnectionResumesATlsSession) {
  for (const char* protocols : {"TLSv1.3", "TLSv1.2"}) {
    SCOPED_TRACE(protocols);
    StartNginx({.keepalive_requests = 1, .tls_protocols = protocols});
    auto client = MakeClient(PaymentsSettings());
    for (int i = 0; i < 20; ++i) {
      auto response = client->Send(Request::Get("/"));
      ASSERT_TRUE(response) << response.error().message();
    }
    auto requests = nginx->WaitForRequests(20);
    ASSERT_EQ(requests.size(), 20u);
    std::set<std::uint64_t> connections;
    int resumed = 0;
    for (const auto& request : requests) {
      connections.insert(request.connection);
      resumed += request.tls_resumed ? 1 : 0;
    }
    EXPECT_EQ(connections.size(), 20u);
    EXPECT_EQ(resumed, 19);  // all but the first
    network.Remove("payments", 8443);
  }
}

INSTANTIATE_TEST_SUITE_P(Peers, NginxTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return std::string(param.param ? "http2" : "http1");
                         });

}  // namespace
}  // namespace outbound::peers
