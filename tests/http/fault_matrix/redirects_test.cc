// SPDX-License-Identifier: Apache-2.0
// Fault matrix: redirects and the credentials a call carries. The caller
// sets Authorization and Cookie; a redirect to anywhere but the client's
// own origin is returned to the caller as the 3xx, and nothing is dialled:
// a second FakeServer plays the other origin and must see no connection at
// all, so 0 bytes of either header reach it (SPEC §7, issue 11 #4).
#include "matrix_support.h"

namespace outbound::http::matrix {
namespace {

constexpr char kToken[] = "Bearer secret-token";
constexpr char kCookie[] = "session=s3cret";

class RedirectMatrix : public BothProtocols {
 protected:
  // payments answers /pay with a 302 to `location`, everything else 200.
  // The other origin runs too, as `host`:`port`, plain or TLS (none if
  // `host` is empty).
  void Redirect(const std::string& location, const std::string& host = "ledger",
                std::uint16_t port = 8443, bool other_tls = true) {
    Serve([location](const ServerRequest& r) {
      if (r.target == "/pay") return Reply::Status(302).Header("Location", location);
      return Reply::Ok("at " + r.target);
    });
    if (!host.empty()) StartOther(host, port, other_tls);
    StartClient();
    Begin(Request::Get("/pay").Header("Authorization", kToken).Header("Cookie", kCookie));
  }

  void StartOther(const std::string& host, std::uint16_t port, bool other_tls) {
    FakeServer::Options options{.handler = [](const ServerRequest&) { return Reply::Ok(); },
                                .clock = &clock};
    if (other_tls) options.tls = Tls(ca.IssueServer({host}));
    auto started = FakeServer::Start(std::move(options));
    ASSERT_TRUE(started);
    other = std::move(*started);
    network.Add(host, port, "127.0.0.1", other->port());
  }

  // The 302 comes back as it came; nothing reached the other origin.
  void ExpectReturnedAndNothingElsewhere(const std::string& location) {
    Result<Response> result = ExpectEnds({.status = 302, .attempts = 1});
    if (result) {
      EXPECT_EQ(result->header("Location"), location);
    }
    if (other) {
      EXPECT_EQ(other->connections_opened(), 0);
    }
    EXPECT_EQ(server->connections_opened(), 1);
  }
};

TEST_P(RedirectMatrix, ToAnotherHostIsReturned) {
  Redirect("https://ledger:8443/x");
  ExpectReturnedAndNothingElsewhere("https://ledger:8443/x");
}

TEST_P(RedirectMatrix, ToAnotherPortIsReturned) {
  Redirect("https://payments:9443/x", "payments", 9443);
  ExpectReturnedAndNothingElsewhere("https://payments:9443/x");
}

TEST_P(RedirectMatrix, ToPlainHttpOnAnotherPortIsReturned) {
  Redirect("http://payments:8080/x", "payments", 8080, /*other_tls=*/false);
  ExpectReturnedAndNothingElsewhere("http://payments:8080/x");
}

// The same host and port, another scheme: payments itself must not be
// dialled again in plain text.
TEST_P(RedirectMatrix, ToPlainHttpOnTheSamePortIsReturned) {
  Redirect("http://payments:8443/x", /*host=*/"");
  ExpectReturnedAndNothingElsewhere("http://payments:8443/x");
}

// Issue 11 #4: credentials in a redirect are the server's choosing; the
// rule for caller URLs (no user info) holds for redirect targets too.
TEST_P(RedirectMatrix, ToTheSameOriginWithUserInfoIsReturned) {
  Redirect("https://user:secret@payments:8443/x");
  ExpectReturnedAndNothingElsewhere("https://user:secret@payments:8443/x");
  for (const ServerRequest& r : server->requests()) EXPECT_EQ(r.header("authorization"), kToken);
}

TEST_P(RedirectMatrix, ToAFileUrlIsReturned) {
  Redirect("file:///etc/passwd");
  ExpectReturnedAndNothingElsewhere("file:///etc/passwd");
}

TEST_P(RedirectMatrix, ToAnFtpUrlIsReturned) {
  Redirect("ftp://payments:8443/x");
  ExpectReturnedAndNothingElsewhere("ftp://payments:8443/x");
}

// Issue 11 #7: origins compare as RFC 3986 says, host case-insensitive. The
// same origin in capitals is followed, the credentials with it.
TEST_P(RedirectMatrix, ToTheSameOriginInCapitalsIsFollowed) {
  Redirect("https://PAYMENTS:8443/there");
  Result<Response> result = ExpectEnds({.status = 200, .attempts = 2, .server_saw = 2});
  if (result) {
    EXPECT_EQ(result->body, "at /there");
  }
  auto requests = server->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].header("authorization"), kToken);
  EXPECT_EQ(other->connections_opened(), 0);
}

// Within the origin, redirects are followed up to 10; the 11th 3xx ends the
// call with kTooManyRedirects rather than pass a 302 off as the answer. A
// 3xx is the dependency answering: nothing counts against it.
TEST_P(RedirectMatrix, ALoopEndsAfterTenRedirects) {
  Serve([](const ServerRequest&) { return Reply::Status(302).Header("Location", "/loop"); });
  StartClient();
  Begin(Request::Get("/loop"));
  ExpectEnds({.error = ErrorKind::kTooManyRedirects, .attempts = 11, .server_saw = 11});
}

OUTBOUND_MATRIX_BOTH_PROTOCOLS(RedirectMatrix);

}  // namespace
}  // namespace outbound::http::matrix
