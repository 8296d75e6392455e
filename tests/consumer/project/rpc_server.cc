// SPDX-License-Identifier: Apache-2.0
//
// The consumer's peer: a grpc++ server of the user's own on loopback,
// built from the same .proto with grpc++'s plugin. The client side
// (rpc_main.cc) needs none of it. Refuses the first call (UNAVAILABLE), so
// the client's call shows the installed library's retry loop at work.
#include "rpc_server.h"

#include <grpcpp/grpcpp.h>

#include <atomic>

#include "echo.grpc.pb.h"

namespace {

using outbound::test::Echo;
using outbound::test::EchoReply;
using outbound::test::EchoRequest;

class RefusesFirstCall final : public Echo::Service {
  grpc::Status Say(grpc::ServerContext* /*context*/, const EchoRequest* request,
                   EchoReply* reply) override {
    if (calls_.fetch_add(1) == 0) return {grpc::StatusCode::UNAVAILABLE, "warming up"};
    reply->set_text(request->text());
    return grpc::Status::OK;
  }
  std::atomic<int> calls_{0};
};

}  // namespace

struct PeerServer::State {
  RefusesFirstCall service;
  std::unique_ptr<grpc::Server> server;
};

PeerServer::PeerServer() : state_(std::make_unique<State>()) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
  builder.RegisterService(&state_->service);
  state_->server = builder.BuildAndStart();
  if (!state_->server) port_ = 0;
}

PeerServer::~PeerServer() {
  if (state_->server) state_->server->Shutdown();
}
