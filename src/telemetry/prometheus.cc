// SPDX-License-Identifier: Apache-2.0
#include "outbound/telemetry/prometheus.h"

#include <prometheus/collectable.h>
#include <prometheus/exposer.h>
#include <prometheus/metric_family.h>

#include <exception>

namespace outbound::telemetry {
namespace {

std::string Sanitize(std::string_view name) {
  std::string out(name);
  for (char& c : out) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) c = '_';
  }
  if (!out.empty() && out[0] >= '0' && out[0] <= '9') out.insert(out.begin(), '_');
  return out;
}

std::vector<prometheus::ClientMetric::Label> Labels(const Attributes& attributes) {
  std::vector<prometheus::ClientMetric::Label> labels;
  labels.reserve(attributes.size());
  for (const Attribute& attribute : attributes) {
    labels.push_back({Sanitize(attribute.key), ToString(attribute.value)});
  }
  return labels;
}

class StoreCollectable final : public prometheus::Collectable {
 public:
  explicit StoreCollectable(const MetricStore& store) : store_(store) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    std::vector<prometheus::MetricFamily> families;
    for (const MetricData& metric : store_.Collect()) {
      prometheus::MetricFamily family;
      family.name = PrometheusName(metric);
      family.help = metric.description;
      switch (metric.kind) {
        case InstrumentKind::kCounter:
          family.type = prometheus::MetricType::Counter;
          break;
        case InstrumentKind::kGauge:
          family.type = prometheus::MetricType::Gauge;
          break;
        case InstrumentKind::kHistogram:
          family.type = prometheus::MetricType::Histogram;
          break;
      }
      for (const DataPoint& point : metric.points) {
        prometheus::ClientMetric m;
        m.label = Labels(point.attributes);
        if (metric.kind == InstrumentKind::kCounter) m.counter.value = point.value;
        if (metric.kind == InstrumentKind::kGauge) m.gauge.value = point.value;
        if (metric.kind == InstrumentKind::kHistogram) {
          m.histogram.sample_count = point.count;
          m.histogram.sample_sum = point.sum;
          std::uint64_t cumulative = 0;
          for (std::size_t i = 0; i < point.bucket_counts.size(); ++i) {
            cumulative += point.bucket_counts[i];
            double bound = i < metric.boundaries.size() ? metric.boundaries[i]
                                                        : std::numeric_limits<double>::infinity();
            m.histogram.bucket.push_back({cumulative, bound});
          }
        }
        family.metric.push_back(std::move(m));
      }
      families.push_back(std::move(family));
    }
    return families;
  }

 private:
  const MetricStore& store_;
};

}  // namespace

std::string PrometheusName(const MetricData& metric) {
  std::string name = Sanitize(metric.name);
  auto suffix = [&](std::string_view s) {
    if (name.size() < s.size() || name.compare(name.size() - s.size(), s.size(), s) != 0) {
      name += s;
    }
  };
  if (metric.unit == "s") suffix("_seconds");
  if (metric.unit == "By") suffix("_bytes");
  if (metric.kind == InstrumentKind::kCounter) suffix("_total");
  return name;
}

std::shared_ptr<prometheus::Collectable> MakePrometheusCollectable(const MetricStore& store) {
  return std::make_shared<StoreCollectable>(store);
}

Result<std::unique_ptr<PrometheusExposer>> PrometheusExposer::Start(const MetricStore& store,
                                                                    const std::string& address) {
  std::unique_ptr<PrometheusExposer> exposer(new PrometheusExposer());
  try {
    exposer->exposer_ = std::make_unique<prometheus::Exposer>(address, /*num_threads=*/1);
  } catch (const std::exception& e) {
    return Fail(ErrorKind::kInvalidSettings,
                "cannot serve Prometheus metrics on " + address + ": " + e.what());
  }
  exposer->collectable_ = MakePrometheusCollectable(store);
  exposer->exposer_->RegisterCollectable(exposer->collectable_);
  return exposer;
}

PrometheusExposer::~PrometheusExposer() {
  if (exposer_) exposer_->RemoveCollectable(collectable_);
}

int PrometheusExposer::port() const {
  auto ports = exposer_->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

}  // namespace outbound::telemetry
