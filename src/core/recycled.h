// SPDX-License-Identifier: Apache-2.0
// MakeRecycled: std::make_shared whose block, once freed, is kept by the
// thread that freed it for the next object of that size made on that
// thread. Internal.
//
// Why: every call makes its state in three blocks of 700 to 900 bytes (the
// call, its retry loop, its attempt), and a traced attempt its span (whose
// operator new takes RecycledBlocks directly). With many calls in flight,
// more of each size are free at once than glibc's per-thread cache keeps
// (7 a size), and the rest go through its bins at about 200 instructions a
// malloc and free. A client's loop thread ends calls and, when their
// callbacks send the next ones, makes them too: it takes the blocks back
// from here for a few instructions. A block freed on one thread and wanted
// on another costs what it did before: one malloc, one free.
//
// Under AddressSanitizer or ThreadSanitizer nothing is kept: every block
// goes back to the heap, so a use after free is still reported with the
// stack that freed it.
#ifndef OUTBOUND_SRC_CORE_RECYCLED_H_
#define OUTBOUND_SRC_CORE_RECYCLED_H_

#include <cstddef>
#include <memory>
#include <new>
#include <utility>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define OUTBOUND_RECYCLED_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define OUTBOUND_RECYCLED_OFF 1
#endif
#endif

namespace outbound::internal {

// How many freed blocks of one size a thread keeps at most: a burst of
// calls leaves no more than this many of each behind on the thread (for
// the four sizes, about 45 KiB).
#ifdef OUTBOUND_RECYCLED_OFF
inline constexpr std::size_t kKeptBlocks = 0;
#else
inline constexpr std::size_t kKeptBlocks = 16;
#endif

// The freed blocks of one size one thread keeps. The thread frees them
// when it exits.
template <std::size_t kSize>
class RecycledBlocks {
 public:
  static void* Take() {
    if (!t_gone) {
      Shelf& shelf = t_shelf;
      if (Free* block = shelf.top; block != nullptr) {
        shelf.top = block->next;
        --shelf.count;
        return block;
      }
    }
    return ::operator new(kSize);
  }

  // How many this thread keeps now (for tests).
  static std::size_t KeptHere() { return t_gone ? 0 : t_shelf.count; }

  static void Give(void* block) noexcept {
    if (!t_gone) {
      Shelf& shelf = t_shelf;
      if (shelf.count < kKeptBlocks) {
        shelf.top = ::new (block) Free{shelf.top};
        ++shelf.count;
        return;
      }
    }
    ::operator delete(block);  // unsized: clang 14 declares no sized delete by default
  }

 private:
  struct Free {
    Free* next;
  };
  static_assert(kSize >= sizeof(Free));

  struct Shelf {
    Free* top = nullptr;
    std::size_t count = 0;
    Shelf() = default;
    Shelf(const Shelf&) = delete;
    Shelf& operator=(const Shelf&) = delete;
    ~Shelf() {
      // A block freed later on this thread (by another thread-local's
      // destructor) goes straight back to the heap.
      t_gone = true;
      while (top != nullptr) ::operator delete(std::exchange(top, top->next));
    }
  };

  static thread_local Shelf t_shelf;
  // Trivially destructible, so still readable while the thread's other
  // thread-locals are destroyed.
  static thread_local bool t_gone;
};

template <std::size_t kSize>
thread_local typename RecycledBlocks<kSize>::Shelf RecycledBlocks<kSize>::t_shelf;
template <std::size_t kSize>
thread_local bool RecycledBlocks<kSize>::t_gone = false;

// The allocator MakeRecycled hands std::allocate_shared: single objects of
// ordinary alignment come from RecycledBlocks, anything else from the heap.
template <class T>
class RecyclingAllocator {
 public:
  using value_type = T;

  RecyclingAllocator() = default;
  template <class U>
  explicit(false) RecyclingAllocator(const RecyclingAllocator<U>& /*other*/) noexcept {}

  T* allocate(std::size_t n) {
    if (!Recycles(n)) return std::allocator<T>().allocate(n);
    return static_cast<T*>(RecycledBlocks<sizeof(T)>::Take());
  }
  void deallocate(T* block, std::size_t n) noexcept {
    if (!Recycles(n)) return std::allocator<T>().deallocate(block, n);
    RecycledBlocks<sizeof(T)>::Give(block);
  }

  friend bool operator==(const RecyclingAllocator&, const RecyclingAllocator&) { return true; }

 private:
  static constexpr bool Recycles(std::size_t n) {
    return n == 1 && alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__;
  }
};

// std::make_shared<T>(args...), the object and its counts in one block that
// is recycled as above. For objects made and freed on every call.
template <class T, class... Args>
std::shared_ptr<T> MakeRecycled(Args&&... args) {
  return std::allocate_shared<T>(RecyclingAllocator<T>(), std::forward<Args>(args)...);
}

}  // namespace outbound::internal

#endif  // OUTBOUND_SRC_CORE_RECYCLED_H_
