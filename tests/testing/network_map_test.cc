// SPDX-License-Identifier: Apache-2.0
#include "outbound/testing/network_map.h"

#include <gtest/gtest.h>

namespace outbound::testing {
namespace {

TEST(NetworkMapTest, RoutesKnownNamesAndRefusesTheRest) {
  NetworkMap network;
  network.Add("payments", 8443, "127.0.0.1", 41234);
  Route route = network.Resolve("payments", 8443);
  EXPECT_EQ(route.kind, Route::Kind::kEndpoint);
  EXPECT_EQ(route.address, "127.0.0.1");
  EXPECT_EQ(route.port, 41234);
  EXPECT_EQ(network.Resolve("payments", 443).kind, Route::Kind::kUnreachable);
  EXPECT_EQ(network.Resolve("example.com", 443).kind, Route::Kind::kUnreachable);
  network.Remove("payments", 8443);
  EXPECT_EQ(network.Resolve("payments", 8443).kind, Route::Kind::kUnreachable);
}

TEST(OsNetworkTest, LeavesResolutionToTheSystem) {
  EXPECT_EQ(OsNetwork().Resolve("example.com", 443).kind, Route::Kind::kSystem);
}

}  // namespace
}  // namespace outbound::testing
