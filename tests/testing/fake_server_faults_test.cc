// SPDX-License-Identifier: Apache-2.0
// The FakeServer's scripted faults, byte by byte: what a broken HTTP/1.1
// answer puts on the wire (read over plain TCP with a bare socket), HTTP/2
// frames as encoded and as the curl and nghttp commands receive them,
// requests cut while being read (ReadCut), TLS cipher choice, and the
// BlackHole that never accepts.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "outbound/testing/black_hole.h"
#include "outbound/testing/fake_server.h"
#include "outbound/testing/h2_frame.h"
#include "outbound/testing/test_ca.h"
#include "test_support.h"

namespace outbound::testing {
namespace {

int ConnectTo(std::uint16_t port, bool blocking = true) {
  int fd = socket(AF_INET, SOCK_STREAM | (blocking ? 0 : SOCK_NONBLOCK), 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  if (rc != 0 && errno != EINPROGRESS) {
    close(fd);
    return -1;
  }
  return fd;
}

struct Exchange {
  std::string bytes;   // what the server wrote
  bool reset = false;  // the read ended with ECONNRESET
};

// Sends one HTTP/1.1 GET over plain TCP and reads until the server closes.
Exchange RawGet(const FakeServer& server) {
  int fd = ConnectTo(server.port());
  std::string request = "GET / HTTP/1.1\r\nHost: payments\r\nConnection: close\r\n\r\n";
  EXPECT_EQ(write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  Exchange out;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      out.bytes.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    out.reset = n < 0 && errno == ECONNRESET;
    break;
  }
  close(fd);
  return out;
}

std::unique_ptr<FakeServer> PlainServer(Reply reply) {
  auto server = FakeServer::Start({.handler = [reply](const ServerRequest&) { return reply; }});
  EXPECT_TRUE(server) << server.error().message();
  return std::move(*server);
}

TEST(FakeServerFaultsTest, HeadersAsGivenWriteTwoContentLengths) {
  auto server = PlainServer(Reply::Ok("0123456789")
                                .Header("Content-Length", "5")
                                .Header("Content-Length", "10")
                                .HeadersAsGiven());
  EXPECT_EQ(RawGet(*server).bytes,
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 10\r\n\r\n0123456789");
}

TEST(FakeServerFaultsTest, StatusLineIsWrittenAsGiven) {
  auto server = PlainServer(Reply::Ok("x").StatusLine("HTTP/1.1 2000 OK"));
  EXPECT_EQ(RawGet(*server).bytes, "HTTP/1.1 2000 OK\r\nContent-Length: 1\r\n\r\nx");
}

TEST(FakeServerFaultsTest, AnEmptyStatusLineAnswersAsHttp09) {
  auto server = PlainServer(Reply::Ok("<html>hi</html>").StatusLine(""));
  EXPECT_EQ(RawGet(*server).bytes, "<html>hi</html>");
}

TEST(FakeServerFaultsTest, UnannouncedBodiesAreChunked) {
  auto server = PlainServer(Reply::Ok("0123456789").Unannounced());
  EXPECT_EQ(RawGet(*server).bytes,
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\na\r\n0123456789\r\n0\r\n\r\n");
}

TEST(FakeServerFaultsTest, TrailersFollowAChunkedBodyOnHttp11) {
  auto server = PlainServer(Reply::Ok("hi").Trailer("X-Sum", "7"));
  EXPECT_EQ(RawGet(*server).bytes,
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\nX-Sum: "
            "7\r\n\r\n");
}

TEST(FakeServerFaultsTest, HeadersOnlySendsNoBodyOnHttp11) {
  auto server = PlainServer(Reply::Ok("never sent").Trailer("x-sum", "7").HeadersOnly());
  std::string bytes = RawGet(*server).bytes;
  EXPECT_NE(bytes.find("Content-Length: 0\r\n"), std::string::npos) << bytes;
  EXPECT_EQ(bytes.substr(bytes.size() - 4), "\r\n\r\n") << bytes;
  EXPECT_EQ(bytes.find("never sent"), std::string::npos);
  EXPECT_EQ(bytes.find("x-sum"), std::string::npos);
}

// HTTP/2 in plain text with prior knowledge, as nghttp speaks it to an
// http:// URI: its -v lists each frame the server sent.
std::string NghttpFrames(const FakeServer& server) {
  return RunCommand("nghttp -v http://127.0.0.1:" + std::to_string(server.port()) + "/ 2>&1")
      .output;
}

std::unique_ptr<FakeServer> H2cServer(Reply reply) {
  auto server =
      FakeServer::Start({.h2c = true, .handler = [reply](const ServerRequest&) { return reply; }});
  EXPECT_TRUE(server) << server.error().message();
  return std::move(*server);
}

TEST(FakeServerH2cTest, PlainTextServesHttp2WithPriorKnowledge) {
  auto server = H2cServer(Reply::Ok("hi"));
  CommandResult curl = RunCommand(
      "curl -sS -o /dev/null -w '%{http_version} %{http_code}' --http2-prior-knowledge "
      "http://127.0.0.1:" +
      std::to_string(server->port()) + "/ 2>/dev/null");
  EXPECT_EQ(curl.output, "2 200");
  ASSERT_EQ(server->requests().size(), 1u);
  EXPECT_EQ(server->requests()[0].version, "2");
  EXPECT_EQ(server->url().rfind("http://", 0), 0u);
}

TEST(FakeServerH2cTest, TrailersEndTheStreamAfterTheData) {
  auto server = H2cServer(Reply::Ok("hi").Unannounced().Trailer("X-Sum", "7"));
  std::string out = NghttpFrames(*server);
  std::size_t data = out.find("recv DATA frame <length=2, flags=0x00,");  // no END_STREAM
  std::size_t trailers = out.find("recv HEADERS frame <length=", data);
  ASSERT_NE(data, std::string::npos) << out;
  ASSERT_NE(trailers, std::string::npos) << out;
  EXPECT_NE(out.find("x-sum: 7", data), std::string::npos) << out;
  EXPECT_EQ(out.find("END_STREAM | END_HEADERS", trailers), out.find("END_STREAM", data))
      << out;  // the trailers' frame ends the stream
}

TEST(FakeServerH2cTest, HeadersOnlyIsOneHeadersFrameWithEndStream) {
  auto server = H2cServer(Reply::Ok("never sent").Header("grpc-status", "14").HeadersOnly());
  std::string out = NghttpFrames(*server);
  std::size_t headers = out.find("recv HEADERS frame <length=");
  ASSERT_NE(headers, std::string::npos) << out;
  EXPECT_NE(out.find("flags=0x05,", headers), std::string::npos)
      << out;  // END_STREAM | END_HEADERS
  EXPECT_EQ(out.find("recv DATA frame"), std::string::npos) << out;
  EXPECT_EQ(out.find("content-length"), std::string::npos) << out;
}

TEST(FakeServerFaultsTest, AnnounceLengthLiesAboutTheBody) {
  auto server = PlainServer(Reply::ShortBody(2, "abc").AnnounceLength(1000));
  EXPECT_EQ(RawGet(*server).bytes, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nab");
}

TEST(FakeServerFaultsTest, StallSendsPartOfTheBodyAndKeepsTheConnection) {
  auto server = PlainServer(Reply::Stall(3, "0123456789"));
  int fd = ConnectTo(server->port());
  std::string request = "GET / HTTP/1.1\r\nHost: payments\r\n\r\n";
  ASSERT_EQ(write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  std::string expected = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n012";
  std::string got;
  char buf[256];
  while (got.size() < expected.size()) {
    ssize_t n = read(fd, buf, sizeof buf);
    ASSERT_GT(n, 0);
    got.append(buf, static_cast<std::size_t>(n));
  }
  EXPECT_EQ(got, expected);
  EXPECT_EQ(server->connections_open(), 1);
  close(fd);
  EXPECT_TRUE(server->WaitFor([](const FakeServer& s) { return s.cancelled_requests() == 1; }));
}

TEST(FakeServerFaultsTest, ResetConnectionSendsATcpReset) {
  auto server = PlainServer(Reply::ResetConnection());
  Exchange exchange = RawGet(*server);
  EXPECT_EQ(exchange.bytes, "");
  EXPECT_TRUE(exchange.reset);
  EXPECT_EQ(server->request_count(), 1u);
}

// Sends a POST of `body` over plain TCP; what the server wrote until it
// closed, and whether it reset.
Exchange RawPost(const FakeServer& server, const std::string& body) {
  int fd = ConnectTo(server.port());
  std::string request =
      "POST / HTTP/1.1\r\nHost: payments\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n\r\n" + body;
  EXPECT_EQ(write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  Exchange out;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      out.bytes.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    out.reset = n < 0 && errno == ECONNRESET;
    break;
  }
  close(fd);
  return out;
}

// A ReadCut stops reading the body part way: the server records what it
// read, answers nothing, and closes or resets; the handler is not called.
TEST(FakeServerFaultsTest, ACutRequestIsRecordedAsReadThenClosedOrReset) {
  for (bool reset : {false, true}) {
    bool handled = false;
    auto server = FakeServer::Start(
        {.handler =
             [&](const ServerRequest&) {
               handled = true;
               return Reply::Ok();
             },
         .cut_reading = [reset](const ServerRequest& head) -> std::optional<ReadCut> {
           EXPECT_EQ(head.target, "/");
           EXPECT_EQ(head.body, "");
           return ReadCut{4, reset ? Reply::Reset() : Reply::Close()};
         }});
    ASSERT_TRUE(server) << server.error().message();
    Exchange exchange = RawPost(**server, "0123456789");
    EXPECT_EQ(exchange.bytes, "");
    EXPECT_EQ(exchange.reset, reset);
    ASSERT_EQ((*server)->request_count(), 1u);
    ServerRequest request = (*server)->requests()[0];
    EXPECT_EQ(request.body, "0123");
    EXPECT_FALSE(request.whole);
    EXPECT_EQ(request.stream_id, 1);
    EXPECT_FALSE(handled);
    EXPECT_EQ((*server)->cancelled_requests(), 0);  // the server's doing, not the client's
  }
}

// With no cut, the request is read whole and handled as ever.
TEST(FakeServerFaultsTest, NoCutReadsTheRequestWhole) {
  auto server = FakeServer::Start(
      {.handler = [](const ServerRequest& r) { return Reply::Ok(r.body); },
       .cut_reading = [](const ServerRequest&) -> std::optional<ReadCut> { return std::nullopt; }});
  ASSERT_TRUE(server) << server.error().message();
  int fd = ConnectTo((*server)->port());
  std::string request =
      "POST / HTTP/1.1\r\nHost: payments\r\nConnection: close\r\nContent-Length: 3\r\n\r\nabc";
  ASSERT_EQ(write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  std::string got;
  char buf[256];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;)
    got.append(buf, static_cast<std::size_t>(n));
  close(fd);
  EXPECT_NE(got.find("\r\n\r\nabc"), std::string::npos) << got;
  ASSERT_EQ((*server)->request_count(), 1u);
  EXPECT_TRUE((*server)->requests()[0].whole);
}

TEST(H2FrameTest, FramesAreEncodedAsRfc9113Says) {
  using namespace h2;
  EXPECT_EQ(Ping(0x0102030405060708).Encode(),
            std::string("\0\0\x08\x06\0\0\0\0\0\x01\x02\x03\x04\x05\x06\x07\x08", 17));
  EXPECT_EQ(WindowUpdate(0, 1).Encode(), std::string("\0\0\x04\x08\0\0\0\0\0\0\0\0\x01", 13));
  EXPECT_EQ(Data(3, "", false).Encode(), std::string("\0\0\0\0\0\0\0\0\x03", 9));
  EXPECT_EQ(RstStream(5, kNoError).Encode(), std::string("\0\0\x04\x03\0\0\0\0\x05\0\0\0\0", 13));
  EXPECT_EQ(Settings().Encode(), std::string("\0\0\0\x04\0\0\0\0\0", 9));
  // A literal without indexing, new name, no Huffman: 0x00, length, name, length, value.
  EXPECT_EQ(EncodeFields({{":status", "200"}}), std::string("\0\x07:status\x03"
                                                            "200",
                                                            13));
  EXPECT_EQ(h2::Headers(1, {{"a", "b"}}, true, true).Encode(),
            std::string("\0\0\x05\x01\x05\0\0\0\x01\0\x01"
                        "a\x01"
                        "b",
                        14));
  // Lengths of 127 and over take HPACK's multi-byte integers.
  std::string long_value(200, 'v');
  std::string encoded = EncodeFields({{"x", long_value}});
  EXPECT_EQ(encoded.substr(0, 5), std::string("\0\x01x\x7f\x49", 5));  // 127 + 73 = 200
  EXPECT_EQ(encoded.size(), 5 + 200u);
}

class FakeServerFramesTest : public ::testing::Test {
 protected:
  std::unique_ptr<FakeServer> Serve(Reply reply, ServerTls tls) {
    auto server = FakeServer::Start(
        {.tls = std::move(tls), .handler = [reply](const ServerRequest&) { return reply; }});
    EXPECT_TRUE(server) << server.error().message();
    return std::move(*server);
  }
  CommandResult Curl(const FakeServer& server, const std::string& options) {
    std::string cafile = dir.Write("ca.pem", ca.pem());
    return RunCommand("curl -sS -o /dev/null -w '%{http_version} %{http_code}' --cacert " + cafile +
                      " --connect-to payments:8443:127.0.0.1:" + std::to_string(server.port()) +
                      " " + options + " https://payments:8443/ 2>/dev/null");
  }
  TempDir dir;
  TestCA ca;
};

// Raw frames take the connection after the preface and SETTINGS exchange:
// a response written by hand is one curl reads.
TEST_F(FakeServerFramesTest, RawFramesAnswerOnTheRequestsStream) {
  auto server =
      Serve(Reply::Frames({h2::Headers(h2::kThisStream, {{":status", "204"}}, true, true)}),
            ServerTls{ca.IssueServer({"payments"})});
  EXPECT_EQ(Curl(*server, "--http2").output, "2 204");
  // Counted once the write completes, which may be after curl has read it.
  EXPECT_TRUE(server->WaitFor([](const FakeServer& s) { return s.raw_frames_written() == 1; }));
}

TEST_F(FakeServerFramesTest, AFloodWritesItsFramesAfterTheFirstOnes) {
  auto server =
      Serve(Reply::Flood(h2::Ping(), 5000,
                         {h2::Headers(h2::kThisStream, {{":status", "200"}}, false, true)}),
            ServerTls{ca.IssueServer({"payments"})});
  std::thread curl([&] { Curl(*server, "--http2 --max-time 1"); });
  EXPECT_TRUE(server->WaitFor([](const FakeServer& s) { return s.raw_frames_written() == 5001; }));
  curl.join();
}

// Broken answers reach a client over TLS whole: curl decides about each at
// once (refusing most; 7.88 takes two Content-Lengths over HTTP/1.1)
// rather than wait for more.
TEST_F(FakeServerFramesTest, BrokenAnswersReachCurlOverTls) {
  ServerTls tls{ca.IssueServer({"payments"})};
  for (const char* protocol : {"--http1.1", "--http2"}) {
    for (Reply reply : {Reply::Ok("x").StatusLine(""), Reply::Ok("x").StatusLine("2000"),
                        Reply::Ok("x").StatusLine("HTTP/1.1 2000 OK"),
                        Reply::Ok("0123456789")
                            .Header("Content-Length", "5")
                            .Header("Content-Length", "10")
                            .HeadersAsGiven()}) {
      auto server = Serve(reply, tls);
      CommandResult result = Curl(*server, std::string(protocol) + " --max-time 5");
      EXPECT_NE(result.exit_code, 28) << protocol << ": curl waited for more";
    }
  }
}

TEST_F(FakeServerFramesTest, CiphersLimitWhatTheServerAccepts) {
  ServerTls tls{ca.IssueServer({"payments"})};
  tls.max_version = 0x0303;  // TLS 1.2
  tls.ciphers = "ECDHE-ECDSA-AES128-SHA";
  auto server = Serve(Reply::Ok(), tls);
  EXPECT_EQ(Curl(*server, "--http1.1 --ciphers ECDHE-ECDSA-AES128-SHA").output, "1.1 200");
  EXPECT_EQ(Curl(*server, "--http1.1 --ciphers ECDHE-ECDSA-AES128-GCM-SHA256").exit_code, 35);
}

TEST(FakeServerOptionsTest, AnUnknownCipherListIsRefused) {
  TestCA ca;
  ServerTls tls{ca.IssueServer({"payments"})};
  tls.ciphers = "NO-SUCH-CIPHER";
  auto server = FakeServer::Start({.tls = tls});
  ASSERT_FALSE(server);
  EXPECT_EQ(server.error().kind(), ErrorKind::kInvalidSettings);
}

// A connect to a black hole neither completes nor fails.
// HTTP/2 cuts on the wire, as nghttp (nghttp2's own client) prints them:
// RST_STREAM with the code given, or the connection closed with no frame;
// the request is recorded as far as it was read, once.
TEST_F(FakeServerFramesTest, Http2CutsEndTheStreamAsScripted) {
  struct Row {
    Reply end;
    std::string printed;  // what nghttp prints of the end
  };
  for (const Row& row :
       {Row{Reply::Reset(7), "error_code=REFUSED_STREAM(0x07)"},
        Row{Reply::Reset(2), "error_code=INTERNAL_ERROR(0x02)"}, Row{Reply::Close(), ""}}) {
    SCOPED_TRACE(row.printed);
    auto server = FakeServer::Start(
        {.tls = ServerTls{ca.IssueServer({"payments", "127.0.0.1"})},
         .cut_reading = [end = row.end](const ServerRequest&) -> std::optional<ReadCut> {
           return ReadCut{4, end};
         }});
    ASSERT_TRUE(server) << server.error().message();
    std::string data = dir.Write("body", "0123456789");
    CommandResult result =
        RunCommand("nghttp -nv -y -t 5 -d " + data + " " + (*server)->url() + "/ 2>&1");
    ASSERT_EQ((*server)->request_count(), 1u) << result.output;
    EXPECT_EQ((*server)->requests()[0].body, "0123");
    EXPECT_FALSE((*server)->requests()[0].whole);
    EXPECT_EQ(result.output.find("recv HEADERS"), std::string::npos) << result.output;
    if (row.printed.empty()) {
      EXPECT_EQ(result.output.find("recv RST_STREAM"), std::string::npos) << result.output;
      EXPECT_EQ(result.output.find("recv GOAWAY"), std::string::npos) << result.output;
    } else {
      EXPECT_NE(result.output.find("recv RST_STREAM"), std::string::npos) << result.output;
      EXPECT_NE(result.output.find(row.printed), std::string::npos) << result.output;
    }
  }
}

// A cut by GOAWAY leaves the stream out of the GOAWAY's last-stream-id,
// as nghttp (nghttp2's own client) prints the frame.
TEST_F(FakeServerFramesTest, AGoawayCutLeavesTheStreamOut) {
  auto server =
      FakeServer::Start({.tls = ServerTls{ca.IssueServer({"payments", "127.0.0.1"})},
                         .cut_reading = [](const ServerRequest&) -> std::optional<ReadCut> {
                           return ReadCut{4, Reply::Reset(0).ResetBy(Reply::H2Reset::kGoaway)};
                         }});
  ASSERT_TRUE(server) << server.error().message();
  std::string data = dir.Write("body", "0123456789");
  CommandResult result =
      RunCommand("nghttp -nv -y -t 5 -d " + data + " " + (*server)->url() + "/ 2>&1");
  ASSERT_EQ((*server)->request_count(), 1u) << result.output;
  ServerRequest request = (*server)->requests()[0];
  EXPECT_EQ(request.body, "0123");
  EXPECT_FALSE(request.whole);
  EXPECT_NE(result.output.find("recv GOAWAY"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("last_stream_id=" + std::to_string(request.stream_id - 2)),
            std::string::npos)
      << result.output;
  EXPECT_TRUE((*server)->WaitFor([](const FakeServer& s) { return s.connections_open() == 0; }));
}

// A reset mid-answer by GOAWAY keeps the stream in (its answer began) and
// closes the connection; by kConnection it closes with no frame: curl gets
// part of the body either way, and fails.
TEST_F(FakeServerFramesTest, Http2ResetsMidAnswerByGoawayOrClose) {
  for (Reply::H2Reset how : {Reply::H2Reset::kGoaway, Reply::H2Reset::kConnection}) {
    auto server = Serve(Reply::ResetAfter(3, "0123456789").ResetBy(how),
                        ServerTls{ca.IssueServer({"payments"})});
    CommandResult result = Curl(*server, "--http2 --max-time 5");
    EXPECT_NE(result.exit_code, 0);
    EXPECT_EQ(result.output, "2 200");       // the headers came
    EXPECT_EQ(server->request_count(), 1u);  // not sent again: the stream was processed
    EXPECT_TRUE(server->WaitFor([](const FakeServer& s) { return s.connections_open() == 0; }));
  }
}

TEST(BlackHoleTest, AConnectIsNeverAccepted) {
  auto hole = BlackHole::Start();
  ASSERT_TRUE(hole) << hole.error().message();
  int fd = ConnectTo((*hole)->port(), /*blocking=*/false);
  ASSERT_GE(fd, 0);
  pollfd p{fd, POLLOUT, 0};
  EXPECT_EQ(poll(&p, 1, 200), 0);  // still dialling
  close(fd);
}

TEST(BlackHoleTest, CountsTheConnectsWaitingAtIt) {
  auto hole = BlackHole::Start();
  ASSERT_TRUE(hole) << hole.error().message();
  EXPECT_EQ((*hole)->dials(), 0);  // its own filler is connected, not waiting
  int first = ConnectTo((*hole)->port(), /*blocking=*/false);
  int second = ConnectTo((*hole)->port(), /*blocking=*/false);
  ASSERT_GE(first, 0);
  ASSERT_GE(second, 0);
  EXPECT_EQ((*hole)->dials(), 2);
  close(first);
  EXPECT_EQ((*hole)->dials(), 1);
  close(second);
  EXPECT_EQ((*hole)->dials(), 0);
}

}  // namespace
}  // namespace outbound::testing
