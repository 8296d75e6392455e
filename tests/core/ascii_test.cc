// SPDX-License-Identifier: Apache-2.0
// ASCII's case rule, byte for byte: letters A-Z and a-z change case, and no
// other byte of the 256 does (0xC0-0xDE, upper case in Latin-1, included).
#include "outbound/internal/ascii.h"

#include <gtest/gtest.h>

#include <string>

namespace outbound::internal {
namespace {

TEST(AsciiTest, OnlyAsciiLettersChangeCase) {
  for (int i = 0; i < 256; ++i) {
    char c = static_cast<char>(i);
    char lower = i >= 'A' && i <= 'Z' ? static_cast<char>(i + 32) : c;
    char upper = i >= 'a' && i <= 'z' ? static_cast<char>(i - 32) : c;
    EXPECT_EQ(AsciiLower(c), lower) << i;
    EXPECT_EQ(AsciiUpper(c), upper) << i;
    EXPECT_EQ(IsAsciiAlpha(c), lower != upper) << i;
    EXPECT_EQ(IsAsciiDigit(c), i >= '0' && i <= '9') << i;
  }
}

TEST(AsciiTest, TextComparesWithoutCase) {
  static_assert(EqualsIgnoringAsciiCase("Content-Type", "content-TYPE"));
  EXPECT_TRUE(EqualsIgnoringAsciiCase("", ""));
  EXPECT_FALSE(EqualsIgnoringAsciiCase("te", "tea"));
  EXPECT_FALSE(EqualsIgnoringAsciiCase("x-id",
                                       "x-\xfd"
                                       "d"));             // dotless i is not i
  EXPECT_FALSE(EqualsIgnoringAsciiCase("\xc9", "\xe9"));  // nor is Latin-1's É é
  EXPECT_TRUE(StartsWithIgnoringAsciiCase("HTTPS://ledger", "https:"));
  EXPECT_FALSE(StartsWithIgnoringAsciiCase("http", "https"));
  EXPECT_EQ(AsciiLowered("X-Request-ID \xc9"), "x-request-id \xc9");
  EXPECT_EQ(AsciiUppered("payments_url"), "PAYMENTS_URL");
}

}  // namespace
}  // namespace outbound::internal
