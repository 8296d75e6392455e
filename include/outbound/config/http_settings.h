// outbound/config/http_settings.h
//
// http::Settings sourced from variables named PREFIX + field, the ones the
// `outbound` command reads with PREFIX "OUTBOUND_":
//
//   TIMEOUT ATTEMPT_TIMEOUT MAX_ATTEMPTS BACKOFF_BASE BACKOFF_MAX
//   RETRY_BUDGET_MAX_TOKENS RETRY_BUDGET_TOKEN_RATIO BREAKER_WINDOW
//   BREAKER_PROBES BREAKER_OPEN_FOR BREAKER_PROBE_TIMEOUT
//   CA_FILE CERT_FILE KEY_FILE TRANSPORT
//
// Durations are written like "250ms" or "10s"; TRANSPORT is "curl" or
// "native". An https `base_url` without
// CA_FILE trusts the system's roots.
#ifndef OUTBOUND_CONFIG_HTTP_SETTINGS_H_
#define OUTBOUND_CONFIG_HTTP_SETTINGS_H_

#include <string>

#include "outbound/config/resolver.h"
#include "outbound/http/settings.h"

namespace outbound::config {

// Reads every variable into `defaults` (base_url is the caller's); failures
// go to `r`, whose Finish() reports them all.
http::Settings ReadHttpSettings(Resolver& r, const std::string& prefix, http::Settings defaults);

}  // namespace outbound::config

#endif  // OUTBOUND_CONFIG_HTTP_SETTINGS_H_
