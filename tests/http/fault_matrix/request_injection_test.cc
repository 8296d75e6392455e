// SPDX-License-Identifier: Apache-2.0
// Fault matrix: requests that must not reach the wire. CR, LF, NUL and the
// other control characters in header names and values, names that are not
// tokens, the fields the client frames itself (issue 11 #5, #6), and the
// same in the URL and method. Each fails with kInvalidRequest before
// anything is dialled: the server sees no connection, the call made no
// attempt, the breaker counted nothing.
#include <tuple>

#include "matrix_support.h"

namespace outbound::http::matrix {
namespace {

struct BadRequest {
  const char* name;  // the row's name
  Request request;
};

void PrintTo(const BadRequest& bad, std::ostream* os) { *os << bad.name; }

Request WithHeader(std::string name, std::string value) {
  return Request::Get("/").Header(std::move(name), std::move(value));
}

Request WithMethod(std::string method) {
  Request r = Request::Get("/");
  r.method = std::move(method);
  return r;
}

const BadRequest kBadRequests[] = {
    {"CrInAValue", WithHeader("X-Note", "a\rX-Evil: 1")},
    {"LfInAValue", WithHeader("X-Note", "a\nX-Evil: 1")},
    {"CrLfInAValue", WithHeader("X-Note", "a\r\nX-Evil: 1")},
    {"NulInAValue", WithHeader("X-Note", std::string("a\0b", 3))},
    {"SohInAValue", WithHeader("X-Note",
                               "a\x01"
                               "b")},
    {"EscInAValue", WithHeader("X-Note", "a\x1b[31mb")},
    {"UsInAValue", WithHeader("X-Note",
                              "a\x1f"
                              "b")},
    {"DelInAValue", WithHeader("X-Note",
                               "a\x7f"
                               "b")},
    {"CrLfInAName", WithHeader("X-Note\r\nX-Evil", "1")},
    {"NulInAName", WithHeader(std::string("X-No\0te", 7), "1")},
    {"SpaceInAName", WithHeader("Bad Name", "1")},
    {"ColonInAName", WithHeader("X-Note:", "1")},
    {"TabInAName", WithHeader("X\tNote", "1")},
    {"EmptyName", WithHeader("", "1")},
    {"NonAsciiName", WithHeader("X-N\xc3\xb6te", "1")},
    {"HostSetByHand", WithHeader("Host", "ledger:8443")},
    {"ContentLengthSetByHand", WithHeader("Content-Length", "0")},
    {"TransferEncodingSetByHand", WithHeader("Transfer-Encoding", "chunked")},
    {"ConnectionSetByHand", WithHeader("Connection", "close")},
    {"UpgradeSetByHand", WithHeader("Upgrade", "websocket")},
    {"TeSetByHand", WithHeader("TE", "gzip")},
    {"KeepAliveSetByHand", WithHeader("Keep-Alive", "timeout=5")},
    {"ProxyAuthorizationSetByHand", WithHeader("Proxy-Authorization", "Basic eDp5")},
    {"PseudoHeaderSetByHand", WithHeader(":path", "/admin")},
    {"AuthoritySetByHand", WithHeader(":authority", "ledger:8443")},
    {"CrLfInThePath", Request::Get("/charges\r\nX-Evil: 1")},
    {"NulInThePath", Request::Get(std::string("/charges\0x", 10))},
    {"SpaceInTheMethod", WithMethod("GET /admin")},
    {"CrLfInTheMethod", WithMethod("GET\r\nX-Evil: 1\r\n")},
};

class InjectionMatrix : public MatrixTest,
                        public ::testing::WithParamInterface<std::tuple<Protocol, BadRequest>> {
 protected:
  void SetUp() override {
    protocol = std::get<0>(GetParam());
    MatrixTest::SetUp();
  }
};

TEST_P(InjectionMatrix, IsRefusedBeforeAnythingIsDialled) {
  Serve([](const ServerRequest&) { return Reply::Ok(); });
  StartClient();
  Begin(std::get<1>(GetParam()).request);
  ExpectEnds({.error = ErrorKind::kInvalidRequest, .attempts = 0, .server_saw = 0});
  EXPECT_EQ(server->connections_opened(), 0);
}

std::string RowName(const ::testing::TestParamInfo<std::tuple<Protocol, BadRequest>>& info) {
  return std::string(std::get<1>(info.param).name) +
         (std::get<0>(info.param) == Protocol::kHttp2 ? "_http2" : "_http1");
}

INSTANTIATE_TEST_SUITE_P(Requests, InjectionMatrix,
                         ::testing::Combine(::testing::Values(Protocol::kHttp2, Protocol::kHttp11),
                                            ::testing::ValuesIn(kBadRequests)),
                         RowName);

// The control: a horizontal tab is allowed inside a value (RFC 9110 §5.5),
// and arrives as sent.
class InjectionControl : public BothProtocols {};

TEST_P(InjectionControl, ATabInsideAValueIsSent) {
  Serve([](const ServerRequest&) { return Reply::Ok(); });
  StartClient();
  Begin(WithHeader("X-Note", "a\tb"));
  ExpectEnds({.status = 200});
  EXPECT_EQ(server->requests().at(0).header("x-note"), "a\tb");
}

// `TE: trailers` is the one TE HTTP/2 allows (RFC 9113 §8.2.2), and gRPC
// requires it: sent over HTTP/2; over HTTP/1.1, where it would be a
// hop-by-hop field for the client's own connection, left out.
TEST_P(InjectionControl, TeTrailersIsSentOverHttp2Only) {
  Serve([](const ServerRequest&) { return Reply::Ok(); });
  StartClient();
  Begin(WithHeader("TE", " Trailers "));
  ExpectEnds({.status = 200});
  EXPECT_EQ(server->requests().at(0).header("te"), protocol == Protocol::kHttp2 ? "trailers" : "");
}

OUTBOUND_MATRIX_BOTH_PROTOCOLS(InjectionControl);

}  // namespace
}  // namespace outbound::http::matrix
