// SPDX-License-Identifier: Apache-2.0
// H2Memory, the heap an HTTP/2 session allocates from: a block freed is
// handed out again for the next of its size, and nghttp2's malloc, calloc
// and realloc keep their C contracts (calloc zeroes a reused block, realloc
// keeps the contents, a size that overflows is refused). Every HTTP/2 test
// runs a session on it; these pin what nghttp2 relies on.
#include "../../src/http/transport/h2_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>

namespace outbound::http::internal::transport {
namespace {

class H2MemoryTest : public ::testing::Test {
 protected:
  void* Malloc(std::size_t size) { return mem_->malloc(size, mem_->mem_user_data); }
  void Free(void* block) { mem_->free(block, mem_->mem_user_data); }
  void* Calloc(std::size_t count, std::size_t size) {
    return mem_->calloc(count, size, mem_->mem_user_data);
  }
  void* Realloc(void* block, std::size_t size) {
    return mem_->realloc(block, size, mem_->mem_user_data);
  }

  H2Memory memory_;
  nghttp2_mem* mem_ = memory_.mem();
};

TEST_F(H2MemoryTest, AFreedBlockIsHandedOutAgainForTheNextOfItsSize) {
  void* first = Malloc(100);
  ASSERT_NE(first, nullptr);
  Free(first);
  EXPECT_EQ(Malloc(90), first);  // 90 and 100 bytes share a size
  Free(first);
}

TEST_F(H2MemoryTest, BlocksAreAlignedForAnyType) {
  for (std::size_t size : {1, 64, 65, 4096, 10000}) {
    void* block = Malloc(size);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(block) % alignof(std::max_align_t), 0u) << size;
    Free(block);
  }
}

TEST_F(H2MemoryTest, CallocZeroesABlockThatWasUsedBefore) {
  auto* used = static_cast<unsigned char*>(Malloc(200));
  std::memset(used, 0xab, 200);
  Free(used);
  auto* zeroed = static_cast<unsigned char*>(Calloc(50, 4));
  ASSERT_EQ(zeroed, used);
  for (int i = 0; i < 200; ++i) ASSERT_EQ(zeroed[i], 0) << i;
  Free(zeroed);
}

TEST_F(H2MemoryTest, CallocRefusesACountTimesSizeThatOverflows) {
  EXPECT_EQ(Calloc(std::numeric_limits<std::size_t>::max() / 2, 3), nullptr);
}

TEST_F(H2MemoryTest, ReallocKeepsTheContentsAsABlockGrowsPastEverySize) {
  auto* block = static_cast<unsigned char*>(Malloc(10));
  for (int i = 0; i < 10; ++i) block[i] = static_cast<unsigned char>(i);
  // Within its size the block stays where it is.
  EXPECT_EQ(Realloc(block, 60), block);
  // Then through every kept size to one the system's heap holds, and on.
  for (std::size_t size : {100, 1000, 4096, 5000, 100000}) {
    block = static_cast<unsigned char*>(Realloc(block, size));
    ASSERT_NE(block, nullptr) << size;
    for (int i = 0; i < 10; ++i) ASSERT_EQ(block[i], i) << size;
  }
  Free(block);
}

TEST_F(H2MemoryTest, ReallocOfNullIsMallocAndFreeOfNullDoesNothing) {
  void* block = Realloc(nullptr, 300);
  EXPECT_NE(block, nullptr);
  Free(block);
  Free(nullptr);
}

}  // namespace
}  // namespace outbound::http::internal::transport
