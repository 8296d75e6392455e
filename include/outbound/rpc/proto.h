// SPDX-License-Identifier: Apache-2.0
// outbound/rpc/proto.h
//
// Settings read from a service's .proto through protobuf's descriptors,
// which protoc's C++ output registers (no gRPC plugin needed). A method
// marks itself safe to send twice with the standard method option
// `option idempotency_level = NO_SIDE_EFFECTS;` (or IDEMPOTENT) in the
// braces after its rpc line, and NonIdempotentMethods names every method
// of the service that does not, for Settings::non_idempotent_methods:
// those are then never sent twice once they may have reached the server.
//
// example: examples/headers/rpc.cc#rpc-idempotency
//   const auto* carts =
//       google::protobuf::DescriptorPool::generated_pool()->FindServiceByName("cart.v1.Carts");
//   settings.non_idempotent_methods = rpc::NonIdempotentMethods(*carts);
//
// Header-only: outbound::rpc links no protobuf; a program that includes
// this has protobuf already (its generated messages need it).
#ifndef OUTBOUND_RPC_PROTO_H_
#define OUTBOUND_RPC_PROTO_H_

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>

#include <string>
#include <vector>

namespace outbound::rpc {

// The full names ("/pkg.Service/Method") of the methods of `service` whose
// idempotency_level is neither NO_SIDE_EFFECTS nor IDEMPOTENT, in the
// order the .proto declares them.
inline std::vector<std::string> NonIdempotentMethods(
    const google::protobuf::ServiceDescriptor& service) {
  using google::protobuf::MethodOptions;
  std::vector<std::string> methods;
  for (int i = 0; i < service.method_count(); ++i) {
    MethodOptions::IdempotencyLevel level = service.method(i)->options().idempotency_level();
    if (level == MethodOptions::NO_SIDE_EFFECTS || level == MethodOptions::IDEMPOTENT) continue;
    methods.push_back("/" + std::string(service.full_name()) + "/" +
                      std::string(service.method(i)->name()));
  }
  return methods;
}

}  // namespace outbound::rpc

#endif  // OUTBOUND_RPC_PROTO_H_
