// SPDX-License-Identifier: Apache-2.0
// The in-memory aggregation behind every metrics reader. Recording looks
// its attribute set up under a shared lock and adds with atomics, so the
// hot path allocates nothing and threads do not queue once a set is known.
#include "outbound/telemetry/metric_store.h"

#include <algorithm>
#include <atomic>
#include <shared_mutex>
#include <unordered_map>

namespace outbound::telemetry {
namespace {

// Attribute sets are identified sorted by key, so {a, b} and {b, a} are one
// series. More than this many attributes on one point are not supported.
constexpr std::size_t kMaxAttributes = 16;

struct SortedView {
  std::array<const KeyValue*, kMaxAttributes> items{};
  std::size_t size = 0;
};

SortedView Sort(std::span<const KeyValue> attributes) {
  SortedView view;
  for (const KeyValue& attribute : attributes) {
    if (view.size == kMaxAttributes) break;
    std::size_t i = view.size++;
    while (i > 0 && view.items[i - 1]->key > attribute.key) {
      view.items[i] = view.items[i - 1];
      --i;
    }
    view.items[i] = &attribute;
  }
  return view;
}

std::uint64_t Mix(std::uint64_t hash, std::string_view bytes) {
  for (unsigned char c : bytes) hash = (hash ^ c) * 0x100000001b3ULL;  // FNV-1a
  return hash;
}

std::uint64_t Hash(const SortedView& view) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (std::size_t i = 0; i < view.size; ++i) {
    // A key's length, not its bytes: keys are few and fixed, so the values
    // tell sets apart, and Same() settles any collision.
    hash = (hash ^ view.items[i]->key.size()) * 0x100000001b3ULL;
    hash = std::visit(
        [hash](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::string_view>) {
            return Mix(hash * 31 + 3, v);
          } else {
            return Mix(hash * 31 + sizeof(T),
                       std::string_view(reinterpret_cast<const char*>(&v), sizeof v));
          }
        },
        view.items[i]->value);
  }
  return hash;
}

bool SameValue(const Value& owned, const ValueView& view) {
  if (owned.index() != view.index()) return false;
  if (const auto* s = std::get_if<std::string>(&owned))
    return *s == std::get<std::string_view>(view);
  if (const auto* b = std::get_if<bool>(&owned)) return *b == std::get<bool>(view);
  if (const auto* i = std::get_if<std::int64_t>(&owned)) return *i == std::get<std::int64_t>(view);
  return std::get<double>(owned) == std::get<double>(view);
}

bool Same(const Attributes& owned, const SortedView& view) {
  if (owned.size() != view.size) return false;
  for (std::size_t i = 0; i < view.size; ++i) {
    if (owned[i].key != view.items[i]->key || !SameValue(owned[i].value, view.items[i]->value)) {
      return false;
    }
  }
  return true;
}

Attributes Own(const SortedView& view) {
  Attributes owned;
  owned.reserve(view.size);
  for (std::size_t i = 0; i < view.size; ++i) owned.push_back(telemetry::Own(*view.items[i]));
  return owned;
}

void AtomicAdd(std::atomic<double>& target, double value) {
  double current = target.load(std::memory_order_relaxed);
  while (!target.compare_exchange_weak(current, current + value, std::memory_order_relaxed)) {
  }
}

// Gauge observations of one collection, summed per attribute set.
class Collected final : public Observations {
 public:
  void Observe(double value, std::span<const KeyValue> attributes) override {
    SortedView view = Sort(attributes);
    for (DataPoint& point : points) {
      if (Same(point.attributes, view)) {
        point.value += value;
        return;
      }
    }
    points.push_back(DataPoint{.attributes = Own(view), .value = value});
  }
  std::vector<DataPoint> points;
};

}  // namespace

struct MetricStore::Gauge final : GaugeRegistration {
  Gauge(std::shared_ptr<Instrument> i, std::function<void(Observations&)> o)
      : instrument(std::move(i)), observe(std::move(o)) {}
  ~Gauge() override;
  std::shared_ptr<Instrument> instrument;
  std::function<void(Observations&)> observe;
};

struct MetricStore::Instrument final : Counter, Histogram {
  struct Series {
    Attributes attributes;
    std::atomic<double> value{0};
    std::vector<std::atomic<std::uint64_t>> buckets;
    std::atomic<std::uint64_t> count{0};
    std::atomic<double> sum{0};
  };

  std::string scope, name, unit, description;
  InstrumentKind kind;
  std::vector<double> boundaries;

  std::shared_mutex mu;
  std::unordered_multimap<std::uint64_t, std::unique_ptr<Series>> series;
  std::vector<Series*> order;  // for collection, in order of first use

