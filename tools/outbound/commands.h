// SPDX-License-Identifier: Apache-2.0
// The `outbound` subcommands.
#ifndef OUTBOUND_TOOLS_OUTBOUND_COMMANDS_H_
#define OUTBOUND_TOOLS_OUTBOUND_COMMANDS_H_

#include <string>
#include <vector>

namespace outbound::tool {

int RunCall(const std::vector<std::string>& args);
int RunDemo(const std::vector<std::string>& args);
int RunBench(const std::vector<std::string>& args);

namespace overload_demo {
// `outbound demo --scenario overload` (demo_overload.cc).
int Run(double run_seconds, const std::string& svg_path, const std::string& json_path);
}  // namespace overload_demo

namespace replica_demo {
// `outbound demo --scenario replica-dies` (demo_replica.cc).
int Run(double run_seconds, const std::string& svg_path, const std::string& json_path);
}  // namespace replica_demo

namespace slow_tail_demo {
// `outbound demo --scenario slow-tail` (demo_slow_tail.cc).
int Run(double run_seconds, const std::string& svg_path, const std::string& json_path);
}  // namespace slow_tail_demo

// Prints `problem` and where to find help; returns the usage exit code.
int Usage(const std::string& command, const std::string& problem);

}  // namespace outbound::tool

#endif  // OUTBOUND_TOOLS_OUTBOUND_COMMANDS_H_
