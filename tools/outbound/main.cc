// SPDX-License-Identifier: Apache-2.0
// The `outbound` command.
#include <csignal>
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "outbound/version.h"

namespace outbound::tool {

int Usage(const std::string& command, const std::string& problem) {
  std::cerr << "outbound " << command << ": " << problem << "\n"
            << "see: outbound " << command << " --help\n";
  return kExitUsage;
}

}  // namespace outbound::tool

namespace {

constexpr const char* kUsage = R"(usage: outbound <command> [options]

Calls the services a program depends on without being hurt by them: one
deadline per call, safe requests retried with jittered backoff inside a retry
budget, a circuit breaker per dependency.

commands:
  demo    a flaky dependency, called by a naive client and by outbound's
          default client side by side; no network needed
  call    one call to a URL through outbound's client: http, https, or
          grpc and grpcs for a unary gRPC call
  bench   many calls to a URL through one client, as a load generator

`outbound <command> --help` says more; `outbound --version` prints the
version.
)";

}  // namespace

int main(int argc, char** argv) {
  // A reader that goes away (`outbound call URL | head -c 10`) fails the
  // write, which the command reports (exit 23), rather than killing it.
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? outbound::tool::kExitUsage : 0;
  }
  if (args[0] == "--version" || args[0] == "version") {
    std::cout << "outbound " << outbound::Version() << "\n";
    return 0;
  }
  std::string command = args[0];
  args.erase(args.begin());
  if (command == "call") return outbound::tool::RunCall(args);
  if (command == "demo") return outbound::tool::RunDemo(args);
  if (command == "bench") return outbound::tool::RunBench(args);
  std::cerr << "outbound: unknown command \"" << command << "\"\n" << kUsage;
  return outbound::tool::kExitUsage;
}
