// SPDX-License-Identifier: Apache-2.0
// grpc-status and grpc-message: the status of an answer, the HTTP status
// mapping, and grpc-message's percent-encoding.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "../../src/rpc/wire/status.h"

namespace outbound::rpc::internal {
namespace {

using namespace std::string_literals;

const http::ResponseHeaders kGrpcHeaders = {{":status", "200"},
                                            {"content-type", "application/grpc"}};

TEST(StatusMessageTest, PrintableAsciiOtherThanPercentIsKept) {
  EXPECT_EQ(EncodeStatusMessage("no such cart: 7 (try ~later!)"), "no such cart: 7 (try ~later!)");
}

TEST(StatusMessageTest, PercentControlBytesAndUtf8AreEncodedInUpperCaseHex) {
  EXPECT_EQ(EncodeStatusMessage("100%"), "100%25");
  EXPECT_EQ(EncodeStatusMessage("a\nb\tc"), "a%0Ab%09c");
  EXPECT_EQ(EncodeStatusMessage("caf\xc3\xa9"), "caf%C3%A9");
  EXPECT_EQ(EncodeStatusMessage("\x7f\x00"s), "%7F%00");
}

TEST(StatusMessageTest, EveryByteRoundTripsAndEncodesToPrintableAscii) {
  std::string all;
  for (int byte = 0; byte < 256; ++byte) {
    std::string one(1, static_cast<char>(byte));
    std::string encoded = EncodeStatusMessage(one);
    for (char c : encoded) {
      EXPECT_TRUE(c >= 0x20 && c <= 0x7E) << "byte " << byte;
    }
    EXPECT_EQ(DecodeStatusMessage(encoded), one) << "byte " << byte;
    bool kept = byte >= 0x20 && byte <= 0x7E && byte != '%';
    EXPECT_EQ(encoded.size(), kept ? 1u : 3u) << "byte " << byte;
    all += one;
  }
  EXPECT_EQ(DecodeStatusMessage(EncodeStatusMessage(all)), all);
}

TEST(StatusMessageTest, DecodingTakesHexDigitsInEitherCase) {
  EXPECT_EQ(DecodeStatusMessage("caf%c3%a9 %41"), "caf\xc3\xa9 A");
}

TEST(StatusMessageTest, APercentNotFollowedByTwoHexDigitsIsKeptAsItIs) {
  EXPECT_EQ(DecodeStatusMessage("100%"), "100%");
  EXPECT_EQ(DecodeStatusMessage("%"), "%");
  EXPECT_EQ(DecodeStatusMessage("%4"), "%4");
  EXPECT_EQ(DecodeStatusMessage("%zz%41"), "%zzA");
  EXPECT_EQ(DecodeStatusMessage("%4g"), "%4g");
  EXPECT_EQ(DecodeStatusMessage("%%41"), "%A");
}

TEST(StatusMessageTest, Utf8PassesThroughDecodingAsBytes) {
  EXPECT_EQ(DecodeStatusMessage("caf\xc3\xa9"), "caf\xc3\xa9");
}

TEST(CodeForHttpStatusTest, FollowsGrpcsMapping) {
  EXPECT_EQ(CodeForHttpStatus(400), Code::kInternal);
  EXPECT_EQ(CodeForHttpStatus(401), Code::kUnauthenticated);
  EXPECT_EQ(CodeForHttpStatus(403), Code::kPermissionDenied);
  EXPECT_EQ(CodeForHttpStatus(404), Code::kUnimplemented);
  EXPECT_EQ(CodeForHttpStatus(429), Code::kUnavailable);
  EXPECT_EQ(CodeForHttpStatus(431), Code::kInternal);
  EXPECT_EQ(CodeForHttpStatus(502), Code::kUnavailable);
  EXPECT_EQ(CodeForHttpStatus(503), Code::kUnavailable);
  EXPECT_EQ(CodeForHttpStatus(504), Code::kUnavailable);
}

TEST(CodeForHttpStatusTest, AnyOtherStatusIsUnknown) {
  for (int status : {0, 100, 200, 204, 301, 402, 405, 415, 500, 501, 505, 599, 999}) {
    EXPECT_EQ(CodeForHttpStatus(status), Code::kUnknown) << status;
  }
}

TEST(StatusOfResponseTest, GrpcStatusAndMessageComeFromTheTrailers) {
  Status status =
      StatusOfResponse(200, kGrpcHeaders, {{"grpc-status", "5"}, {"grpc-message", "no cart %237"}});
  EXPECT_EQ(status.code, Code::kNotFound);
  EXPECT_EQ(status.message, "no cart #7");
}

TEST(StatusOfResponseTest, AnOkAnswerHasAnEmptyMessage) {
  Status status = StatusOfResponse(200, kGrpcHeaders, {{"grpc-status", "0"}});
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(status.message, "");
}

TEST(StatusOfResponseTest, ATrailersOnlyAnswerHasItsStatusInTheHeaders) {
  http::ResponseHeaders headers = kGrpcHeaders;
  headers.Add("grpc-status", "14");
  headers.Add("grpc-message", "draining");
  Status status = StatusOfResponse(200, headers, {});
  EXPECT_EQ(status.code, Code::kUnavailable);
  EXPECT_EQ(status.message, "draining");
}

TEST(StatusOfResponseTest, TrailersWinOverHeaders) {
  http::ResponseHeaders headers = kGrpcHeaders;
  headers.Add("grpc-status", "14");
  Status status = StatusOfResponse(200, headers, {{"grpc-status", "0"}});
  EXPECT_TRUE(status.ok());
}

TEST(StatusOfResponseTest, HeaderNamesMatchInAnyCase) {
  Status status = StatusOfResponse(200, {{"Content-Type", "Application/GRPC"}},
                                   {{"Grpc-Status", "7"}, {"GRPC-MESSAGE", "no"}});
  EXPECT_EQ(status.code, Code::kPermissionDenied);
  EXPECT_EQ(status.message, "no");
}

TEST(StatusOfResponseTest, EveryCodeFrom0To16IsRead) {
  for (int code = 0; code <= 16; ++code) {
    Status status = StatusOfResponse(200, kGrpcHeaders, {{"grpc-status", std::to_string(code)}});
    EXPECT_EQ(status.code, static_cast<Code>(code));
  }
}

TEST(StatusOfResponseTest, AnHttpStatusOtherThan200IsTheMappedCode) {
  Status status = StatusOfResponse(503, {{"content-type", "text/html"}}, {});
  EXPECT_EQ(status.code, Code::kUnavailable);
  EXPECT_EQ(status.message, "HTTP status 503");
}

TEST(StatusOfResponseTest, AnHttpStatusOtherThan200KeepsAGrpcMessage) {
  Status status = StatusOfResponse(
      401, {{"content-type", "application/grpc"}, {"grpc-message", "bad%20token"}}, {});
  EXPECT_EQ(status.code, Code::kUnauthenticated);
  EXPECT_EQ(status.message, "HTTP status 401: bad token");
}

// gRPC: "If grpc-status was provided, it must be used" (the HTTP status
// mapping is for answers without one).
TEST(StatusOfResponseTest, AGrpcStatusWinsOverAnHttpStatusOtherThan200) {
  Status status =
      StatusOfResponse(204, {{"grpc-status", "14"}, {"grpc-message", "unavailable"}}, {});
  EXPECT_EQ(status.code, Code::kUnavailable);
  EXPECT_EQ(status.message, "unavailable");
  status = StatusOfResponse(503, {{"content-type", "application/grpc"}}, {{"grpc-status", "8"}});
  EXPECT_EQ(status.code, Code::kResourceExhausted);
  EXPECT_EQ(status.message, "");
}

// An error page is never a success, and a grpc-status that is no code is
// none: the HTTP status's code stands.
TEST(StatusOfResponseTest, AnHttpStatusOtherThan200WinsOverAnOkOrMalformedGrpcStatus) {
  Status status =
      StatusOfResponse(502, {{"content-type", "application/grpc"}, {"grpc-status", "0"}}, {});
  EXPECT_EQ(status.code, Code::kUnavailable);
  EXPECT_EQ(status.message, "HTTP status 502");
  status = StatusOfResponse(503, {{"grpc-status", "99"}}, {});
  EXPECT_EQ(status.code, Code::kUnavailable);
  EXPECT_EQ(status.message, "HTTP status 503");
}

TEST(StatusOfResponseTest, AContentTypeOtherThanGrpcIsUnknownNamingIt) {
  Status status =
      StatusOfResponse(200, {{"content-type", "text/html; charset=utf-8"}}, {{"grpc-status", "0"}});
  EXPECT_EQ(status.code, Code::kUnknown);
  EXPECT_EQ(status.message,
            "the answer's content-type is \"text/html; charset=utf-8\", not application/grpc");
}

TEST(StatusOfResponseTest, AContentTypeThatOnlyStartsLikeGrpcIsUnknown) {
  Status status =
      StatusOfResponse(200, {{"content-type", "application/grpcx"}}, {{"grpc-status", "0"}});
  EXPECT_EQ(status.code, Code::kUnknown);
  status =
      StatusOfResponse(200, {{"content-type", "application/grpc-web"}}, {{"grpc-status", "0"}});
  EXPECT_EQ(status.code, Code::kUnknown);
}

TEST(StatusOfResponseTest, NoContentTypeIsUnknown) {
  Status status = StatusOfResponse(200, {{":status", "200"}}, {{"grpc-status", "0"}});
  EXPECT_EQ(status.code, Code::kUnknown);
  EXPECT_EQ(status.message, "the answer had no content-type");
}

TEST(StatusOfResponseTest, GrpcSubtypesAndParametersAreGrpc) {
  for (const char* type :
       {"application/grpc+proto", "application/grpc+json", "application/grpc;charset=utf-8"}) {
    Status status = StatusOfResponse(200, {{"content-type", type}}, {{"grpc-status", "3"}});
    EXPECT_EQ(status.code, Code::kInvalidArgument) << type;
  }
}

TEST(StatusOfResponseTest, NoGrpcStatusIsInternal) {
  Status status = StatusOfResponse(200, kGrpcHeaders, {{"x-other", "1"}});
  EXPECT_EQ(status.code, Code::kInternal);
  EXPECT_EQ(status.message, "the answer had no grpc-status");
  status = StatusOfResponse(200, kGrpcHeaders, {});
  EXPECT_EQ(status.code, Code::kInternal);
  EXPECT_EQ(status.message, "the answer had no grpc-status");
}

TEST(StatusOfResponseTest, AGrpcStatusThatIsNotACodeIsUnknownNamingIt) {
  for (const char* bad : {"17", "-1", "", "ok", "1.0", " 1", "01", "100", "99999999999"}) {
    Status status = StatusOfResponse(200, kGrpcHeaders, {{"grpc-status", bad}});
    EXPECT_EQ(status.code, Code::kUnknown) << '"' << bad << '"';
    EXPECT_EQ(status.message,
              "the answer's grpc-status \""s + bad + "\" is not a code from 0 to 16");
  }
}

}  // namespace
}  // namespace outbound::rpc::internal