  std::mutex gauges_mu;  // held while a collection runs the callbacks
  std::vector<Gauge*> gauges;

  Series& Lookup(std::span<const KeyValue> attributes) {
    SortedView view = Sort(attributes);
    std::uint64_t hash = Hash(view);
    {
      std::shared_lock lock(mu);
      auto [first, last] = series.equal_range(hash);
      for (auto it = first; it != last; ++it) {
        if (Same(it->second->attributes, view)) return *it->second;
      }
    }
    std::unique_lock lock(mu);
    auto [first, last] = series.equal_range(hash);
    for (auto it = first; it != last; ++it) {
      if (Same(it->second->attributes, view)) return *it->second;
    }
    auto made = std::make_unique<Series>();
    made->attributes = Own(view);
    if (kind == InstrumentKind::kHistogram) {
      made->buckets = std::vector<std::atomic<std::uint64_t>>(boundaries.size() + 1);
    }
    Series& added = *made;
    series.emplace(hash, std::move(made));
    order.push_back(&added);
    return added;
  }

  void Add(double value, std::span<const KeyValue> attributes) override {
    if (!(value >= 0)) return;  // a counter only grows
    AtomicAdd(Lookup(attributes).value, value);
  }

  void Record(double value, std::span<const KeyValue> attributes) override {
    Series& s = Lookup(attributes);
    std::size_t bucket =
        std::lower_bound(boundaries.begin(), boundaries.end(), value) - boundaries.begin();
    s.buckets[bucket].fetch_add(1, std::memory_order_relaxed);
    s.count.fetch_add(1, std::memory_order_relaxed);
    AtomicAdd(s.sum, value);
  }

  MetricData Snapshot() {
    MetricData data{scope, name, unit, description, kind, boundaries, {}};
    if (kind == InstrumentKind::kGauge) {
      Collected collected;
      std::lock_guard lock(gauges_mu);
      for (Gauge* gauge : gauges) gauge->observe(collected);
      data.points = std::move(collected.points);
      return data;
    }
    std::shared_lock lock(mu);
    for (Series* s : order) {
      DataPoint point{.attributes = s->attributes, .value = s->value.load()};
      if (kind == InstrumentKind::kHistogram) {
        for (auto& bucket : s->buckets) point.bucket_counts.push_back(bucket.load());
        point.count = s->count.load();
        point.sum = s->sum.load();
      }
      data.points.push_back(std::move(point));
    }
    return data;
  }
};

MetricStore::Gauge::~Gauge() {
  std::lock_guard lock(instrument->gauges_mu);
  std::erase(instrument->gauges, this);
}

MetricStore::MetricStore() = default;
MetricStore::~MetricStore() = default;

std::shared_ptr<MetricStore::Instrument> MetricStore::Find(const InstrumentDescriptor& descriptor,
                                                           InstrumentKind kind,
                                                           std::span<const double> boundaries) {
  std::lock_guard lock(mu_);
  for (const auto& instrument : instruments_) {
    if (instrument->scope == descriptor.scope && instrument->name == descriptor.name &&
        instrument->kind == kind) {
      return instrument;
    }
  }
  auto made = std::make_shared<Instrument>();
  made->scope = descriptor.scope;
  made->name = descriptor.name;
  made->unit = descriptor.unit;
  made->description = descriptor.description;
  made->kind = kind;
  made->boundaries.assign(boundaries.begin(), boundaries.end());
  instruments_.push_back(made);
  return made;
}

std::shared_ptr<Counter> MetricStore::CreateCounter(const InstrumentDescriptor& descriptor) {
  return Find(descriptor, InstrumentKind::kCounter, {});
}

std::shared_ptr<Histogram> MetricStore::CreateHistogram(const InstrumentDescriptor& descriptor,
                                                        std::span<const double> boundaries) {
  return Find(descriptor, InstrumentKind::kHistogram, boundaries);
}

std::unique_ptr<GaugeRegistration> MetricStore::AddObservableGauge(
    const InstrumentDescriptor& descriptor, std::function<void(Observations&)> observe) {
  auto instrument = Find(descriptor, InstrumentKind::kGauge, {});
  auto gauge = std::make_unique<Gauge>(instrument, std::move(observe));
  std::lock_guard lock(instrument->gauges_mu);
  instrument->gauges.push_back(gauge.get());
  return gauge;
}

std::vector<MetricData> MetricStore::Collect() const {
  std::vector<std::shared_ptr<Instrument>> instruments;
  {
    std::lock_guard lock(mu_);
    instruments = instruments_;
  }
  std::vector<MetricData> collected;
  collected.reserve(instruments.size());
  for (const auto& instrument : instruments) collected.push_back(instrument->Snapshot());
  return collected;
}

}  // namespace outbound::telemetry
