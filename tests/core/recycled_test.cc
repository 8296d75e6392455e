// SPDX-License-Identifier: Apache-2.0
// MakeRecycled: a freed block is made again on the thread that freed it,
// never on another; no more than kKeptBlocks of a size are kept; and what
// it makes is an ordinary shared_ptr (weak pointers, shared_from_this,
// destructors). Under a sanitizer nothing is kept, and only the last holds.
#include "../../src/core/recycled.h"

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace outbound::internal {
namespace {

// A size of its own: no other test's blocks share its shelf.
using Blocks = RecycledBlocks<4072>;

// A sanitizer build keeps no blocks: what tests the keeping is skipped.
constexpr bool kKeeps = kKeptBlocks > 0;

// Takes every block this thread keeps, so a test starts from none.
std::vector<void*> Drain() {
  std::vector<void*> kept;
  while (Blocks::KeptHere() > 0) kept.push_back(Blocks::Take());
  return kept;
}

TEST(RecycledTest, ABlockGivenBackIsTakenAgainOnItsThread) {
  if (!kKeeps) GTEST_SKIP() << "a sanitizer build keeps no blocks";
  std::vector<void*> drained = Drain();
  void* block = Blocks::Take();
  Blocks::Give(block);
  EXPECT_EQ(Blocks::KeptHere(), 1u);
  EXPECT_EQ(Blocks::Take(), block);
  EXPECT_EQ(Blocks::KeptHere(), 0u);
  // Given back on another thread: kept there, and freed as it exits.
  std::size_t kept_there = 0;
  std::thread([&] {
    Blocks::Give(block);
    kept_there = Blocks::KeptHere();
  }).join();
  EXPECT_EQ(kept_there, 1u);
  EXPECT_EQ(Blocks::KeptHere(), 0u);
  for (void* each : drained) Blocks::Give(each);
}

TEST(RecycledTest, KeepsNoMoreThanItsBound) {
  if (!kKeeps) GTEST_SKIP() << "a sanitizer build keeps no blocks";
  std::vector<void*> drained = Drain();
  std::vector<void*> taken;
  for (std::size_t i = 0; i < kKeptBlocks + 10; ++i) taken.push_back(Blocks::Take());
  for (void* block : taken) Blocks::Give(block);
  EXPECT_EQ(Blocks::KeptHere(), kKeptBlocks);
  // Those kept are what comes back, the last kept first.
  for (std::size_t i = 0; i < kKeptBlocks; ++i) {
    EXPECT_EQ(Blocks::Take(), taken[kKeptBlocks - 1 - i]);
  }
  EXPECT_EQ(Blocks::KeptHere(), 0u);
  for (std::size_t i = 0; i < kKeptBlocks; ++i) Blocks::Give(taken[i]);
  for (void* each : drained) Blocks::Give(each);
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
  if (!kKeeps) GTEST_SKIP() << "a sanitizer build keeps no blocks";
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
  EXPECT_EQ(meanwhile->value, 8);
  if (!kKeeps) return;
  meanwhile.reset();
  weak.reset();  // freed now, and so the first made again
  EXPECT_EQ(MakeRecycled<Payload>(9).get(), block);
}

struct alignas(64) Aligned {
  std::array<std::byte, 64> bytes{};
};

TEST(RecycledTest, OverAlignedObjectsKeepTheirAlignment) {
  std::vector<std::shared_ptr<Aligned>> made;  // all alive: each its own block
  for (int i = 0; i < 16; ++i) {
    made.push_back(MakeRecycled<Aligned>());
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(made.back().get()) % 64, 0u) << i;
  }
}

}  // namespace
}  // namespace outbound::internal
