// SPDX-License-Identifier: Apache-2.0
// outbound/rpc/proto.h
//
// Settings read from a service's .proto through protobuf's descriptors,
// which protoc's C++ output registers (no gRPC plugin needed). A method
// marks itself safe to send twice with the standard option
//
//   rpc Get(GetCartRequest) returns (Cart) {
//     option idempotency_level = NO_SIDE_EFFECTS;  // or IDEMPOTENT
//   }
//
// and NonIdempotentMethods names every method of the service that does not,
// for Settings::non_idempotent_methods: those are then never sent twice
// once they may have reached the server.
//
// example: examples/headers/rpc.cc#rpc-idempotency
//   const auto* carts = google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
//       "cart.v1.Carts");
//   settings.non_idempotent_methods = rpc::NonIdempotentMethods(*carts);
//
// Header-only, and written against the descriptor's interface rather than
// protobuf's headers: outbound::rpc links no protobuf, and a program that
// uses this has protobuf already.
#ifndef OUTBOUND_RPC_PROTO_H_
#define OUTBOUND_RPC_PROTO_H_

#include <string>
#include <type_traits>
#include <vector>

namespace outbound::rpc {

// The full names ("/pkg.Service/Method") of the methods of `service` (a
// google::protobuf::ServiceDescriptor) whose idempotency_level is neither
// NO_SIDE_EFFECTS nor IDEMPOTENT, in the order the .proto declares them.
template <typename ServiceDescriptor>
std::vector<std::string> NonIdempotentMethods(const ServiceDescriptor& service) {
  std::vector<std::string> methods;
  for (int i = 0; i < service.method_count(); ++i) {
    const auto& options = service.method(i)->options();
    using Options = std::remove_cvref_t<decltype(options)>;
    auto level = options.idempotency_level();
    if (level == Options::NO_SIDE_EFFECTS || level == Options::IDEMPOTENT) continue;
    methods.push_back("/" + std::string(service.full_name()) + "/" +
                      std::string(service.method(i)->name()));
  }
  return methods;
}

}  // namespace outbound::rpc

#endif  // OUTBOUND_RPC_PROTO_H_
