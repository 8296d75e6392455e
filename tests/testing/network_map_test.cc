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
  EXPECT_EQ(route.endpoints, (std::vector<Endpoint>{{"127.0.0.1", 41234}}));
  EXPECT_EQ(network.Resolve("payments", 443).kind, Route::Kind::kUnreachable);
  EXPECT_EQ(network.Resolve("example.com", 443).kind, Route::Kind::kUnreachable);
  network.Remove("payments", 8443);
  EXPECT_EQ(network.Resolve("payments", 8443).kind, Route::Kind::kUnreachable);
}

TEST(NetworkMapTest, ANameLeadsToEveryReplicaSetAndChangesWhileClientsRun) {
  NetworkMap network;
  network.Set("payments", 8443, {{"127.0.0.1", 1001}, {"127.0.0.2", 1002}});
  EXPECT_EQ(network.Resolve("PAYMENTS", 8443).endpoints,
            (std::vector<Endpoint>{{"127.0.0.1", 1001}, {"127.0.0.2", 1002}}));
  network.Set("payments", 8443, {{"127.0.0.3", 1003}});
  EXPECT_EQ(network.Resolve("payments", 8443).endpoints,
            (std::vector<Endpoint>{{"127.0.0.3", 1003}}));
  network.Set("payments", 8443, {});
  EXPECT_EQ(network.Resolve("payments", 8443).kind, Route::Kind::kUnreachable);
}

TEST(OsNetworkTest, LeavesResolutionToTheSystem) {
  EXPECT_EQ(OsNetwork().Resolve("example.com", 443).kind, Route::Kind::kSystem);
}

}  // namespace
}  // namespace outbound::testing
