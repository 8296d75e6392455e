// SPDX-License-Identifier: Apache-2.0
// outbound/config/rpc_settings.h
//
// rpc::Settings sourced from variables named PREFIX + field, by the rules
// ReadHttpSettings follows (outbound/config/http_settings.h):
//
//   ADDR                       host:port, no scheme ("carts:9090")
//   TIMEOUT                    a duration, written like "250ms", "10s", "1m30s"
//   MAX_ATTEMPTS BACKOFF_BASE BACKOFF_MAX
//   RETRY_BUDGET_MAX_TOKENS RETRY_BUDGET_TOKEN_RATIO
//   RETRY_BUDGET_MIN_PER_SECOND  retries a second the budget always allows; 0 off
//   BREAKER_WINDOW BREAKER_PROBES BREAKER_OPEN_FOR BREAKER_PROBE_TIMEOUT
//   BREAKER_INITIAL_OPEN_FOR BREAKER_CALLS_PER_PROBE
//   BREAKER_SLOW_CALL          a duration; "0s" turns the slow-call rule off
//   TLS                        "on" or "off"; unset: on when the defaults
//                              have TLS
//   CA_FILE CERT_FILE KEY_FILE paths of PEM files, with TLS on (an error
//                              beside plain text: it would be ignored)
//   FAULTS                     "on" or "off": failure injection
//                              (docs/failure-injection.md)
//   NON_IDEMPOTENT_METHODS     full method names, comma-separated
//                              ("/cart.v1.Carts/Checkout,/cart.v1.Carts/Pay")
//   MAX_RECEIVE_MESSAGE_BYTES MAX_SEND_MESSAGE_BYTES
//                              whole numbers of bytes, 1 to 4294967295
//   GZIP_REQUESTS              "on" or "off": request messages gzip-coded
//   MAX_CONNECTION_AGE         a duration ("30m") or "off": a connection
//                              older is drained (docs/replicas.md)
//   ATTEMPT_TIMEOUT            a duration ("2s") or "off": each attempt's
//                              bound to its response headers
//   RATE_LIMIT                 "50/s" or "50/s,10" (a burst of 10), or "off"
//   BULKHEAD                   "64" (calls in flight) or "64,16,50ms" (16
//                              more waiting 50ms at most), or "off"
//   ADAPTIVE_CONCURRENCY       "on" or "off": a limit on calls in flight that
//                              follows the latency (docs/beyond-retries.md)
//   ADAPTIVE_CONCURRENCY_INITIAL_LIMIT ADAPTIVE_CONCURRENCY_MIN_LIMIT
//   ADAPTIVE_CONCURRENCY_MAX_LIMIT  1 to 100000, min <= initial <= max
//   ADAPTIVE_CONCURRENCY_SAMPLE_WINDOW  a duration, 1ms to 1m
//   BALANCING                  "on" or "off": call every address of the
//                              name, balanced (docs/replicas.md)
//   ENDPOINTS                  "10.0.0.7:8443,10.0.0.8:8443": call these
//                              instead of the name's addresses (turns
//                              BALANCING on)
//   RE_RESOLVE_EVERY           a duration, 1s to 24h: the name resolved again
//   OUTLIER_CONSECUTIVE_FAILURES  failures in a row that eject an endpoint
//                              (0: never)
//   OUTLIER_BASE_EJECTION      a duration: the first ejection's length
//                              (the longest is 5 min, or this if longer)
//   HEDGING                    "on" or "off": a hedge after a delay for
//                              requests safe to send twice (docs/beyond-retries.md),
//                              "on" needs MAX_ATTEMPTS above 1 (a hedge is an attempt)
//   HEDGING_DELAY              a duration, 1ms to 1h (100ms)
//   HEDGING_PERCENTILE         0.5 to 0.999, or "off" (the delay only)
//   HEDGING_MAX_IN_FLIGHT      2 to 10 (2)
//   HEDGING_MAX_EXTRA          above 0, at most 1 (0.05): hedges per call
//
// Any other variable under PREFIX is an error that Finish names, with the
// variable it most likely misspells. TLS without CA_FILE trusts the
// system's roots. The classify function and the breaker policy are code,
// not variables.
//
// example: examples/headers/rpc.cc#rpc-settings
//   config::Resolver env(config::ProcessEnvironment());
//   rpc::Settings carts = config::ReadRpcSettings(env, "CARTS_", rpc::DefaultSettings());
//   if (auto read = env.Finish(); !read) return Exit(config::kExitConfig, read.error());
//
// Built into outbound::rpc (which links outbound::config), so a program
// without the gRPC client needs neither grpc++ nor this reader.
#ifndef OUTBOUND_CONFIG_RPC_SETTINGS_H_
#define OUTBOUND_CONFIG_RPC_SETTINGS_H_

#include <string>
#include <vector>

#include "outbound/config/resolver.h"
#include "outbound/rpc/settings.h"

namespace outbound::config {

// Reads every variable over `defaults`; failures go to `r`, whose Finish()
// reports them all. PREFIX + "ADDR" must be set unless `defaults.addr` is;
// TLS is on when PREFIX + "TLS" says so, or when it is unset and
// `defaults.tls` is set (the TLS files' defaults are then its). Claims
// `prefix` (with Resolver::ClaimPrefix) with every name RpcSettingsVariables
// gives.
rpc::Settings ReadRpcSettings(Resolver& r, const std::string& prefix, rpc::Settings defaults);

// The names of the variables ReadRpcSettings reads with `prefix`: those it
// knows under its prefix.
std::vector<std::string> RpcSettingsVariables(const std::string& prefix);

}  // namespace outbound::config

#endif  // OUTBOUND_CONFIG_RPC_SETTINGS_H_
