// SPDX-License-Identifier: Apache-2.0
//
// docs/grpc-client.md's blocks, compiled against the messages of
// examples/headers/cart.proto and chat.proto, protoc's output alone
// (scripts/check-doc-examples).
#include <iostream>
#include <string>

#include "cart.pb.h"
#include "chat.pb.h"
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
  if (!chat.Write(hello)) return chat.Finish();  // why: rejected, UNAVAILABLE, …
  chat::v1::Line line;
  while (chat.Read(&line)) Show(line);           // another thread may Write meanwhile
  outbound::rpc::Status status = chat.Finish();  // the breaker counts this
  // [end stream]
  return status;
}

void CallAsyncExample(outbound::rpc::Client* client, const cart::v1::GetCartRequest& request) {
  // [example call-async]
  client->CallAsync("/cart.v1.Carts/Get", request.SerializeAsString(),
                    [](outbound::rpc::Reply reply, std::exception_ptr thrown) {
                      // on the client's thread: quick, no blocking
                      cart::v1::Cart cart;
                      if (thrown || !reply.status.ok() || !cart.ParseFromString(reply.body)) {
                        std::cerr << "no cart\n";
                      }
                    });
  // [end call-async]
}

}  // namespace outbound::docs
