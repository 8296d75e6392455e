// SPDX-License-Identifier: Apache-2.0
// outbound/telemetry/metrics.h
//
// Metrics, shaped like OpenTelemetry's API: counters, histograms and
// observable gauges (read at collection time), each named with a scope, a
// unit and a description, recorded with attributes.
//
// The library's own implementation is `MetricStore` (metric_store.h), which
// aggregates in memory and is read by the in-memory test kit, the Prometheus
// exposer and the OTLP exporter. No MeterProvider is the default, and then
// nothing is recorded.
#ifndef OUTBOUND_TELEMETRY_METRICS_H_
#define OUTBOUND_TELEMETRY_METRICS_H_

#include <array>
#include <functional>
#include <memory>
#include <span>
#include <string_view>

#include "outbound/telemetry/attributes.h"

namespace outbound::telemetry {

struct InstrumentDescriptor {
  std::string_view scope;  // e.g. "outbound.http"
  std::string_view name;   // e.g. "outbound.circuit.transitions"
  std::string_view unit;   // UCUM: "s", "By", or a {annotation}
  std::string_view description;
};

// One attribute set's series of a Counter, fixed (Counter::BindCounter): an Add
// on it looks nothing up. Thread-safe; valid while its Counter is.
class BoundCounter {
 public:
  virtual ~BoundCounter() = default;
  // `value` must not be negative.
  virtual void Add(double value) = 0;
};

// Implementations are thread-safe and allocate nothing once an attribute
// set has been seen.
class Counter {
 public:
  virtual ~Counter() = default;
  // `value` must not be negative.
  virtual void Add(double value, std::span<const KeyValue> attributes) = 0;
  // The series of `attributes` (copied), for a caller that adds to one set
  // often. The default keeps the set and adds through Add(value,
  // attributes); MetricStore finds the series once. Named apart from
  // Histogram::BindHistogram, so one class may be both and override both.
  virtual std::unique_ptr<BoundCounter> BindCounter(std::span<const KeyValue> attributes);
};

// One attribute set's series of a Histogram, fixed (Histogram::BindHistogram): a
// record on it looks nothing up. Thread-safe; valid while its Histogram is.
class BoundHistogram {
 public:
  virtual ~BoundHistogram() = default;
  virtual void Record(double value) = 0;
};

class Histogram {
 public:
  virtual ~Histogram() = default;
  virtual void Record(double value, std::span<const KeyValue> attributes) = 0;
  // The series of `attributes` (copied), for a caller that records one set
  // often. The default keeps the set and records through Record(value,
  // attributes); MetricStore finds the series once.
  virtual std::unique_ptr<BoundHistogram> BindHistogram(std::span<const KeyValue> attributes);
};

// What an observable gauge's callback reports its values to.
class Observations {
 public:
  virtual void Observe(double value, std::span<const KeyValue> attributes) = 0;

 protected:
  ~Observations() = default;
};

// Keeps an observable gauge's callback registered; destroying it removes
// the callback (and waits for a collection running it to finish).
class GaugeRegistration {
 public:
  virtual ~GaugeRegistration() = default;
};

// Creates instruments. The same scope and name twice give the same
// instrument. Thread-safe.
class MeterProvider {
 public:
  virtual ~MeterProvider() = default;
  virtual std::shared_ptr<Counter> CreateCounter(const InstrumentDescriptor& descriptor) = 0;
  // `boundaries`: the buckets' upper bounds, ascending.
  virtual std::shared_ptr<Histogram> CreateHistogram(const InstrumentDescriptor& descriptor,
                                                     std::span<const double> boundaries) = 0;
  // `observe` runs at each collection, on the collecting thread; values
  // observed with the same attributes in one collection add up (two
  // clients of one dependency: closed 2).
  virtual std::unique_ptr<GaugeRegistration> AddObservableGauge(
      const InstrumentDescriptor& descriptor, std::function<void(Observations&)> observe) = 0;
};

// OpenTelemetry's bucket boundaries for HTTP durations, in seconds.
inline constexpr std::array<double, 14> kDurationBuckets = {
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10};
// OpenTelemetry's default histogram boundaries, used for sizes in bytes.
inline constexpr std::array<double, 15> kDefaultBuckets = {
    0, 5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000};

}  // namespace outbound::telemetry

#endif  // OUTBOUND_TELEMETRY_METRICS_H_
