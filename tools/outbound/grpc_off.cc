// SPDX-License-Identifier: Apache-2.0
// The command built without the gRPC client (OUTBOUND_BUILD_RPC=OFF): a grpc
// or grpcs URL is a usage error that says so.
#include "commands.h"
#include "grpc.h"

namespace outbound::tool {
namespace {

constexpr const char* kNoGrpc =
    "this outbound was built without gRPC (OUTBOUND_BUILD_RPC=OFF): a grpc or grpcs URL needs it";

}  // namespace

int RunGrpcCall(const GrpcCall&) { return Usage("call", kNoGrpc); }
int RunGrpcBench(const GrpcBench&) { return Usage("bench", kNoGrpc); }

}  // namespace outbound::tool
