// SPDX-License-Identifier: Apache-2.0
//
// A program outside the project that uses the gRPC client as a user's
// service would: its messages generated from a .proto by protoc alone (no
// gRPC plugin), outbound::rpc from the installed headers and library,
// calling a grpc++ server of its own on loopback (rpc_server.cc), which
// refuses the first call: the installed library's retry loop at work.
#include <cstdio>
#include <string>

#include "echo.pb.h"
#include "outbound/rpc/client.h"
#include "outbound/version.h"
#include "rpc_server.h"

namespace {

int Fail(const std::string& why) {
  std::fprintf(stderr, "rpc consumer: %s\n", why.c_str());
  return 1;
}

}  // namespace

int main() {
  namespace rpc = outbound::rpc;
  PeerServer server;
  if (server.port() == 0) return Fail("the grpc++ server did not start");

  rpc::Settings settings = rpc::DefaultSettings();
  settings.addr = "127.0.0.1:" + std::to_string(server.port());
  auto client = rpc::Client::Create(outbound::Runtime{}, settings);
  if (!client) return Fail(client.error().message());

  outbound::test::EchoRequest request;
  request.set_text("by name");
  rpc::Reply reply = (*client)->Call("/outbound.test.Echo/Say", request.SerializeAsString());
  outbound::test::EchoReply echoed;
  if (!reply.status.ok() || reply.attempts != 2 || !echoed.ParseFromString(reply.body) ||
      echoed.text() != "by name") {
    return Fail("by name: " + reply.status.message + ", " + std::to_string(reply.attempts) +
                " attempts, expected OK after 2");
  }

  request.set_text("typed");
  rpc::Status status = (*client)->Call("/outbound.test.Echo/Say", request, &echoed);
  if (!status.ok() || echoed.text() != "typed") return Fail("typed: " + status.message);
  if (!(*client)->Connected()) return Fail("not connected after two calls");

  client->reset();
  std::printf("rpc consumer: outbound %s, a refused call retried, typed messages from protoc\n",
              OUTBOUND_VERSION_STRING);
  return 0;
}
