// SPDX-License-Identifier: Apache-2.0
// outbound/telemetry/telemetry.h
//
// What a client reports through: a tracer, a meter provider and a logger,
// carried by the Runtime. Nothing global is read or set. Each is optional;
// null (the default) turns that signal off, and then it costs nothing.
//
// example: examples/headers/telemetry.cc#telemetry
//   telemetry::MetricStore metrics;
//   Runtime runtime;
//   runtime.telemetry.meters = &metrics;
//
// Whatever is set must outlive the clients built with it.
#ifndef OUTBOUND_TELEMETRY_TELEMETRY_H_
#define OUTBOUND_TELEMETRY_TELEMETRY_H_

#include "outbound/telemetry/log.h"
#include "outbound/telemetry/metrics.h"
#include "outbound/telemetry/trace.h"

namespace outbound::telemetry {

struct Telemetry {
  Tracer* tracer = nullptr;
  MeterProvider* meters = nullptr;
  Logger* logger = nullptr;
};

}  // namespace outbound::telemetry

#endif  // OUTBOUND_TELEMETRY_TELEMETRY_H_
