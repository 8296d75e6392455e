// SPDX-License-Identifier: Apache-2.0
// outbound/random.h
//
// The randomness behind jitter, injectable so a test can assert exact waits
// (a global generator, as gRPC's backoff uses, makes that impossible).
//
// example: examples/headers/core.cc#random
//   class Fixed : public outbound::Random {
//     double Uniform() override { return 0.5; }
//   };
#ifndef OUTBOUND_RANDOM_H_
#define OUTBOUND_RANDOM_H_

namespace outbound {

// A source of uniform numbers. Implementations are thread-safe.
class Random {
 public:
  virtual ~Random() = default;
  // A number drawn uniformly from [0, 1), with 48 random bits or more: a
  // RecordingTracer given this source draws its trace and span ids 48 bits
  // at a time (from DefaultRandom(), 64 bits at a time, at no call of this).
  virtual double Uniform() = 0;
};

// A fast, thread-safe source (a generator per thread, seeded from the OS).
// Not for cryptography.
Random& DefaultRandom();

}  // namespace outbound

#endif  // OUTBOUND_RANDOM_H_
