// SPDX-License-Identifier: Apache-2.0
//
// docs/testing.md's blocks that are not examples/checkout_test.cc's,
// compiled (scripts/check-doc-examples).
#include <gtest/gtest.h>

#include "outbound/testing/fake_server.h"

namespace outbound::docs {

using testing::FakeServer;

void WaitForExample(const std::unique_ptr<FakeServer>& server) {
  // [example wait-for]
  EXPECT_TRUE(server->WaitFor([](const FakeServer& s) { return s.connections_open() == 0; }));
  // [end wait-for]
}

}  // namespace outbound::docs
