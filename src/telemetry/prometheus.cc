// SPDX-License-Identifier: Apache-2.0
#include "outbound/telemetry/prometheus.h"

#include <prometheus/collectable.h>
#include <prometheus/exposer.h>
#include <prometheus/metric_family.h>

#include <algorithm>
#include <exception>
#include <map>
#include <string_view>
#include <vector>

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

// A point's labels: its attributes, then its instrument's scope, so the
// same instrument of two scopes (an HTTP and a gRPC client both count
// breaker transitions) gives two series of one family.
std::vector<prometheus::ClientMetric::Label> Labels(const Attributes& attributes,
                                                    const std::string& scope) {
  std::vector<prometheus::ClientMetric::Label> labels;
  labels.reserve(attributes.size() + 1);
  for (const Attribute& attribute : attributes) {
    // An empty key makes no label name ("{=" breaks the page): left out.
    if (attribute.key.text().empty()) continue;
    std::string name = Sanitize(attribute.key);
    // Keys that sanitise alike ("a.b", "a_b") are one label, their values
    // joined with ";" in the keys' order (OpenTelemetry's mapping): a name
    // twice breaks the page.
    auto same = std::find_if(labels.begin(), labels.end(),
                             [&](const auto& label) { return label.name == name; });
    if (same != labels.end()) {
      same->value += ";" + ToString(attribute.value);
    } else {
      labels.push_back({std::move(name), ToString(attribute.value)});
    }
  }
  labels.push_back({"otel_scope_name", scope});
  return labels;
}

// HELP text as the format wants it: a backslash and a line feed escaped
// (prometheus-cpp writes it as given).
std::string HelpText(std::string_view description) {
  std::string out;
  out.reserve(description.size());
  for (char c : description) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

prometheus::MetricType TypeOf(InstrumentKind kind) {
  switch (kind) {
    case InstrumentKind::kCounter:
      return prometheus::MetricType::Counter;
    case InstrumentKind::kGauge:
      return prometheus::MetricType::Gauge;
    case InstrumentKind::kHistogram:
      break;
  }
  return prometheus::MetricType::Histogram;
}

// Adds `more` into `into`, two series of one family with the same labels:
// the format allows a series once. Counts add up (two counters, two
// histograms of the same buckets); a gauge, or histograms of other
// buckets, cannot be summed, and the later one is left out.
void Merge(prometheus::MetricType type, prometheus::ClientMetric& into,
           const prometheus::ClientMetric& more) {
  if (type == prometheus::MetricType::Counter) into.counter.value += more.counter.value;
  if (type != prometheus::MetricType::Histogram) return;
  auto& buckets = into.histogram.bucket;
  const auto& other = more.histogram.bucket;
  bool same = buckets.size() == other.size();
  for (std::size_t i = 0; same && i < buckets.size(); ++i) {
    same = buckets[i].upper_bound == other[i].upper_bound;
  }
  if (!same) return;
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    buckets[i].cumulative_count += other[i].cumulative_count;
  }
  into.histogram.sample_count += more.histogram.sample_count;
  into.histogram.sample_sum += more.histogram.sample_sum;
}

class StoreCollectable final : public prometheus::Collectable {
 public:
  explicit StoreCollectable(const MetricStore& store) : store_(store) {}

  // One family per name, whatever scopes record it: the format allows one
  // HELP and TYPE per name. An instrument of another kind under a name
  // already taken is left out (its points would be read as the other's).
  // Series that come out alike (names or keys that sanitise alike: "a.b",
  // "a_b") are merged into one (Merge).
  std::vector<prometheus::MetricFamily> Collect() const override {
    using LabelSet = std::vector<prometheus::ClientMetric::Label>;
    std::vector<prometheus::MetricFamily> families;
    std::map<std::string, std::size_t, std::less<>> by_name;
    // Per family, where each set of labels (sorted by name: keys that
    // sanitise alike may sort apart) is in it.
    std::vector<std::map<LabelSet, std::size_t>> series;
    for (const MetricData& metric : store_.Collect()) {
      std::string name = PrometheusName(metric);
      auto [at, added] = by_name.try_emplace(name, families.size());
      if (added) {
        series.emplace_back();
        prometheus::MetricFamily& made = families.emplace_back();
        made.name = std::move(name);
        made.help = HelpText(metric.description);
        made.type = TypeOf(metric.kind);
      }
      prometheus::MetricFamily& family = families[at->second];
      if (family.type != TypeOf(metric.kind)) continue;
      for (const DataPoint& point : metric.points) {
        prometheus::ClientMetric m;
        m.label = Labels(point.attributes, metric.scope);
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
        LabelSet sorted = m.label;
        std::sort(sorted.begin(), sorted.end());
        auto [place, first] =
            series[at->second].try_emplace(std::move(sorted), family.metric.size());
        if (first) {
          family.metric.push_back(std::move(m));
        } else {
          Merge(family.type, family.metric[place->second], m);
        }
      }
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
