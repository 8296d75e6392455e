// SPDX-License-Identifier: Apache-2.0
// The consumer's grpc++ peer, behind a header that names nothing of
// grpc++: the client's translation unit includes protoc's output alone.
#ifndef OUTBOUND_CONSUMER_RPC_SERVER_H_
#define OUTBOUND_CONSUMER_RPC_SERVER_H_

#include <memory>

class PeerServer {
 public:
  PeerServer();
  ~PeerServer();
  // The port it listens on, 0 if it did not start.
  int port() const { return port_; }

 private:
  struct State;
  std::unique_ptr<State> state_;
  int port_ = 0;
};

#endif  // OUTBOUND_CONSUMER_RPC_SERVER_H_
