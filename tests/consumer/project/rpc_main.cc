// SPDX-License-Identifier: Apache-2.0
//
// A program outside the project that uses the gRPC client as a user's
// service would: its own stub generated from a .proto, outbound::rpc from
// the installed headers and library, a grpc++ server of its own on
// loopback. The server refuses the first call (UNAVAILABLE), so the call by
// name shows the installed library's retry loop at work; the generated
// stub's callback method then goes through the same client.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>

#include "echo.grpc.pb.h"
#include "outbound/rpc/client.h"
#include "outbound/version.h"

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

int Fail(const std::string& why) {
  std::fprintf(stderr, "rpc consumer: %s\n", why.c_str());
  return 1;
}

}  // namespace

int main() {
  namespace rpc = outbound::rpc;
  RefusesFirstCall service;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) return Fail("the grpc++ server did not start");

  rpc::Settings settings = rpc::DefaultSettings();
  settings.addr = "127.0.0.1:" + std::to_string(port);
  auto client = rpc::Client::Create(outbound::Runtime{}, settings);
  if (!client) return Fail(client.error().message());

  EchoRequest request;
  request.set_text("by name");
  rpc::Reply reply = (*client)->Call("/outbound.test.Echo/Say", request.SerializeAsString());
  EchoReply echoed;
  if (!reply.status.ok() || reply.attempts != 2 || !echoed.ParseFromString(reply.body) ||
      echoed.text() != "by name") {
    return Fail("by name: " + reply.status.message + ", " + std::to_string(reply.attempts) +
                " attempts, expected OK after 2");
  }

  auto stub = Echo::NewStub((*client)->channel());
  request.set_text("through the stub");
  rpc::Status status = (*client)->Call("/outbound.test.Echo/Say", &Echo::Stub::async::Say,
                                       stub->async(), request, &echoed);
  if (!status.ok() || echoed.text() != "through the stub") {
    return Fail("through the stub: " + status.message);
  }
  if (!(*client)->Connected()) return Fail("not connected after two calls");

  client->reset();
  server->Shutdown();
  std::printf("rpc consumer: outbound %s, a refused call retried, a generated stub served\n",
              OUTBOUND_VERSION_STRING);
  return 0;
}
