// SPDX-License-Identifier: Apache-2.0
// What `outbound bench` measures and prints, for HTTP and gRPC calls alike.
#ifndef OUTBOUND_TOOLS_OUTBOUND_BENCH_H_
#define OUTBOUND_TOOLS_OUTBOUND_BENCH_H_

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "outbound/telemetry/trace.h"

namespace outbound::tool {

// Spans as a tracing backend would receive them, counted and let go.
class CountingProcessor final : public telemetry::SpanProcessor {
 public:
  void OnEnd(telemetry::SpanData&&) override { spans.fetch_add(1, std::memory_order_relaxed); }
  std::atomic<long> spans{0};
};

// User and system CPU time of this process so far, in seconds.
double CpuSeconds();

// This process's resident set now, in KiB.
long RssKb();

// One run's figures.
struct BenchFigures {
  long calls = 0;
  int concurrency = 0;
  double seconds = 0;
  std::vector<double> latencies_ms;  // one per call, in any order
  long ok = 0;
  std::map<std::string, long> errors;  // by kind (HTTP) or status (gRPC)
  long attempts = 0;
  long transitions = 0;  // the breaker's
  bool telemetry = false;
  long spans = 0;
  double cpu_seconds = 0;
  std::vector<long> rss_samples;
};

// Prints the figures (calls/s, latency percentiles, errors, attempts per
// call, breaker transitions, CPU per call, peak RSS) to stdout, and as JSON
// to json_path ("-": stdout; empty: nowhere). Sorts latencies_ms. Returns
// the exit code: 0 when no call failed, 1 otherwise.
int ReportBench(BenchFigures& figures, const std::string& json_path);

}  // namespace outbound::tool

#endif  // OUTBOUND_TOOLS_OUTBOUND_BENCH_H_
