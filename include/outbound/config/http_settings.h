// SPDX-License-Identifier: Apache-2.0
// outbound/config/http_settings.h
//
// http::Settings sourced from variables named PREFIX + field, one per
// sourced field of the settings table:
//
//   URL                        base_url ("https://payments:8443")
//   TIMEOUT ATTEMPT_TIMEOUT    durations, written like "250ms", "10s", "1m30s"
//   MAX_ATTEMPTS BACKOFF_BASE BACKOFF_MAX
//   RETRY_BUDGET_MAX_TOKENS RETRY_BUDGET_TOKEN_RATIO
//   RETRY_BUDGET_MIN_PER_SECOND  retries a second the budget always allows; 0 off
//   BREAKER_WINDOW BREAKER_PROBES BREAKER_OPEN_FOR BREAKER_PROBE_TIMEOUT
//   BREAKER_INITIAL_OPEN_FOR BREAKER_CALLS_PER_PROBE
//   BREAKER_SLOW_CALL          a duration; "0s" turns the slow-call rule off
//   MAX_RESPONSE_BYTES MAX_ERROR_RESPONSE_BYTES MAX_CONNECTIONS
//   CA_FILE CERT_FILE KEY_FILE  paths of PEM files, for an https URL (an error
//                              beside an http one: plain text by accident)
//   RATE_LIMIT                 "50/s", "50/s,10" (a burst of 10) or "off"
//   BULKHEAD                   "64" (calls in flight), "64,16,50ms" (16 more
//                              waiting 50ms at most) or "off"
//   ADAPTIVE_CONCURRENCY       "on" or "off": a limit on calls in flight that
//                              follows the latency (docs/beyond-retries.md)
//   ADAPTIVE_CONCURRENCY_INITIAL_LIMIT ADAPTIVE_CONCURRENCY_MIN_LIMIT
//   ADAPTIVE_CONCURRENCY_MAX_LIMIT  1 to 100000, min <= initial <= max
//   ADAPTIVE_CONCURRENCY_SAMPLE_WINDOW  a duration, 1ms to 1m
//   HEDGING                    "on" or "off": a hedge after a delay for
//                              requests safe to send twice (docs/beyond-retries.md),
//                              "on" needs MAX_ATTEMPTS above 1 (a hedge is an attempt)
//   HEDGING_DELAY              a duration, 1ms to 1h (100ms)
//   HEDGING_PERCENTILE         0.5 to 0.999, or "off" (the delay only)
//   HEDGING_MAX_IN_FLIGHT      2 to 10 (2)
//   HEDGING_MAX_EXTRA          above 0, at most 1 (0.05): hedges per call
//   FAULTS                     "on" or "off": failure injection
//                              (docs/failure-injection.md)
//   GZIP                       "on" or "off": ask for gzip, decode it
//   HTTP2_PRIOR_KNOWLEDGE      "on" or "off": HTTP/2 without TLS (h2c), for
//                              an http URL
//   MAX_CONNECTION_AGE         a duration ("30m") or "off": a connection
//                              older is drained (docs/replicas.md)
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
//
// Any other variable under PREFIX is an error that Finish names, with the
// variable it most likely misspells ("PAYMENTS_TIMOUT: not a setting; did
// you mean PAYMENTS_TIMEOUT?"): a program that reads variables of its own
// under the prefix reads them with the same Resolver, before Finish.
//
// example: examples/headers/config.cc#http-settings
//   config::Resolver env(config::ProcessEnvironment());
//   http::Settings payments = config::ReadHttpSettings(env, "PAYMENTS_", http::DefaultSettings());
//   if (auto read = env.Finish(); !read) return Exit(config::kExitConfig, read.error());
//
// TRANSPORT, which once chose libcurl, is refused: the library has
// one transport now. An https URL without CA_FILE trusts the system's roots. A file that is
// not PEM is named by its path. The classify function, the breaker policy
// and the observers are code, not variables.
#ifndef OUTBOUND_CONFIG_HTTP_SETTINGS_H_
#define OUTBOUND_CONFIG_HTTP_SETTINGS_H_

#include <string>
#include <vector>

#include "outbound/config/resolver.h"
#include "outbound/http/settings.h"

namespace outbound::config {

// Reads every variable over `defaults`; failures go to `r`, whose Finish()
// reports them all. PREFIX + "URL" must be set unless `defaults.base_url`
// is; the TLS files' defaults are `defaults.tls`'s. Claims `prefix` (with
// Resolver::ClaimPrefix) with every name HttpSettingsVariables gives.
http::Settings ReadHttpSettings(Resolver& r, const std::string& prefix, http::Settings defaults);

// Parsers for the TLS files: a path's contents when they are PEM holding a
// certificate (a private key); otherwise an error naming the path and what
// is wrong ("is not PEM", "holds no certificate in PEM", "cannot read").
[[nodiscard]] Result<std::string> ReadCertificateFile(const std::string& path);
[[nodiscard]] Result<std::string> ReadPrivateKeyFile(const std::string& path);

// The names of the variables ReadHttpSettings reads with `prefix`: those
// it knows under its prefix.
std::vector<std::string> HttpSettingsVariables(const std::string& prefix);

}  // namespace outbound::config

#endif  // OUTBOUND_CONFIG_HTTP_SETTINGS_H_
