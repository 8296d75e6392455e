// SPDX-License-Identifier: Apache-2.0
// The heap nghttp2 uses for one session. A connection allocates and frees
// the same few sizes for every stream (the stream, its header block, the
// copied request fields), so freed blocks are kept by size and handed out
// again: the malloc and free of a stream cost a list push and pop.
//
// On the session's thread only, like the session. Outlives the session:
// every block nghttp2 still holds is freed by nghttp2_session_del, and the
// field values H2Session keeps (ValidValue) by its destructor, after.
#ifndef OUTBOUND_SRC_HTTP_TRANSPORT_H2_MEMORY_H_
#define OUTBOUND_SRC_HTTP_TRANSPORT_H2_MEMORY_H_

#include <nghttp2/nghttp2.h>

#include <array>
#include <cstddef>

namespace outbound::http::internal::transport {

class H2Memory {
 public:
  H2Memory();
  ~H2Memory();
  H2Memory(const H2Memory&) = delete;
  H2Memory& operator=(const H2Memory&) = delete;

  // What nghttp2_session_client_new3 takes; points into this object.
  nghttp2_mem* mem() { return &mem_; }

  void* Allocate(std::size_t size);
  void Free(void* block);
  void* Reallocate(void* block, std::size_t size);

 private:
  // Sizes kept: 64 bytes to 4 KiB, a class per power of two. A larger
  // block goes to malloc and back at once.
  static constexpr std::size_t kClasses = 7;
  // At most this much kept free per session, so a burst of streams leaves
  // no lasting weight behind.
  static constexpr std::size_t kMaxKeptBytes = 256 * 1024;

  struct FreeBlock {
    FreeBlock* next;
  };

  std::array<FreeBlock*, kClasses> free_{};
  std::size_t kept_bytes_ = 0;
  nghttp2_mem mem_{};
};

}  // namespace outbound::http::internal::transport

#endif  // OUTBOUND_SRC_HTTP_TRANSPORT_H2_MEMORY_H_
