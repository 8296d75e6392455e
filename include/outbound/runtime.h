// SPDX-License-Identifier: Apache-2.0
// outbound/runtime.h
//
// What a client takes from its process: the clock every wait runs on, the
// network names are dialled through, the randomness behind jitter, the
// telemetry it reports through (none by default), and whether failures may
// be injected. The defaults are the
// process's own; a test swaps in a ManualClock, a NetworkMap and an
// InMemoryTelemetry. Everything a Runtime points to must outlive the clients built
// with it.
//
// example: examples/headers/core.cc#runtime
//   testing::ManualClock clock;
//   testing::NetworkMap network;
//   Runtime runtime{.clock = &clock, .network = &network};
//   auto payments = http::Client::Create(runtime, settings);
#ifndef OUTBOUND_RUNTIME_H_
#define OUTBOUND_RUNTIME_H_

#include "outbound/clock.h"
#include "outbound/http/transport.h"
#include "outbound/network.h"
#include "outbound/random.h"
#include "outbound/telemetry/telemetry.h"

namespace outbound {

struct Runtime {
  Clock* clock = &SystemClock();
  const Network* network = &OsNetwork();
  Random* random = &DefaultRandom();
  telemetry::Telemetry telemetry;
  // Failure injection (docs/failure-injection.md) for every HTTP client
  // built on this Runtime, as if each had Settings::faults.enabled: one
  // switch for a whole process. Off by default; a client's own setting
  // turns it on for that client alone. (The gRPC client has its own
  // injection point, "grpc:<host>:<port>": docs/failure-injection.md.)
  bool inject_faults = false;
  // What carries the HTTP clients' attempts: null for the library's own
  // transport over `network`; a testing::FakeTransport in a test that
  // scripts exchanges with no socket (outbound/http/transport.h).
  http::Transport* transport = nullptr;
};

}  // namespace outbound

#endif  // OUTBOUND_RUNTIME_H_
