// SPDX-License-Identifier: Apache-2.0
// The gRPC form of `outbound call` and `outbound bench`: a grpc or grpcs
// URL, through rpc::Client. Built from grpc.cc with OUTBOUND_BUILD_RPC, and
// from grpc_off.cc (which refuses such a URL) without it.
#ifndef OUTBOUND_TOOLS_OUTBOUND_GRPC_H_
#define OUTBOUND_TOOLS_OUTBOUND_GRPC_H_

#include <optional>
#include <string>

#include "common.h"

namespace outbound::tool {

// What `outbound call` read for a gRPC call.
struct GrpcCall {
  std::string url;
  GrpcTarget target;
  std::string message;                // the serialised request
  Metadata metadata;                  // -H
  std::optional<std::string> output;  // -o FILE
  SettingOptions settings;
  const Network* network = nullptr;  // --connect-to
  bool verbose = false;              // -v: each attempt's span
  bool report = false;               // --report json
  std::optional<std::string> fault;  // --fault SCENARIO
};

// Makes the call; returns the command's exit code.
int RunGrpcCall(const GrpcCall& call);

// What `outbound bench` read for gRPC calls.
struct GrpcBench {
  std::string url;
  GrpcTarget target;
  std::string message;  // the serialised request, the same for every call
  Metadata metadata;    // -H, the same for every call
  const Network* network = nullptr;
  long calls = 0;
  int concurrency = 0;
  long rss_every = 0;
  bool telemetry = false;
  std::string json_path;
};

// Runs the calls and prints bench's figures; returns the exit code.
int RunGrpcBench(const GrpcBench& bench);

}  // namespace outbound::tool

#endif  // OUTBOUND_TOOLS_OUTBOUND_GRPC_H_
