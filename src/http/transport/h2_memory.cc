// SPDX-License-Identifier: Apache-2.0
#include "h2_memory.h"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

namespace outbound::http::internal::transport {
namespace {

// Each block starts with its class, padded so what follows keeps malloc's
// alignment.
constexpr std::size_t kHeader = alignof(std::max_align_t);
constexpr unsigned char kUnkept = 0xff;  // a large block: malloc's own
constexpr std::size_t kSmallest = 64;

std::size_t ClassSize(std::size_t size_class) { return kSmallest << size_class; }

unsigned char& ClassOf(void* block) { return *(static_cast<unsigned char*>(block) - kHeader); }

}  // namespace

H2Memory::H2Memory() {
  mem_.mem_user_data = this;
  mem_.malloc = [](std::size_t size, void* self) {
    return static_cast<H2Memory*>(self)->Allocate(size);
  };
  mem_.free = [](void* block, void* self) { static_cast<H2Memory*>(self)->Free(block); };
  mem_.calloc = [](std::size_t count, std::size_t size, void* self) -> void* {
    if (size != 0 && count > std::numeric_limits<std::size_t>::max() / size) return nullptr;
    void* block = static_cast<H2Memory*>(self)->Allocate(count * size);
    if (block != nullptr) std::memset(block, 0, count * size);
    return block;
  };
  mem_.realloc = [](void* block, std::size_t size, void* self) {
    return static_cast<H2Memory*>(self)->Reallocate(block, size);
  };
}

H2Memory::~H2Memory() {
  for (FreeBlock* head : free_) {
    while (head != nullptr) {
      FreeBlock* next = head->next;
      std::free(reinterpret_cast<unsigned char*>(head) - kHeader);
      head = next;
    }
  }
}

void* H2Memory::Allocate(std::size_t size) {
  std::size_t size_class = 0;
  while (size_class < kClasses && ClassSize(size_class) < size) ++size_class;
  if (size_class < kClasses && free_[size_class] != nullptr) {
    FreeBlock* block = free_[size_class];
    free_[size_class] = block->next;
    kept_bytes_ -= ClassSize(size_class);
    return block;
  }
  std::size_t room = size_class < kClasses ? ClassSize(size_class) : size;
  if (room > std::numeric_limits<std::size_t>::max() - kHeader) return nullptr;
  auto* raw = static_cast<unsigned char*>(std::malloc(kHeader + room));
  if (raw == nullptr) return nullptr;
  raw[0] = size_class < kClasses ? static_cast<unsigned char>(size_class) : kUnkept;
  return raw + kHeader;
}

void H2Memory::Free(void* block) {
  if (block == nullptr) return;
  unsigned char size_class = ClassOf(block);
  if (size_class == kUnkept || kept_bytes_ + ClassSize(size_class) > kMaxKeptBytes) {
    std::free(static_cast<unsigned char*>(block) - kHeader);
    return;
  }
  auto* kept = static_cast<FreeBlock*>(block);
  kept->next = free_[size_class];
  free_[size_class] = kept;
  kept_bytes_ += ClassSize(size_class);
}

void* H2Memory::Reallocate(void* block, std::size_t size) {
  if (block == nullptr) return Allocate(size);
  unsigned char size_class = ClassOf(block);
  if (size_class != kUnkept && size <= ClassSize(size_class)) return block;
  if (size_class == kUnkept) {
    if (size > std::numeric_limits<std::size_t>::max() - kHeader) return nullptr;
    // Only the block's first byte before it says its class; malloc's own
    // realloc keeps that.
    auto* raw = static_cast<unsigned char*>(
        std::realloc(static_cast<unsigned char*>(block) - kHeader, kHeader + size));
    return raw == nullptr ? nullptr : raw + kHeader;
  }
  void* grown = Allocate(size);
  if (grown == nullptr) return nullptr;
  std::memcpy(grown, block, ClassSize(size_class));
  Free(block);
  return grown;
}

}  // namespace outbound::http::internal::transport
