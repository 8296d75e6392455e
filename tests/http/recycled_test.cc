// SPDX-License-Identifier: Apache-2.0
// MakeRecycled: a freed block is made again on the thread that freed it,
// never on another; no more than kKeptBlocks of a size are kept; and what
// it makes is an ordinary shared_ptr (weak pointers, shared_from_this,
// destructors).
#include "../../src/http/recycled.h"

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace outbound::http::internal {
namespace {

// A size of its own: no other test's blocks share its shelf.
using Blocks = RecycledBlocks<4072>;

TEST(RecycledTest, ABlockGivenBackIsTakenAgainOnItsThread) {
  ASSERT_EQ(Blocks::KeptHere(), 0u);
  void* block = Blocks::Take();
  Blocks::Give(block);
  EXPECT_EQ(Blocks::KeptHere(), 1u);
  EXPECT_EQ(Blocks::Take(), block);
  EXPECT_EQ(Blocks::KeptHere(), 0u);
  Blocks::Give(block);
  // Given back on another thread: kept there, and freed as it exits.
  void* other = Blocks::Take();
  std::size_t kept_there = 0;
  std::thread([&] {
    Blocks::Give(other);
    kept_there = Blocks::KeptHere();
  }).join();
  EXPECT_EQ(kept_there, 1u);
  EXPECT_EQ(Blocks::KeptHere(), 0u);
}

TEST(RecycledTest, KeepsNoMoreThanItsBound) {
  std::vector<void*> taken;
  for (std::size_t i = 0; i < kKeptBlocks + 10; ++i) taken.push_back(Blocks::Take());
  for (void* block : taken) Blocks::Give(block);
  EXPECT_EQ(Blocks::KeptHere(), kKeptBlocks);
  // Those kept are what comes back, the last given first.
  for (std::size_t i = 0; i < kKeptBlocks; ++i)
    EXPECT_EQ(Blocks::Take(), taken[kKeptBlocks - 1 - i]);
  EXPECT_EQ(Blocks::KeptHere(), 0u);
  for (std::size_t i = 0; i < kKeptBlocks; ++i) Blocks::Give(taken[i]);
}

struct Payload : std::enable_shared_from_this<Payload> {
  explicit Payload(int v, int* destroyed = nullptr) : value(v), destroyed_count(destroyed) {}
  Payload(const Payload&) = delete;
  Payload& operator=(const Payload&) = delete;
  ~Payload() {
    if (destroyed_count != nullptr) ++*destroyed_count;
  }
  int value;
  int* destroyed_count;
};

TEST(RecycledTest, MakeRecycledMakesAgainInTheBlockItFreed) {
  auto first = MakeRecycled<Payload>(1);
  const void* block = first.get();
  first.reset();
  auto second = MakeRecycled<Payload>(2);
  EXPECT_EQ(second.get(), block);
  EXPECT_EQ(second->value, 2);
}

TEST(RecycledTest, MakeRecycledMakesAnOrdinarySharedPointer) {
  int destroyed = 0;
  std::weak_ptr<Payload> weak;
  const void* block = nullptr;
  {
    auto made = MakeRecycled<Payload>(7, &destroyed);
    block = made.get();
    weak = made;
    std::shared_ptr<Payload> self = made->shared_from_this();
    EXPECT_EQ(self.use_count(), 2);
  }
  EXPECT_EQ(destroyed, 1);
  EXPECT_TRUE(weak.expired());
  // The block is freed with the last weak pointer, not before.
  auto meanwhile = MakeRecycled<Payload>(8);
  EXPECT_NE(meanwhile.get(), block);
  meanwhile.reset();
  weak.reset();  // freed now, and so the first made again
  EXPECT_EQ(MakeRecycled<Payload>(9).get(), block);
}

struct alignas(64) Aligned {
  std::array<std::byte, 64> bytes{};
};

TEST(RecycledTest, OverAlignedObjectsKeepTheirAlignment) {
  for (int i = 0; i < 4; ++i) {
    auto made = MakeRecycled<Aligned>();
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(made.get()) % 64, 0u);
  }
}

}  // namespace
}  // namespace outbound::http::internal
