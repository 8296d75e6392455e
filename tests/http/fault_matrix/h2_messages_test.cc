// SPDX-License-Identifier: Apache-2.0
// Fault matrix: HTTP/2's message rules (RFC 9113 §8.1, §8.2, §8.3.2),
// which the client checks itself rather than leaving to nghttp2. Header
// blocks written raw by the kit's frame writer, so each breaks exactly one
// rule. A malformed answer is kInvalidResponse, sent once and a breaker
// failure (the server would answer the same again).
#include "matrix_support.h"

namespace outbound::http::matrix {
namespace {

namespace h2 = testing::h2;
using Fields = h2::Fields;

class MessagesMatrix : public MatrixTest {
 protected:
  void ServeFrames(std::vector<h2::Frame> frames) {
    Serve([frames](const ServerRequest&) { return Reply::Frames(frames); });
    StartClient();
  }
  // A response that is the header block `fields` alone.
  void ServeHeaders(Fields fields) {
    ServeFrames({h2::Headers(h2::kThisStream, fields, /*end_stream=*/true, /*end_headers=*/true)});
  }
  void ExpectInvalid(Request request = Request::Get("/")) {
    Begin(std::move(request));
    ExpectEnds({.error = ErrorKind::kInvalidResponse, .attempts = 1, .breaker_failures = 1});
  }
  static h2::Frame Head(Fields fields) {
    return h2::Headers(h2::kThisStream, fields, /*end_stream=*/false, /*end_headers=*/true);
  }
};

TEST_F(MessagesMatrix, AFieldNameInUpperCaseIsMalformed) {
  ServeHeaders({{":status", "200"}, {"X-Upper", "v"}});
  ExpectInvalid();
}

TEST_F(MessagesMatrix, APseudoHeaderAfterARegularFieldIsMalformed) {
  ServeHeaders({{"server", "x"}, {":status", "200"}});
  ExpectInvalid();
}

TEST_F(MessagesMatrix, ARequestsPseudoHeaderInAResponseIsMalformed) {
  ServeHeaders({{":status", "200"}, {":path", "/"}});
  ExpectInvalid();
}

TEST_F(MessagesMatrix, TwoStatusesAreMalformed) {
  ServeHeaders({{":status", "200"}, {":status", "204"}});
  ExpectInvalid();
}

TEST_F(MessagesMatrix, APseudoHeaderInTheTrailersIsMalformed) {
  ServeFrames({Head({{":status", "200"}}), h2::Data(h2::kThisStream, "ok"),
               h2::Headers(h2::kThisStream, {{":status", "200"}}, true, true)});
  ExpectInvalid();
}

TEST_F(MessagesMatrix, AConnectionSpecificFieldIsMalformed) {
  ServeHeaders({{":status", "200"}, {"connection", "close"}});
  ExpectInvalid();
}

TEST_F(MessagesMatrix, ATeOtherThanTrailersIsMalformedAndTrailersIsNot) {
  ServeHeaders({{":status", "200"}, {"te", "gzip"}});
  ExpectInvalid();
}

TEST_F(MessagesMatrix, TeTrailersIsAllowed) {
  ServeHeaders({{":status", "200"}, {"te", "trailers"}});
  Begin(Request::Get("/"));
  ExpectEnds({.status = 200});
}

TEST_F(MessagesMatrix, AValueWithACarriageReturnIsMalformed) {
  ServeHeaders({{":status", "200"}, {"x-bad", "a\rb"}});
  ExpectInvalid();
}

TEST_F(MessagesMatrix, AValueWithASpaceAtItsStartIsMalformed) {
  ServeHeaders({{":status", "200"}, {"x-padded", " v"}});
  ExpectInvalid();
}

TEST_F(MessagesMatrix, ANameWithASpaceIsMalformed) {
  ServeHeaders({{":status", "200"}, {"x-bad name", "v"}});
  ExpectInvalid();
}

// (DATA before any HEADERS is nghttp2's to refuse: a connection error.)
TEST_F(MessagesMatrix, DataAfterA1xxBeforeTheAnswerIsMalformed) {
  ServeFrames({Head({{":status", "103"}}), h2::Data(h2::kThisStream, "early"),
               h2::Headers(h2::kThisStream, {{":status", "200"}}, true, true)});
  ExpectInvalid();
}

TEST_F(MessagesMatrix, ABodyOnA204IsMalformed) {
  ServeFrames({Head({{":status", "204"}}), h2::Data(h2::kThisStream, "x", true)});
  ExpectInvalid();
}

TEST_F(MessagesMatrix, ABodyAnswerToHeadIsMalformed) {
  ServeFrames(
      {Head({{":status", "200"}, {"content-length", "1"}}), h2::Data(h2::kThisStream, "x", true)});
  ExpectInvalid(Request::Head("/"));
}

TEST_F(MessagesMatrix, AHeadAnswersContentLengthNeedsNoBody) {
  ServeHeaders({{":status", "200"}, {"content-length", "100"}});
  Begin(Request::Head("/"));
  ExpectEnds({.status = 200});
}

TEST_F(MessagesMatrix, ABodyLongerThanItsContentLengthIsMalformed) {
  ServeFrames({Head({{":status", "200"}, {"content-length", "2"}}),
               h2::Data(h2::kThisStream, "abc", true)});
  ExpectInvalid();
}

TEST_F(MessagesMatrix, AContentLengthThatIsNoNumberIsMalformed) {
  ServeFrames({Head({{":status", "200"}, {"content-length", "2x"}}),
               h2::Data(h2::kThisStream, "ab", true)});
  ExpectInvalid();
}

TEST_F(MessagesMatrix, AContentLengthInTheTrailersIsMalformed) {
  ServeFrames({Head({{":status", "200"}, {"content-length", "2"}}), h2::Data(h2::kThisStream, "ab"),
               h2::Headers(h2::kThisStream, {{"content-length", "2"}}, true, true)});
  ExpectInvalid();
}

TEST_F(MessagesMatrix, AContentLengthInA1xxIsMalformed) {
  ServeFrames({Head({{":status", "103"}, {"content-length", "5"}}),
               h2::Headers(h2::kThisStream, {{":status", "200"}}, true, true)});
  ExpectInvalid();
}

TEST_F(MessagesMatrix, TrailersThatDoNotEndTheStreamAreMalformed) {
  ServeFrames({Head({{":status", "200"}}), h2::Data(h2::kThisStream, "ok"),
               h2::Headers(h2::kThisStream, {{"x-sum", "1"}}, false, true)});
  ExpectInvalid();
}

TEST_F(MessagesMatrix, AStreamThatEndsWithA1xxIsMalformed) {
  ServeHeaders({{":status", "103"}});
  ExpectInvalid();
}

TEST_F(MessagesMatrix, A101IsMalformed) {
  ServeHeaders({{":status", "101"}});
  ExpectInvalid();
}

TEST_F(MessagesMatrix, AHeaderBlockWithoutAStatusIsMalformed) {
  ServeHeaders({{"server", "x"}});
  ExpectInvalid();
}

// The well-formed answer the rules must let through: 1xx blocks, the
// final one, a body as long as its content-length, and trailers.
TEST_F(MessagesMatrix, InformationalBlocksThenTheAnswerBodyAndTrailersAreTaken) {
  ServeFrames({Head({{":status", "100"}}), Head({{":status", "103"}, {"link", "</a>"}}),
               Head({{":status", "200"}, {"content-length", "5"}, {"x-h", "1"}}),
               h2::Data(h2::kThisStream, "he"), h2::Data(h2::kThisStream, "llo"),
               h2::Headers(h2::kThisStream, {{"x-sum", "7"}}, true, true)});
  Begin(Request::Get("/"));
  Result<Response> result = ExpectEnds({.status = 200});
  ASSERT_TRUE(result);
  EXPECT_EQ(result->body, "hello");
  EXPECT_EQ(result->headers.Find("x-h"), "1");
  EXPECT_EQ(result->headers.size(), 2u);  // not the 103's link
  EXPECT_EQ(result->trailers.Find("x-sum"), "7");
}

}  // namespace
}  // namespace outbound::http::matrix
