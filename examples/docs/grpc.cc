// SPDX-License-Identifier: Apache-2.0
//
// docs/grpc-client.md's blocks, compiled against the stubs of
// examples/headers/cart.proto and chat.proto (scripts/check-doc-examples).
#include <grpcpp/grpcpp.h>

#include <iostream>
#include <string>

#include "cart.grpc.pb.h"
#include "chat.grpc.pb.h"
#include "outbound/rpc/client.h"
#include "outbound/rpc/stream.h"

namespace outbound::docs {

namespace {
int fail(const std::string& message) {
  std::cerr << message << "\n";
  return 1;
}
void Show(const chat::v1::Line& line) { std::cout << line.text() << "\n"; }
}  // namespace

int FirstCallExample(const Runtime& runtime, const std::string& ca_pem, const Context& context) {
  // [example first-call]
  auto settings = outbound::rpc::DefaultSettings();
  settings.addr = "carts:9090";                                   // host:port, no scheme
  settings.tls = outbound::rpc::TlsSettings{ca_pem};              // empty: plain text
  auto carts = outbound::rpc::Client::Create(runtime, settings);  // names every bad field
  if (!carts) return fail(carts.error().message());

  cart::v1::GetCartRequest request;  // any protobuf message
  cart::v1::Cart cart;
  outbound::rpc::Status status = (*carts)->Call("/cart.v1.Carts/Get", request, &cart, context);
  if (status.rejected) return 69;  // the breaker is open: nothing was sent
  // [end first-call]
  return status.ok() ? 0 : 1;
}

outbound::rpc::Status StreamExample(outbound::rpc::Client* client, const chat::v1::Line& hello,
                                    const Context& context) {
  // [example stream]
  outbound::rpc::Stream chat = client->OpenStream("/chat.v1.Chat/Talk", context);
  if (!chat.opened()) return chat.Finish();  // why: rejected, UNAVAILABLE after its retries…
  chat.Write(hello);                         // a protobuf message
  chat::v1::Line line;
  while (chat.Read(&line)) Show(line);           // another thread may Write meanwhile
  outbound::rpc::Status status = chat.Finish();  // the breaker counts this
  // [end stream]
  return status;
}

outbound::rpc::Status StubExample(outbound::rpc::Client* client,
                                  const cart::v1::GetCartRequest& request, const Context& context) {
  // [example stub]
  auto stub = cart::v1::Carts::NewStub(client->channel());
  cart::v1::Cart cart;
  outbound::rpc::Status status =
      client->Call("/cart.v1.Carts/Get", &cart::v1::Carts::Stub::async::Get, stub->async(), request,
                   &cart, context);
  // [end stub]
  return status;
}

void StubAsyncExample(outbound::rpc::Client* client, const cart::v1::GetCartRequest& request,
                      cart::v1::Cart& cart) {
  // [example stub-async]
  auto stub = cart::v1::Carts::NewStub(client->channel());
  client->CallAsync("/cart.v1.Carts/Get", &cart::v1::Carts::Stub::async::Get, stub->async(),
                    &request, &cart, [](outbound::rpc::Status status, std::exception_ptr thrown) {
                      // on one of gRPC's threads; request and cart live until here
                      if (thrown || !status.ok()) std::cerr << "no cart\n";
                    });
  // [end stub-async]
}

void MaxConnectionAgeExample() {
  // [example max-connection-age]
  grpc::ServerBuilder builder;
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, 5 * 60 * 1000);    // 5 min
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS, 30 * 1000);  // finish streams
  // [end max-connection-age]
}

}  // namespace outbound::docs
