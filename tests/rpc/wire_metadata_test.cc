// SPDX-License-Identifier: Apache-2.0
// gRPC metadata: binary values in base64, and what a caller sees of an
// answer's fields.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "../../src/rpc/wire/metadata.h"

namespace outbound::rpc::internal {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;
using namespace std::string_literals;

// RFC 4648 §10's test vectors, unpadded and padded.
struct Vector {
  const char* bytes;
  const char* unpadded;
  const char* padded;
};
constexpr Vector kRfc4648[] = {
    {"", "", ""},
    {"f", "Zg", "Zg=="},
    {"fo", "Zm8", "Zm8="},
    {"foo", "Zm9v", "Zm9v"},
    {"foob", "Zm9vYg", "Zm9vYg=="},
    {"fooba", "Zm9vYmE", "Zm9vYmE="},
    {"foobar", "Zm9vYmFy", "Zm9vYmFy"},
};

TEST(BinaryValueTest, EncodesAsBase64WithoutPadding) {
  for (const Vector& v : kRfc4648) EXPECT_EQ(EncodeBinaryValue(v.bytes), v.unpadded) << v.bytes;
  EXPECT_EQ(EncodeBinaryValue("\xfb\xff"), "+/8");
}

TEST(BinaryValueTest, DecodesPaddedAndUnpadded) {
  for (const Vector& v : kRfc4648) {
    EXPECT_EQ(DecodeBinaryValue(v.unpadded), v.bytes) << v.unpadded;
    EXPECT_EQ(DecodeBinaryValue(v.padded), v.bytes) << v.padded;
  }
  EXPECT_EQ(DecodeBinaryValue("+/8"), "\xfb\xff");
}

TEST(BinaryValueTest, EveryByteRoundTripsInEveryPosition) {
  std::string all;
  for (int byte = 0; byte < 256; ++byte) all += static_cast<char>(byte);
  for (std::size_t shift = 0; shift < 3; ++shift) {
    std::string bytes = std::string(shift, 'x') + all;
    std::string encoded = EncodeBinaryValue(bytes);
    EXPECT_EQ(encoded.find('='), std::string::npos);
    EXPECT_EQ(DecodeBinaryValue(encoded), bytes);
  }
}

TEST(BinaryValueTest, WhatIsNotBase64IsNothing) {
  for (const char* bad :
       {"Z", "Zm9vY", "Zg=", "Zg===", "Z===", "====", "=", "Zm=v", "Zm9v!", " Zm9v", "Zm9v\n",
        "Zm 9v", "-_8", "Zm9v=", "Zm9v====", "Zg==Zg==", "\xc3\xa9"}) {
    EXPECT_FALSE(DecodeBinaryValue(bad).has_value()) << '"' << bad << '"';
  }
}

TEST(BinaryValueTest, NonZeroLeftoverBitsAreIgnored) {
  EXPECT_EQ(DecodeBinaryValue("Zh"), "f");
  EXPECT_EQ(DecodeBinaryValue("Zh=="), "f");
}

TEST(MetadataKeyTest, BinaryKeysEndInDashBin) {
  EXPECT_TRUE(IsBinaryKey("trace-bin"));
  EXPECT_TRUE(IsBinaryKey("-bin"));
  EXPECT_TRUE(IsBinaryKey("Trace-BIN"));
  EXPECT_FALSE(IsBinaryKey("bin"));
  EXPECT_FALSE(IsBinaryKey("trace-binary"));
  EXPECT_FALSE(IsBinaryKey("trace_bin"));
}

TEST(MetadataOfTest, TheCallerSeesItsOwnFieldsAndTheDetailsButNotWhatTheWireReads) {
  Trailers metadata = MetadataOf({{":status", "200"},
                                  {"content-type", "application/grpc"},
                                  {"grpc-status", "8"},
                                  {"grpc-message", "slow down"},
                                  {"grpc-encoding", "gzip"},
                                  {"grpc-accept-encoding", "gzip"},
                                  {"grpc-retry-pushback-ms", "250"},
                                  {"grpc-status-details-bin", "CAg"},
                                  {"x-shard", "7"}});
  EXPECT_THAT(metadata,
              ElementsAre(Pair("grpc-retry-pushback-ms", "250"),
                          Pair("grpc-status-details-bin", "\x08\x08"), Pair("x-shard", "7")));
}

TEST(MetadataOfTest, NamesAreLowerCased) {
  EXPECT_THAT(MetadataOf({{"X-Shard", "7"}, {"Grpc-Status", "0"}}),
              ElementsAre(Pair("x-shard", "7")));
}

TEST(MetadataOfTest, BinaryValuesAreDecodedAndJoinedOnesSplit) {
  EXPECT_THAT(MetadataOf({{"trace-bin", "Zm9v"}, {"ids-bin", "Zg==, Zm8"}}),
              ElementsAre(Pair("ids-bin", "f"), Pair("ids-bin", "fo"), Pair("trace-bin", "foo")));
}

TEST(MetadataOfTest, ABinaryValueThatIsNotBase64IsLeftOut) {
  EXPECT_THAT(MetadataOf({{"trace-bin", "not base64!"}, {"ids-bin", "Zg,%%"}}),
              ElementsAre(Pair("ids-bin", "f")));
}

TEST(MetadataOfTest, RepeatedFieldsAreAllKeptInOrder) {
  EXPECT_THAT(MetadataOf({{"x-a", "1"}, {"x-a", "2"}}),
              ElementsAre(Pair("x-a", "1"), Pair("x-a", "2")));
}

TEST(RequestMetadataTest, NamesGoInLowerCaseAndBinaryValuesInBase64AfterTheFieldsThere) {
  http::Headers fields = {{"te", "trailers"}};
  Status status = AppendRequestMetadata({{"Authorization", "Bearer abc"},
                                         {"x-id-bin", "\x00\x01\xfe\xff"s},
                                         {"x-a", "1"},
                                         {"x-a", "2"}},
                                        fields);
  ASSERT_TRUE(status.ok()) << status.message;
  EXPECT_THAT(fields, ElementsAre(Pair("te", "trailers"), Pair("authorization", "Bearer abc"),
                                  Pair("x-a", "1"), Pair("x-a", "2"), Pair("x-id-bin", "AAH+/w")));
}

TEST(RequestMetadataTest, EveryCharacterGrpcAllowsInANameIsTaken) {
  http::Headers fields;
  EXPECT_TRUE(AppendRequestMetadata({{"a-z_0.9", "v"}, {"x-empty", ""}}, fields).ok());
  EXPECT_EQ(fields.size(), 2u);
}

TEST(RequestMetadataTest, ABadEntryIsInternalNamesItselfAndNothingIsAppended) {
  struct Case {
    const char* name;
    std::string value;
    const char* said;
  };
  const Case cases[] = {
      {"", "v", "is empty"},
      {"x key", "v", "a character other than"},
      {":authority", "v", "a character other than"},
      {"x-\xc3\xa9", "v", "a character other than"},
      {"grpc-timeout", "1S", "reserved by gRPC"},
      {"GRPC-Status", "0", "reserved by gRPC"},
      {"content-type", "text/plain", "written by the client itself"},
      {"TE", "trailers", "written by the client itself"},
      {"x-note", "line\r\nx-injected: 1", "printable ASCII"},
      {"x-note", "caf\xc3\xa9", "printable ASCII"},
      {"x-note", "nul\0"s, "printable ASCII"},
  };
  for (const Case& c : cases) {
    http::Headers fields = {{"te", "trailers"}};
    Status status = AppendRequestMetadata({{"x-fine", "1"}, {c.name, c.value}}, fields);
    EXPECT_EQ(status.code, Code::kInternal) << c.name;
    EXPECT_THAT(status.message, ::testing::HasSubstr(c.said)) << c.name;
    EXPECT_THAT(status.message, ::testing::HasSubstr('"' + std::string(c.name) + '"')) << c.name;
    EXPECT_THAT(fields, ElementsAre(Pair("te", "trailers"))) << c.name;
  }
}

}  // namespace
}  // namespace outbound::rpc::internal
