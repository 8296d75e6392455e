// SPDX-License-Identifier: Apache-2.0
//
// The usage examples of outbound::rpc's headers, compiled against the
// stubs of cart.proto and chat.proto: each header quotes the region its
// `// example:` line names (scripts/check-doc-examples).
#include <grpcpp/channel.h>

#include <iostream>

#include "cart.grpc.pb.h"
#include "chat.grpc.pb.h"
#include "outbound/config/rpc_settings.h"
#include "outbound/rpc/client.h"
#include "outbound/rpc/stream.h"

namespace outbound::examples {
namespace {

int Exit(int code, const Error& error) {
  std::cerr << error.message() << "\n";
  return code;
}

}  // namespace

int RpcSettingsExample() {
  // [example rpc-settings]
  config::Resolver env(config::ProcessEnvironment());
  rpc::Settings carts = config::ReadRpcSettings(env, "CARTS_", rpc::DefaultSettings());
  if (auto read = env.Finish(); !read) return Exit(config::kExitConfig, read.error());
  // [end rpc-settings]
  return carts.max_attempts;
}

Result<std::unique_ptr<rpc::Client>> RpcClientExample(const std::string& request_bytes) {
  // [example rpc-client]
  auto settings = rpc::DefaultSettings();
  settings.addr = "carts:9090";
  auto carts = rpc::Client::Create(Runtime{}, settings);  // names every bad field
  rpc::Reply reply = (*carts)->Call("/cart.v1.Carts/Get", request_bytes);
  // [end rpc-client]
  return carts;
}

rpc::Status StubExample(const std::unique_ptr<rpc::Client>* carts,
                        const cart::v1::GetCartRequest& request, const Context& context) {
  cart::v1::Cart cart;
  // [example rpc-stub]
  auto stub = cart::v1::Carts::NewStub((*carts)->channel());
  rpc::Status status = (*carts)->Call("/cart.v1.Carts/Get", &cart::v1::Carts::Stub::async::Get,
                                      stub->async(), request, &cart, context);
  // [end rpc-stub]
  return status;
}

void StubAsyncExample(const std::unique_ptr<rpc::Client>* carts, cart::v1::Carts::Stub* stub,
                      const cart::v1::GetCartRequest& request, cart::v1::Cart& cart) {
  // [example rpc-stub-async]
  (*carts)->CallAsync("/cart.v1.Carts/Get", &cart::v1::Carts::Stub::async::Get, stub->async(),
                      &request, &cart, [](rpc::Status status, std::exception_ptr thrown) {
                        if (thrown || !status.ok()) std::cerr << "no cart\n";
                      });
  // [end rpc-stub-async]
}

rpc::Status BlockingStubExample(rpc::Client* client, const cart::v1::GetCartRequest& request,
                                const Context& context) {
  using cart::v1::Carts;
  cart::v1::Cart reply;
  // [example rpc-blocking-stub]
  auto stub = Carts::NewStub(client->channel());
  rpc::Status status =
      client->Call("/cart.v1.Carts/Get", &Carts::Stub::Get, *stub, request, &reply, context);
  // [end rpc-blocking-stub]
  return status;
}

rpc::Status CallbackStubExample(rpc::Client* client, const cart::v1::GetCartRequest& request,
                                const Context& context) {
  using cart::v1::Carts;
  cart::v1::Cart reply;
  // [example rpc-callback-stub]
  auto stub = Carts::NewStub(client->channel());
  rpc::Status status = client->Call("/cart.v1.Carts/Get", &Carts::Stub::async::Get,
                                    stub->async(), request, &reply, context);
  // [end rpc-callback-stub]
  return status;
}

void AsyncStubExample(rpc::Client* client, const cart::v1::GetCartRequest& request,
                      cart::v1::Cart& reply) {
  using cart::v1::Carts;
  // [example rpc-async-stub]
  auto stub = Carts::NewStub(client->channel());
  client->CallAsync("/cart.v1.Carts/Get", &Carts::Stub::async::Get, stub->async(), &request,
                    &reply, [](rpc::Status status, std::exception_ptr thrown) {
                      if (thrown || !status.ok()) std::cerr << "no cart\n";
                    });
  // [end rpc-async-stub]
}

void Show(const chat::v1::Line& line) { std::cout << line.text() << "\n"; }

rpc::Status StreamExample(rpc::Client* carts, const chat::v1::Line& hello,
                          const Context& context) {
  // [example rpc-stream]
  rpc::Stream chat = carts->OpenStream("/chat.v1.Chat/Talk", context);
  chat.Write(hello);  // a protobuf message, or serialised bytes
  chat.WritesDone();
  chat::v1::Line line;
  while (chat.Read(&line)) Show(line);
  rpc::Status status = chat.Finish();  // the breaker counts this status
  // [end rpc-stream]
  return status;
}

}  // namespace outbound::examples
