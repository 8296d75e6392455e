// SPDX-License-Identifier: Apache-2.0
//
// The usage examples of outbound::rpc's headers, compiled against the
// messages of cart.proto and chat.proto (protoc's C++ output, no gRPC
// plugin): each header quotes the region its `// example:` line names
// (scripts/check-doc-examples).
#include <google/protobuf/descriptor.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "cart.pb.h"
#include "chat.pb.h"
#include "outbound/config/rpc_settings.h"
#include "outbound/rpc/asio.h"
#include "outbound/rpc/client.h"
#include "outbound/rpc/proto.h"
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

rpc::Reply MetadataExample(rpc::Client& carts, const std::string& request_bytes,
                           const std::string& token, const std::string& request_id) {
  // [example context-metadata]
  Context ctx;
  ctx.metadata.emplace("authorization", "Bearer " + token);
  ctx.metadata.emplace("x-request-id-bin", request_id);  // bytes
  rpc::Reply reply = carts.Call("/cart.v1.Carts/Get", request_bytes, ctx);
  // [end context-metadata]
  return reply;
}

rpc::Status TypedExample(const std::unique_ptr<rpc::Client>* carts,
                         const cart::v1::GetCartRequest& request, const Context& context) {
  // [example rpc-typed]
  cart::v1::Cart cart;
  rpc::Status status = (*carts)->Call("/cart.v1.Carts/Get", request, &cart, context);
  // [end rpc-typed]
  return status;
}

void AsyncExample(const std::unique_ptr<rpc::Client>* carts, const std::string& request_bytes) {
  // [example rpc-async]
  (*carts)->CallAsync("/cart.v1.Carts/Get", request_bytes,
                      [](rpc::Reply reply, std::exception_ptr thrown) {
                        if (thrown || !reply.status.ok()) std::cerr << "no cart\n";
                      });
  // [end rpc-async]
}

void MethodsExample(rpc::Settings& settings) {
  using namespace std::chrono_literals;
  // [example methods]
  settings.methods = {
      {.method = "/reports.v1.Reports/", .timeout = 30s, .max_attempts = 1},
      {.method = "/search.v1.Search/Query", .attempt_timeout = 200ms},
  };
  // [end methods]
}

std::vector<std::string> IdempotencyExample() {
  rpc::Settings settings = rpc::DefaultSettings();
  // [example rpc-idempotency]
  const auto* carts =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName("cart.v1.Carts");
  settings.non_idempotent_methods = rpc::NonIdempotentMethods(*carts);
  // [end rpc-idempotency]
  return settings.non_idempotent_methods;
}

void WarmExample(const std::unique_ptr<rpc::Client>* carts) {
  // [example rpc-warm]
  if (auto warmed = (*carts)->Warm().get(); !warmed) std::cerr << warmed.error().message();
  // [end rpc-warm]
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

namespace asio = boost::asio;

// [example asio]
asio::awaitable<void> Fetch(rpc::Client& carts, std::string request) {
  constexpr char kGet[] = "/cart.v1.Carts/Get";
  rpc::Reply reply =
      co_await rpc::AsyncCall(carts, kGet, std::move(request), asio::use_awaitable);
  // ...
}
// [end asio]

}  // namespace outbound::examples
