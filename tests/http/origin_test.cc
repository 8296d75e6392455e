// SPDX-License-Identifier: Apache-2.0
// URL and origin parsing as RFC 3986 reads it, and the client's own rules
// on top (see origin.h): what names the same origin, what is refused, and
// how a redirect's Location resolves.
#include "../../src/http/origin.h"

#include <gtest/gtest.h>

#include <string>

namespace outbound::http::internal {
namespace {

Origin OriginOf(std::string_view url) {
  auto parsed = ParseUrl(url);
  EXPECT_TRUE(parsed) << url << ": " << parsed.error().message();
  return parsed ? parsed->origin : Origin{};
}

std::string FullOf(std::string_view url) {
  auto parsed = ParseUrl(url);
  EXPECT_TRUE(parsed) << url << ": " << parsed.error().message();
  return parsed ? parsed->full : "";
}

TEST(ParseUrlTest, SchemeAndHostAreCaseInsensitiveAndTheDefaultPortIsFilledIn) {
  Origin payments{"https", "payments", 8443};
  EXPECT_EQ(OriginOf("https://payments:8443"), payments);
  EXPECT_EQ(OriginOf("https://PAYMENTS:8443/x"), payments);
  EXPECT_EQ(OriginOf("HtTpS://PayMents:8443/x"), payments);
  EXPECT_EQ(OriginOf("https://payments:08443/x"), payments);
  EXPECT_EQ(OriginOf("https://payments"), (Origin{"https", "payments", 443}));
  EXPECT_EQ(OriginOf("https://payments:/x"), (Origin{"https", "payments", 443}));
  EXPECT_EQ(OriginOf("https://payments:443"), OriginOf("https://payments/"));
  EXPECT_EQ(OriginOf("http://payments"), (Origin{"http", "payments", 80}));
  EXPECT_NE(OriginOf("http://payments:8443"), payments);
  EXPECT_NE(OriginOf("https://payments:8444"), payments);
}

// What a request names the origin by: the port only off the scheme's
// own, an IPv6 address in brackets.
TEST(OriginTest, TheAuthorityWritesThePortOnlyWhenItIsNotTheSchemes) {
  auto authority = [](std::string_view url) { return ParseUrl(url)->origin.Authority(); };
  EXPECT_EQ(authority("https://payments:8443/x"), "payments:8443");
  EXPECT_EQ(authority("https://payments/x"), "payments");
  EXPECT_EQ(authority("https://payments:80/"), "payments:80");
  EXPECT_EQ(authority("http://payments:80/"), "payments");
  EXPECT_EQ(authority("http://payments:443/"), "payments:443");
  EXPECT_EQ(authority("http://[::1]:8080/"), "[::1]:8080");
  EXPECT_EQ(authority("https://[::1]/"), "[::1]");
}

TEST(ParseUrlTest, TheNormalFormHasTheOriginThenThePathAndQueryAsWritten) {
  EXPECT_EQ(FullOf("HTTPS://PAYMENTS:8443/Charges/1?Q=A%2Fb#frag"),
            "https://payments:8443/Charges/1?Q=A%2Fb");
  EXPECT_EQ(FullOf("https://payments"), "https://payments:443/");
  EXPECT_EQ(FullOf("https://payments?x"), "https://payments:443/?x");
  EXPECT_EQ(FullOf("https://[::FFFF:127.0.0.1]:8443/"), "https://[::ffff:127.0.0.1]:8443/");
  EXPECT_EQ(FullOf("https://[0:0:0:0:0:0:0:1]/"), "https://[::1]:443/");
}

TEST(ParseUrlTest, ReportsUserInfoQueryAndFragmentAndNeverKeepsUserInfo) {
  auto parsed = ParseUrl("https://user:secret@payments:8443/x?y#z");
  ASSERT_TRUE(parsed);
  EXPECT_TRUE(parsed->has_user_info);
  EXPECT_TRUE(parsed->has_query);
  EXPECT_TRUE(parsed->has_fragment);
  EXPECT_EQ(parsed->origin, (Origin{"https", "payments", 8443}));
  EXPECT_EQ(parsed->full, "https://payments:8443/x?y");
  EXPECT_TRUE(ParseUrl("https://@payments/")->has_user_info);
  // The host follows the last '@', as WHATWG and curl read it.
  EXPECT_EQ(ParseUrl("https://a@b@ledger/")->origin.host, "ledger");
}

TEST(ParseUrlTest, ATrailingDotNamesAnotherHost) {
  EXPECT_EQ(OriginOf("https://payments.:8443").host, "payments.");
  EXPECT_NE(OriginOf("https://payments.:8443"), OriginOf("https://payments:8443"));
  EXPECT_EQ(OriginOf("https://PAYMENTS.Example.COM./"), OriginOf("https://payments.example.com./"));
}

TEST(ParseUrlTest, NonAsciiHostsAreRefusedAndTheirPunycodeIsAName) {
  auto idn = ParseUrl(
      "https://b\xc3\xbc"
      "cher.example/");
  ASSERT_FALSE(idn);
  EXPECT_EQ(idn.error().kind(), ErrorKind::kInvalidRequest);
  EXPECT_NE(idn.error().message().find("punycode"), std::string::npos);
  EXPECT_EQ(OriginOf("https://XN--BCHER-KVA.example/").host, "xn--bcher-kva.example");
}

TEST(ParseUrlTest, RefusesWhatIsNotAnHttpUrlWithAPlainHost) {
  for (std::string_view url : {
           "",
           "payments:8443",
           "/charges",
           "//payments/x",
           "ftp://payments/",
           "file:///etc/passwd",
           "https:/payments/",
           "https:payments",
           "https://",
           "https:///x",
           "https://:8443/",
           "https://payments:0/",
           "https://payments:65536/",
           "https://payments:99999999999999999999/",
           "https://payments:-1/",
           "https://payments:8443:1/",
           "https://payments:0x10/",
           "https://pay ments/",
           "https://payments/a b",
           "https://payments/a\tb",
           "https://payments/\x7f",
           "https://payments/a\\b",
           "https://payments\\@ledger/",
           "https://pay%6dents/",
           "https://pay$ments/",
           "https://.payments/",
           "https://pay..ments/",
           "https://./",
           "https://payments..:8443/",
           "https://127.1/",
           "https://0x7f.0.0.1/",
           "https://2130706433/",
           "https://127.0.0.01/",
           "https://127.0.0.256/",
           "https://1.2.3.4.5/",
           "https://127.0.0.1./",
           "https://example.123/",
           "https://[::1/",
           "https://[::1]x/",
           "https://[fe80::1%25eth0]/",
           "https://[v1.x]/",
           "https://[1::2::3]/",
           "https://[127.0.0.1]/",
           "https://payments/%",
           "https://payments/%4",
           "https://payments/%zz",
           "https://payments/?%g0",
           "https://payments/%2G",
           "https://payments/%%41",
           "https://payments/%25%",
           "https://payments/a%4",
           "https://payments/caf\xc3\xa9",
           "https://a123456789012345678901234567890123456789012345678901234567890123.example/",
       }) {
    auto parsed = ParseUrl(url);
    EXPECT_FALSE(parsed) << url;
    if (!parsed) {
      EXPECT_EQ(parsed.error().kind(), ErrorKind::kInvalidRequest) << url;
    }
  }
  EXPECT_TRUE(ParseUrl("https://127.0.0.1:8443/"));
  EXPECT_TRUE(ParseUrl("https://my_service.internal/"));
  EXPECT_TRUE(ParseUrl("https://payments/%41?%7e=%7E"));
  EXPECT_TRUE(ParseUrl("https://payments/%25%41?a=%25"));
  EXPECT_TRUE(ParseUrl("https://payments/{a}|^`<>\"?q=[1]"));
}

TEST(ParseUrlTest, ErrorsNeverQuoteTheUserInfo) {
  for (std::string_view url : {"https://user:hunter2@pay ments/", "https://user:hunter2@:bad/",
                               "https://user:hunter2/", "https://user:hunter2@/"}) {
    auto parsed = ParseUrl(url);
    ASSERT_FALSE(parsed) << url;
    EXPECT_EQ(parsed.error().message().find("hunter2"), std::string::npos)
        << parsed.error().message();
  }
}

TEST(ResolveTargetTest, JoinsPathsOntoTheOriginAndParsesAbsoluteUrls) {
  Origin payments{"https", "payments", 8443};
  std::string text = payments.ToString();
  EXPECT_EQ(ResolveTarget(payments, text, "/x?y=1")->full, "https://payments:8443/x?y=1");
  EXPECT_EQ(ResolveTarget(payments, text, "https://payments:8443/x")->full,
            "https://payments:8443/x");
  EXPECT_EQ(ResolveTarget(payments, text, "https://PAYMENTS:8443/x")->full,
            "https://payments:8443/x");
  EXPECT_EQ(ResolveTarget(payments, text, "/x#frag")->full, "https://payments:8443/x");
  // A network-path reference names a host, as RFC 3986 reads it.
  EXPECT_EQ(ResolveTarget(payments, text, "//ledger:8443/x")->origin,
            (Origin{"https", "ledger", 8443}));
  EXPECT_FALSE(ResolveTarget(payments, text, "charges/1"));
  EXPECT_FALSE(ResolveTarget(payments, text, "?x"));
  EXPECT_FALSE(ResolveTarget(payments, text, "/a\\b"));
  EXPECT_FALSE(ResolveTarget(payments, text, "/%"));
}

TEST(ResolveTargetTest, TheCheapPathAgreesWithTheFullParse) {
  Origin payments{"https", "payments", 8443};
  std::string text = payments.ToString();
  for (std::string_view target :
       {"/x", "/x?y", "/x/../y", "/%41", "/%25%41", "/a|b", "https://payments:8443/x", "/x?a?b"}) {
    auto cheap = JoinPlainPath(text, target);
    ASSERT_TRUE(cheap) << target;
    std::string_view path = target.substr(0, 1) == "/" ? target : target.substr(text.size());
    auto full = ParseUrl(text + std::string(path));
    ASSERT_TRUE(full) << target;
    EXPECT_EQ(*cheap, full->full);
  }
  for (std::string_view target : {"//x", "/a\\b", "/a b", "/%", "/%4g", "/%%41", "/x%2", "/x#f",
                                  "https://payments:8443@ledger/"}) {
    EXPECT_FALSE(JoinPlainPath(text, target)) << target;
  }
}

// RFC 3986 5.4: each reference against "http://a/b/c/d;p?q".
TEST(ResolveReferenceTest, ResolvesTheRfc3986Examples) {
  const std::string base = "http://a/b/c/d;p?q";
  const std::pair<std::string_view, std::string_view> examples[] = {
      {"g", "http://a:80/b/c/g"},
      {"./g", "http://a:80/b/c/g"},
      {"g/", "http://a:80/b/c/g/"},
      {"/g", "http://a:80/g"},
      {"//g", "http://g:80/"},
      {"?y", "http://a:80/b/c/d;p?y"},
      {"g?y", "http://a:80/b/c/g?y"},
      {"#s", "http://a:80/b/c/d;p?q"},
      {"g#s", "http://a:80/b/c/g"},
      {"g?y#s", "http://a:80/b/c/g?y"},
      {";x", "http://a:80/b/c/;x"},
      {"g;x", "http://a:80/b/c/g;x"},
      {"g;x?y#s", "http://a:80/b/c/g;x?y"},
      {"", "http://a:80/b/c/d;p?q"},
      {".", "http://a:80/b/c/"},
      {"./", "http://a:80/b/c/"},
      {"..", "http://a:80/b/"},
      {"../", "http://a:80/b/"},
      {"../g", "http://a:80/b/g"},
      {"../..", "http://a:80/"},
      {"../../", "http://a:80/"},
      {"../../g", "http://a:80/g"},
      {"../../../g", "http://a:80/g"},
      {"../../../../g", "http://a:80/g"},
      {"/./g", "http://a:80/g"},
      {"/../g", "http://a:80/g"},
      {"g.", "http://a:80/b/c/g."},
      {".g", "http://a:80/b/c/.g"},
      {"g..", "http://a:80/b/c/g.."},
      {"..g", "http://a:80/b/c/..g"},
      {"./../g", "http://a:80/b/g"},
      {"./g/.", "http://a:80/b/c/g/"},
      {"g/./h", "http://a:80/b/c/g/h"},
      {"g/../h", "http://a:80/b/c/h"},
      {"g;x=1/./y", "http://a:80/b/c/g;x=1/y"},
      {"g;x=1/../y", "http://a:80/b/c/y"},
      {"g?y/./x", "http://a:80/b/c/g?y/./x"},
      {"g?y/../x", "http://a:80/b/c/g?y/../x"},
      {"g#s/./x", "http://a:80/b/c/g"},
      {"g#s/../x", "http://a:80/b/c/g"},
      {"HTTP://A/g", "http://a:80/g"},
  };
  for (const auto& [reference, expected] : examples) {
    auto resolved = ResolveReference(base, reference);
    ASSERT_TRUE(resolved) << reference << ": " << resolved.error().message();
    EXPECT_EQ(resolved->full, expected) << reference;
  }
  // Those that are not http URLs, which a client never follows.
  for (std::string_view reference : {"g:h", "http:g", "mailto:x@y", "javascript:alert(1)"}) {
    EXPECT_FALSE(ResolveReference(base, reference)) << reference;
  }
}

TEST(ResolveReferenceTest, KeepsWhatMattersToTheRedirectRules) {
  const std::string base = "https://payments:8443/a/b";
  auto user = ResolveReference(base, "//user:secret@payments:8443/x");
  ASSERT_TRUE(user);
  EXPECT_TRUE(user->has_user_info);
  EXPECT_EQ(user->full, "https://payments:8443/x");
  EXPECT_EQ(ResolveReference(base, "HTTPS://PAYMENTS:8443/c")->origin,
            (Origin{"https", "payments", 8443}));
  EXPECT_EQ(ResolveReference(base, "http://payments:8443/c")->origin.scheme, "http");
  EXPECT_FALSE(ResolveReference(base, "/a b"));
  EXPECT_FALSE(ResolveReference(base, "/a\\b"));
  EXPECT_FALSE(ResolveReference(base, "\\\\ledger/x"));
  EXPECT_FALSE(ResolveReference(base, "/caf\xc3\xa9"));
}

}  // namespace
}  // namespace outbound::http::internal
