// SPDX-License-Identifier: Apache-2.0
// outbound/fault.h
//
// Failure injection (docs/failure-injection.md), the same for the HTTP and
// the gRPC client: with `enabled`, a client is an injection point
// ("http:<host>:<port>", "grpc:<host>:<port>"), and a call whose baggage
// carries a scenario (member "outbound-fault") naming it has its attempts
// aborted, delayed or answered, as a failing dependency would. Off (the
// default): no baggage is read.
#ifndef OUTBOUND_FAULT_H_
#define OUTBOUND_FAULT_H_

namespace outbound {

struct FaultSettings {
  bool enabled = false;
  // Send the scenario on to the dependency in the `baggage` header (for a
  // dependency that injects faults of its own). Default: stripped.
  bool forward_scenario = false;
};

}  // namespace outbound

#endif  // OUTBOUND_FAULT_H_
