// SPDX-License-Identifier: Apache-2.0
// HTTP/2's rules for a response's fields (RFC 9113 §8.2), as the session
// checks them in place of nghttp2: every byte, at every place in a value
// (the check reads eight bytes at a time).
#include "../../src/http/transport/h2_fields.h"

#include <gtest/gtest.h>

#include <string>

namespace outbound::http::internal::transport {
namespace {

TEST(H2FieldsTest, ANameIsATokenInLowerCase) {
  EXPECT_TRUE(ValidFieldName("content-type"));
  EXPECT_TRUE(ValidFieldName("x-b3_id.v2!#$%&'*+^`|~0"));
  for (std::string bad : {"", "Content-Type", "x-Z", "a b", "a:b", ":status", "a\"b", "a(b", "a,b",
                          "a/b", "a;b", "a=b", "a@b", "a{b",
                          "a\x7f"
                          "b",
                          "a\xc3\xa9"}) {
    EXPECT_FALSE(ValidFieldName(bad)) << bad;
  }
  EXPECT_FALSE(ValidFieldName(std::string("a\0b", 3)));
}

TEST(H2FieldsTest, AValueHasNoControlCharacterButTabAndNoWhitespaceAtItsEnds) {
  EXPECT_TRUE(ValidFieldValue(""));
  EXPECT_TRUE(ValidFieldValue("text/html; charset=utf-8"));
  EXPECT_TRUE(ValidFieldValue("a\tb c"));
  EXPECT_TRUE(ValidFieldValue("caf\xc3\xa9 \x80\xff"));  // obs-text
  for (std::string bad : {" a", "a ", "\ta", "a\t"}) EXPECT_FALSE(ValidFieldValue(bad)) << bad;
  // Each byte, at each place inside values of 3 to 24 bytes: in the words
  // the check reads, in the last one that overlaps them, and in values too
  // short for a word.
  for (int byte = 0; byte < 256; ++byte) {
    bool allowed = byte == '\t' || (byte >= 0x20 && byte != 0x7f);
    for (std::size_t size = 3; size <= 24; ++size) {
      for (std::size_t at = 1; at + 1 < size; ++at) {
        std::string value(size, 'v');
        value[at] = static_cast<char>(byte);
        EXPECT_EQ(ValidFieldValue(value), allowed)
            << "byte " << byte << " at " << at << " of " << size;
      }
    }
  }
}

TEST(H2FieldsTest, ConnectionSpecificFieldsAreForbiddenAndTeSaysOnlyTrailers) {
  for (const char* name :
       {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"}) {
    EXPECT_TRUE(ForbiddenField(name, "x")) << name;
  }
  EXPECT_TRUE(ForbiddenField("te", "gzip"));
  EXPECT_FALSE(ForbiddenField("te", "trailers"));
  EXPECT_FALSE(ForbiddenField("te", "Trailers"));
  EXPECT_FALSE(ForbiddenField("content-length", "5"));
  EXPECT_FALSE(ForbiddenField("connections", "x"));
}

}  // namespace
}  // namespace outbound::http::internal::transport
