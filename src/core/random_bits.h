// SPDX-License-Identifier: Apache-2.0
// The default Random's own bits, 64 a draw, for what wants bits rather
// than a number in [0, 1): a RecordingTracer drawing its ids from
// DefaultRandom() takes them here, in two draws for a trace id where
// Uniform would take three. Internal.
#ifndef OUTBOUND_SRC_CORE_RANDOM_BITS_H_
#define OUTBOUND_SRC_CORE_RANDOM_BITS_H_

#include <cstdint>

namespace outbound::internal {

// 64 bits from the calling thread's generator, the one DefaultRandom()'s
// Uniform draws from.
std::uint64_t DefaultRandomBits();

}  // namespace outbound::internal

#endif  // OUTBOUND_SRC_CORE_RANDOM_BITS_H_
