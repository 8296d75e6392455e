// SPDX-License-Identifier: Apache-2.0
// The two clients every `outbound demo` scenario compares, made one way:
// a naive client (one attempt, the call's timeout as a plain timeout, a
// breaker that never trips: what a bare HTTP library does) and outbound's
// (its defaults, plus what the scenario is about), each to a dependency
// served by the test kit on loopback over TLS with the run's CA.
#ifndef OUTBOUND_TOOLS_OUTBOUND_DEMO_CLIENTS_H_
#define OUTBOUND_TOOLS_OUTBOUND_DEMO_CLIENTS_H_

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "outbound/http/client.h"
#include "outbound/testing/test_ca.h"

namespace outbound::tool {

// The defaults for https://<host>:8443, trusting `ca`.
http::Settings DemoDependency(const std::string& host, const testing::TestCA& ca);

// `base` made naive: one attempt, its timeout a plain one (nothing per
// attempt), a breaker that never trips.
http::Settings NaiveSettings(http::Settings base);

struct DemoClients {
  std::unique_ptr<http::Client> naive;
  std::unique_ptr<http::Client> outbound;
};

// Both clients on `runtime`, or null after saying why on stderr.
std::unique_ptr<DemoClients> MakeDemoClients(const Runtime& runtime, const http::Settings& naive,
                                             const http::Settings& outbound);

// One row of a scenario's table: a label and the two sides' cells, padded
// by characters (a "–" is three bytes of UTF-8), `label_width` wide.
void PrintDemoRow(const std::string& label, const std::string& naive, const std::string& outbound,
                  std::size_t label_width = 44);

// Writes the scenario's picture to `svg_path`, and its report to
// `json_path` unless that is empty, saying so on stdout: the demo's exit
// code, kExitWriteError if either could not be written.
int WriteDemoFiles(const std::string& svg_path, const std::string& svg,
                   const std::string& json_path, const nlohmann::json& report);

}  // namespace outbound::tool

#endif  // OUTBOUND_TOOLS_OUTBOUND_DEMO_CLIENTS_H_
