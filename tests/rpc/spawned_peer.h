// SPDX-License-Identifier: Apache-2.0
// A gRPC server nobody here wrote, run as a program for one test and
// talked to over its stdin and stdout (peers::SpawnedPeer,
// tests/peers/node_peer.h): grpcio_peer.py under Python grpcio,
// grpc_go_peer under grpc-go, grpc_js_test_service.js under grpc-js.
// Each answers "stats" with what it has seen: "calls" (by method) and the
// fields its header names. CertFiles writes a certificate where such a
// program reads it (--cert, --key).
#ifndef OUTBOUND_TESTS_RPC_SPAWNED_PEER_H_
#define OUTBOUND_TESTS_RPC_SPAWNED_PEER_H_

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "../peers/node_peer.h"

namespace outbound::rpc {

class GrpcPeer : public peers::SpawnedPeer {
 public:
  // A safety net for a broken test, never a tolerance: a passing test
  // waits for events.
  static constexpr auto kSafetyNet = std::chrono::seconds(10);

  using peers::SpawnedPeer::SpawnedPeer;

  // Calls of `method` ("Say") the server has seen: Stats()["calls"].
  int Calls(const std::string& method) { return Stats().at("calls").value(method, 0); }

  // Waits (the safety net at most) until `done(Stats())` holds.
  template <typename Done>
  bool WaitFor(Done done) {
    auto until = std::chrono::steady_clock::now() + kSafetyNet;
    while (!done(Stats())) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }
};

// A certificate written where the peer reads it (Args(): --cert, --key),
// removed with its directory when the object goes.
using CertFiles = peers::PeerFiles;

}  // namespace outbound::rpc

#endif  // OUTBOUND_TESTS_RPC_SPAWNED_PEER_H_
