// SPDX-License-Identifier: Apache-2.0
// Protocol text compares as ASCII whatever locale the program set. Under
// tr_TR.ISO-8859-9 the C library lowers 'I' to 0xFD (dotless i): a header
// name compared through tolower would miss X-Request-ID, let a hand-set
// TRANSFER-ENCODING through the check that refuses it, and take
// APPLICATION/JSON for another type.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cctype>
#include <clocale>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "client_test_support.h"
#include "outbound/http/json.h"

namespace outbound::http {
namespace {

using testing::Reply;
using testing::ServerRequest;

class TurkishLocaleTest : public FakeTransportTestBase, public ::testing::Test {
 protected:
  void SetUp() override {
    // Compiled here, where LOCPATH points: Debian's `locales` holds its
    // source (scripts/install-deps installs it).
    std::string pattern = (std::filesystem::temp_directory_path() / "outbound-locale-XXXXXX");
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    std::string compile = "localedef -i tr_TR -f ISO-8859-9 " + dir_ + "/tr_TR.ISO-8859-9";
    ASSERT_EQ(std::system(compile.c_str()), 0)
        << compile << ": the locale's source comes with Debian's `locales`";
    setenv("LOCPATH", dir_.c_str(), 1);
    ASSERT_NE(std::setlocale(LC_CTYPE, "tr_TR.ISO-8859-9"), nullptr);
    // The premise: here the C library's case rule is not ASCII's.
    ASSERT_EQ(std::tolower('I'), 0xFD);
  }

  void TearDown() override {
    std::setlocale(LC_CTYPE, "C");
    unsetenv("LOCPATH");
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::string dir_;
};

TEST_F(TurkishLocaleTest, HeaderNamesStillCompareAsAscii) {
  EXPECT_TRUE(SameHeaderName("X-Request-ID", "x-request-id"));
  EXPECT_FALSE(SameHeaderName("X-Request-ID",
                              "x-request-\xfd"
                              "d"));
  ResponseHeaders headers{{"x-request-id", "7"}};
  EXPECT_EQ(headers.Find("X-Request-ID"), "7");
  EXPECT_EQ(FindHeader(Headers{{"X-REQUEST-ID", "8"}}, "x-request-id"), "8");
}

TEST_F(TurkishLocaleTest, AHandSetTransferEncodingIsStillRefused) {
  Serve([](const ServerRequest&) { return Reply::Ok(); });
  auto client = MakeClient();
  for (const char* name : {"TRANSFER-ENCODING", "CONNECTION", "KEEP-ALIVE", "HTTP2-SETTINGS"}) {
    auto response = client->Send(Request::Get("/").Header(name, "chunked"));
    ASSERT_FALSE(response) << name << " was sent";
    EXPECT_EQ(response.error().kind(), ErrorKind::kInvalidRequest) << name;
  }
  EXPECT_EQ(server->request_count(), 0u);
}

TEST_F(TurkishLocaleTest, AJsonContentTypeIsStillJsonInUpperCase) {
  EXPECT_TRUE(IsJsonContentType("APPLICATION/JSON"));
  EXPECT_TRUE(IsJsonContentType("APPLICATION/PROBLEM+JSON; CHARSET=UTF-8"));
}

}  // namespace
}  // namespace outbound::http
