// SPDX-License-Identifier: Apache-2.0
// outbound/telemetry/metric_store.h
//
// The library's MeterProvider: aggregates every instrument in memory
// (counters as running sums, a negative or NaN value dropped; histograms
// as bucket counts, a NaN or infinite value dropped, the count their sum;
// gauges read at collection) and hands out a snapshot on `Collect`. Readers are the test
// kit (testing::InMemoryTelemetry), the Prometheus exposer
// (outbound/telemetry/prometheus.h) and the OTLP exporter.
//
// example: examples/headers/telemetry.cc#metric-store
//   telemetry::MetricStore metrics;
//   runtime.telemetry.meters = &metrics;
//   // ...
//   for (const telemetry::MetricData& metric : metrics.Collect()) std::cout << metric.name << "\n";
#ifndef OUTBOUND_TELEMETRY_METRIC_STORE_H_
#define OUTBOUND_TELEMETRY_METRIC_STORE_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "outbound/telemetry/metrics.h"

namespace outbound::telemetry {

enum class InstrumentKind { kCounter, kHistogram, kGauge };

// One attribute set's value at collection.
struct DataPoint {
  Attributes attributes;  // sorted by key
  double value = 0;       // counter: the sum; gauge: the value observed
  // Histogram only.
  std::vector<std::uint64_t> bucket_counts;  // boundaries.size() + 1 buckets
  std::uint64_t count = 0;
  double sum = 0;
};

struct MetricData {
  std::string scope;
  std::string name;
  std::string unit;
  std::string description;
  InstrumentKind kind = InstrumentKind::kCounter;
  std::vector<double> boundaries;  // histogram only
  std::vector<DataPoint> points;
};

class MetricStore final : public MeterProvider {
 public:
  MetricStore();
  ~MetricStore() override;
  MetricStore(const MetricStore&) = delete;
  MetricStore& operator=(const MetricStore&) = delete;

  std::shared_ptr<Counter> CreateCounter(const InstrumentDescriptor& descriptor) override;
  std::shared_ptr<Histogram> CreateHistogram(const InstrumentDescriptor& descriptor,
                                             std::span<const double> boundaries) override;
  std::unique_ptr<GaugeRegistration> AddObservableGauge(
      const InstrumentDescriptor& descriptor, std::function<void(Observations&)> observe) override;

  // Every instrument's points now (cumulative since the store was made),
  // gauges read by running their callbacks. Instruments in creation order.
  std::vector<MetricData> Collect() const;

  struct Instrument;
  struct Gauge;

 private:
  std::shared_ptr<Instrument> Find(const InstrumentDescriptor& descriptor, InstrumentKind kind,
                                   std::span<const double> boundaries);
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<Instrument>> instruments_;
};

}  // namespace outbound::telemetry

#endif  // OUTBOUND_TELEMETRY_METRIC_STORE_H_
