// SPDX-License-Identifier: Apache-2.0
// Settings::gzip: what is asked for, what is decoded, and the response
// limit applied to the decoded size, so a gzip bomb fails having held no
// more than the limit. Both protocols; both transports (test_transport.h).
#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

#include "../../src/http/gzip_decoder.h"
#include "client_test_support.h"

namespace outbound::http {
namespace {

using testing::Reply;
using testing::ServerRequest;

// `text` gzip-coded, as a server would send it.
std::string Gzip(const std::string& text) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY),
            Z_OK);
  std::string out(deflateBound(&z, static_cast<uLong>(text.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string Lines(std::size_t bytes) {
  std::string text;
  for (int i = 0; text.size() < bytes; ++i) text += "charge ch_" + std::to_string(i) + " 500\n";
  return text;
}

class GzipTest : public ::testing::TestWithParam<Protocol>, public ClientTestBase {
 protected:
  Settings GzipSettings() {
    Settings s = PaymentsSettings();
    s.gzip = true;
    return s;
  }
  // Serves `coded` as a gzip-coded body to a request accepting gzip, and
  // `plain` to any other.
  void ServeCoded(std::string plain, std::string coded) {
    Serve(
        [plain, coded](const ServerRequest& r) {
          if (r.header("accept-encoding") == "gzip") {
            return Reply::Ok(coded).Header("Content-Encoding", "gzip");
          }
          return Reply::Ok(plain);
        },
        GetParam());
  }
};

TEST_P(GzipTest, AskedForAndDecodedWhenOn) {
  std::string text = Lines(100 * 1024);
  ServeCoded(text, Gzip(text));
  auto got = MakeClient(GzipSettings())->Send(Request::Get("/charges"));
  ASSERT_TRUE(got) << got.error().message();
  EXPECT_EQ(got->body, text);
  EXPECT_EQ(got->header("content-encoding"), "gzip");  // the headers as sent
  EXPECT_EQ(server->requests().at(0).header("accept-encoding"), "gzip");
}

TEST_P(GzipTest, NeitherAskedNorDecodedByDefault) {
  std::string text = Lines(1000);
  ServeCoded(text, Gzip(text));
  auto got = MakeClient()->Send(Request::Get("/charges"));
  ASSERT_TRUE(got) << got.error().message();
  EXPECT_EQ(got->body, text);
  EXPECT_EQ(server->requests().at(0).header("accept-encoding"), "");
}

TEST_P(GzipTest, ARequestsOwnAcceptEncodingGetsTheBodyAsItCame) {
  std::string text = Lines(1000);
  std::string coded = Gzip(text);
  Serve(
      [coded](const ServerRequest&) { return Reply::Ok(coded).Header("Content-Encoding", "gzip"); },
      GetParam());
  auto got =
      MakeClient(GzipSettings())->Send(Request::Get("/charges").Header("Accept-Encoding", "gzip"));
  ASSERT_TRUE(got) << got.error().message();
  EXPECT_EQ(got->body, coded);  // the caller asked for the coding: it decodes
  auto requests = server->requests();
  int accept_encodings = 0;
  for (const auto& [name, value] : requests.at(0).headers)
    accept_encodings += name == "accept-encoding";
  EXPECT_EQ(accept_encodings, 1);
}

TEST_P(GzipTest, ABombFailsAtTheLimitOfItsDecodedSize) {
  // 64 MiB of zeros in ~64 KiB: the limit is 1 MiB of decoded body.
  std::string coded = Gzip(std::string(64 << 20, '\0'));
  ASSERT_LT(coded.size(), 128u * 1024);
  Serve(
      [coded](const ServerRequest&) { return Reply::Ok(coded).Header("Content-Encoding", "gzip"); },
      GetParam());
  Settings settings = GzipSettings();
  settings.max_response_bytes = 1 << 20;
  auto client = MakeClient(settings);
  auto got = client->Send(Request::Get("/export"));
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().kind(), ErrorKind::kResponseTooLarge) << got.error().message();
  EXPECT_EQ(server->request_count(), 1u);  // not retried: the same body would come again

  // Streamed, the same body has no limit, and every decoded byte arrives,
  // then the end, once the gzip stream has ended too.
  std::size_t streamed = 0;
  std::size_t streamed_at_end = 0;
  int ends = 0;
  bool zeros = true;
  auto sunk = client->Send(Request::Get("/export").StreamBodyTo([&](std::string_view chunk) {
    if (chunk.empty()) {
      ++ends;
      streamed_at_end = streamed;
    }
    streamed += chunk.size();
    zeros = zeros && chunk.find_first_not_of('\0') == std::string_view::npos;
    return true;
  }));
  ASSERT_TRUE(sunk) << sunk.error().message();
  EXPECT_EQ(streamed, std::size_t{64} << 20);
  EXPECT_EQ(ends, 1);
  EXPECT_EQ(streamed_at_end, streamed);
  EXPECT_TRUE(zeros);
}

TEST_P(GzipTest, ABodyThatIsNotGzipFailsAsInvalid) {
  Serve(
      [](const ServerRequest&) {
        return Reply::Ok("this is not gzip at all").Header("Content-Encoding", "gzip");
      },
      GetParam());
  auto got = MakeClient(GzipSettings())->Send(Request::Get("/charges"));
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().kind(), ErrorKind::kInvalidResponse) << got.error().message();
}

TEST_P(GzipTest, AnEmptyBodyMarkedGzipIsAnEmptyBody) {
  Serve([](const ServerRequest&) { return Reply::Ok("").Header("Content-Encoding", "gzip"); },
        GetParam());
  auto got = MakeClient(GzipSettings())->Send(Request::Get("/charges"));
  ASSERT_TRUE(got) << got.error().message();
  EXPECT_EQ(got->body, "");
}

TEST_P(GzipTest, AGzipStreamCutShortIsNotAnAnswer) {
  std::string coded = Gzip(Lines(50 * 1024));
  coded.resize(coded.size() / 2);  // the framing is whole, the gzip stream is not
  Serve(
      [coded](const ServerRequest&) { return Reply::Ok(coded).Header("Content-Encoding", "gzip"); },
      GetParam());
  auto got = MakeClient(GzipSettings())->Send(Request::Get("/charges"));
  ASSERT_FALSE(got) << "a half of the body was taken as the whole";
}

TEST_P(GzipTest, AHeadAnswerSaysGzipButHasNoBodyToDecode) {
  std::string coded = Gzip(Lines(1000));
  Serve(
      [coded](const ServerRequest&) { return Reply::Ok(coded).Header("Content-Encoding", "gzip"); },
      GetParam());
  auto got = MakeClient(GzipSettings())->Send(Request::Head("/charges"));
  ASSERT_TRUE(got) << got.error().message();
  EXPECT_EQ(got->status, 200);
  EXPECT_EQ(got->body, "");
}

// The decoder alone: the pieces a transport feeds it, however cut.
using internal::GzipDecoder;

std::string DecodeAll(const std::string& coded, std::size_t piece, GzipDecoder::Status* last) {
  GzipDecoder decoder;
  std::string out;
  GzipDecoder::Output keep = [&](std::string_view chunk) {
    out += chunk;
    return true;
  };
  *last = GzipDecoder::Status::kOk;
  for (std::size_t at = 0; at < coded.size() && *last == GzipDecoder::Status::kOk; at += piece) {
    *last = decoder.Feed(std::string_view(coded).substr(at, piece), keep);
  }
  if (*last == GzipDecoder::Status::kOk && !decoder.complete())
    *last = GzipDecoder::Status::kCorrupt;
  return out;
}

TEST(GzipDecoderTest, DecodesHoweverTheBodyIsCut) {
  std::string text = Lines(40 * 1024);
  std::string coded = Gzip(text);
  for (std::size_t piece : {std::size_t{1}, std::size_t{7}, std::size_t{4096}, coded.size()}) {
    GzipDecoder::Status last;
    EXPECT_EQ(DecodeAll(coded, piece, &last), text) << "pieces of " << piece;
    EXPECT_EQ(last, GzipDecoder::Status::kOk);
  }
}

TEST(GzipDecoderTest, MembersBackToBackDecodeAsTheirConcatenation) {
  std::string a = Lines(3000), b = Lines(5000);
  std::string coded = Gzip(a) + Gzip(b);
  for (std::size_t piece : {std::size_t{1}, std::size_t{13}, coded.size()}) {
    GzipDecoder::Status last;
    EXPECT_EQ(DecodeAll(coded, piece, &last), a + b) << "pieces of " << piece;
    EXPECT_EQ(last, GzipDecoder::Status::kOk);
  }
}

TEST(GzipDecoderTest, GarbageAfterAMemberOrACutStreamIsCorrupt) {
  GzipDecoder::Status last;
  DecodeAll(Gzip(Lines(2000)) + "garbage", 64, &last);
  EXPECT_EQ(last, GzipDecoder::Status::kCorrupt);
  std::string cut = Gzip(Lines(2000));
  cut.resize(cut.size() - 4);  // the trailer's length field
  DecodeAll(cut, 64, &last);
  EXPECT_EQ(last, GzipDecoder::Status::kCorrupt);
}

TEST(GzipDecoderTest, ABombStopsWithinOneBufferOfWhereTheSinkSaidNoMore) {
  constexpr std::size_t kLimit = 1 << 20;
  std::string coded = Gzip(std::string(64 << 20, '\0'));
  GzipDecoder decoder;
  std::size_t decoded = 0;
  GzipDecoder::Output bounded = [&](std::string_view chunk) {
    decoded += chunk.size();
    return decoded <= kLimit;
  };
  EXPECT_EQ(decoder.Feed(coded, bounded), GzipDecoder::Status::kStopped);
  EXPECT_LE(decoded, kLimit + 16 * 1024);  // one output buffer past the limit, no more
}

INSTANTIATE_TEST_SUITE_P(Protocols, GzipTest,
                         ::testing::Values(Protocol::kHttp2, Protocol::kHttp11),
                         [](const ::testing::TestParamInfo<Protocol>& p) {
                           return std::string(p.param == Protocol::kHttp2 ? "h2" : "h1");
                         });

}  // namespace
}  // namespace outbound::http
