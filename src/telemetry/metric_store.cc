// SPDX-License-Identifier: Apache-2.0
// The in-memory aggregation behind every metrics reader. Recording looks
// its attribute set up in a table read without a lock and adds with
// atomics, so the hot path allocates nothing and threads do not queue once
// a set is known.
#include "outbound/telemetry/metric_store.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>

namespace outbound::telemetry {
namespace {

// Attribute sets are identified sorted by key, so {a, b} and {b, a} are one
// series. More than this many attributes on one point are not supported.
constexpr std::size_t kMaxAttributes = 16;

struct SortedView {
  std::array<const KeyValue*, kMaxAttributes> items{};
  std::size_t size = 0;
};

std::uint64_t Load(const char* bytes) {
  std::uint64_t word;
  std::memcpy(&word, bytes, sizeof word);
  return word;
}

// Keys and values are short: compared here eight bytes at a time, they cost
// less than the calls to memcmp that std::string_view's operators make.
// Inline, as SameValue is: a recording compares a dozen, and a call cost
// about as much as a comparison.
inline bool Equal(std::string_view a, std::string_view b) {
  std::size_t n = a.size();
  if (n != b.size()) return false;
  if (n < 8) {
    for (std::size_t i = 0; i < n; ++i) {
      if (a[i] != b[i]) return false;
    }
    return true;
  }
  for (std::size_t i = 0; i + 8 <= n; i += 8) {
    if (Load(a.data() + i) != Load(b.data() + i)) return false;
  }
  return Load(a.data() + n - 8) == Load(b.data() + n - 8);
}

// a < b as std::string_view orders them.
bool KeyLess(std::string_view a, std::string_view b) {
  std::size_t n = std::min(a.size(), b.size());
  std::size_t i = 0;
  while (i + 8 <= n && Load(a.data() + i) == Load(b.data() + i)) i += 8;
  for (; i < n; ++i) {
    if (a[i] != b[i]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[i]);
  }
  return a.size() < b.size();
}

SortedView Sort(std::span<const KeyValue> attributes) {
  SortedView view;
  for (const KeyValue& attribute : attributes) {
    if (view.size == kMaxAttributes) break;
    std::size_t i = view.size++;
    while (i > 0 && KeyLess(attribute.key, view.items[i - 1]->key)) {
      view.items[i] = view.items[i - 1];
      --i;
    }
    view.items[i] = &attribute;
  }
  return view;
}

std::uint64_t Mix(std::uint64_t hash, std::uint64_t word) {
  hash = (hash ^ word) * 0x9e3779b97f4a7c15ULL;
  return hash ^ (hash >> 29);
}

// Eight bytes at a time: a value is a method, a host, a version or a number.
std::uint64_t MixBytes(std::uint64_t hash, std::string_view bytes) {
  std::size_t n = bytes.size();
  if (n >= 8) {
    for (std::size_t i = 0; i + 8 <= n; i += 8) hash = Mix(hash, Load(bytes.data() + i));
    return Mix(hash, Load(bytes.data() + n - 8) ^ n);  // the last eight, overlapping
  }
  std::uint64_t tail = n;
  for (char c : bytes) tail = tail << 8 | static_cast<unsigned char>(c);
  return Mix(hash, tail);
}

std::uint64_t Hash(const SortedView& view) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (std::size_t i = 0; i < view.size; ++i) {
    // A key's length, not its bytes: keys are few and fixed, so the values
    // tell sets apart, and Same() settles any collision.
    const ValueView& value = view.items[i]->value;
    hash = Mix(hash, view.items[i]->key.text().size() << 8 | value.index());
    if (const auto* s = std::get_if<std::string_view>(&value)) {
      hash = MixBytes(hash, *s);
    } else if (const auto* b = std::get_if<bool>(&value)) {
      hash = Mix(hash, *b ? 1 : 0);
    } else if (const auto* n = std::get_if<std::int64_t>(&value)) {
      hash = Mix(hash, static_cast<std::uint64_t>(*n));
    } else {
      hash = Mix(hash, std::bit_cast<std::uint64_t>(std::get<double>(value)));
    }
  }
  return hash;
}

// The alternatives line up (bool, integer, double, text), so one index
// tells which to compare, with no std::get to check it again.
static_assert(std::is_same_v<std::variant_alternative_t<0, ValueView>, bool> &&
              std::is_same_v<std::variant_alternative_t<1, ValueView>, std::int64_t> &&
              std::is_same_v<std::variant_alternative_t<2, ValueView>, double> &&
              std::is_same_v<std::variant_alternative_t<3, Value>, std::string>);
inline bool SameValue(const Value& owned, const ValueView& view) {
  if (owned.index() != view.index()) return false;
  switch (view.index()) {
    case 0:
      return *std::get_if<bool>(&owned) == *std::get_if<bool>(&view);
    case 1:
      return *std::get_if<std::int64_t>(&owned) == *std::get_if<std::int64_t>(&view);
    case 2:
      return *std::get_if<double>(&owned) == *std::get_if<double>(&view);
    default:
      return Equal(*std::get_if<std::string>(&owned), *std::get_if<std::string_view>(&view));
  }
}

bool Same(const Attributes& owned, const SortedView& view) {
  if (owned.size() != view.size) return false;
  for (std::size_t i = 0; i < view.size; ++i) {
    if (!Equal(owned[i].key, view.items[i]->key) ||
        !SameValue(owned[i].value, view.items[i]->value)) {
      return false;
    }
  }
  return true;
}

// Whether `attributes`, in the order given, are `owned`: a set recorded
// again as it was the first time, already sorted, is known without sorting
// or hashing it.
bool SameInOrder(const Attributes& owned, std::span<const KeyValue> attributes) {
  if (owned.size() != attributes.size()) return false;
  for (std::size_t i = 0; i < owned.size(); ++i) {
    if (!Equal(owned[i].key, attributes[i].key) ||
        !SameValue(owned[i].value, attributes[i].value)) {
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

struct MetricStore::Instrument final : Counter,
                                       Histogram,
                                       std::enable_shared_from_this<MetricStore::Instrument> {
  struct Series {
    std::uint64_t hash = 0;
    Attributes attributes;
    std::atomic<double> value{0};
    // The count is theirs summed: a scrape while a value is recorded then
    // never reads a count its buckets disagree with.
    std::vector<std::atomic<std::uint64_t>> buckets;
    std::atomic<double> sum{0};
  };

  std::string scope, name, unit, description;
  InstrumentKind kind;
  std::vector<double> boundaries;

  // The series by hash, open addressing, at most half full. Read without a
  // lock; a table is only ever replaced by a larger one holding every series
  // it held, so a reader still on an older table at worst misses a series
  // just added, and looks again under `mu`. Old tables live as long as the
  // instrument, since a reader may still be on one.
  struct Table {
    explicit Table(std::size_t size) : mask(size - 1), slots(new std::atomic<Series*>[size]()) {}
    std::size_t mask;
    std::unique_ptr<std::atomic<Series*>[]> slots;
  };
  static constexpr std::size_t kFirstTableSize = 8;

  std::mutex mu;  // held to add a series, and to read `series` at collection
  std::vector<std::unique_ptr<Series>> series;  // in order of first use
  std::vector<std::unique_ptr<Table>> tables;   // the current one last
  std::atomic<Table*> table{nullptr};
  // The series recorded into last: most recordings repeat the set before,
  // which one comparison then confirms.
  std::atomic<Series*> last{nullptr};

  std::mutex gauges_mu;  // held while a collection runs the callbacks
  std::vector<Gauge*> gauges;

  static Series* Probe(const Table* in, std::uint64_t hash, const SortedView& view) {
    if (in == nullptr) return nullptr;
    for (std::size_t i = hash & in->mask;; i = (i + 1) & in->mask) {
      Series* s = in->slots[i].load(std::memory_order_acquire);
      if (s == nullptr) return nullptr;
      if (s->hash == hash && Same(s->attributes, view)) return s;
    }
  }

  static void Insert(Table& into, Series* s) {
    std::size_t i = s->hash & into.mask;
    while (into.slots[i].load(std::memory_order_relaxed) != nullptr) i = (i + 1) & into.mask;
    into.slots[i].store(s, std::memory_order_release);
  }

  Series& Lookup(std::span<const KeyValue> attributes) {
    Series* recent = last.load(std::memory_order_acquire);
    if (recent != nullptr && SameInOrder(recent->attributes, attributes)) return *recent;
    Series& found = Find(attributes);
    last.store(&found, std::memory_order_release);
    return found;
  }

  Series& Find(std::span<const KeyValue> attributes) {
    SortedView view = Sort(attributes);
    std::uint64_t hash = Hash(view);
    if (Series* known = Probe(table.load(std::memory_order_acquire), hash, view)) return *known;
    std::lock_guard lock(mu);
    Table* current = table.load(std::memory_order_relaxed);
    if (Series* known = Probe(current, hash, view)) return *known;
    auto made = std::make_unique<Series>();
    made->hash = hash;
    made->attributes = Own(view);
    if (kind == InstrumentKind::kHistogram) {
      made->buckets = std::vector<std::atomic<std::uint64_t>>(boundaries.size() + 1);
    }
    Series& added = *made;
    series.push_back(std::move(made));
    std::size_t size = current == nullptr ? 0 : current->mask + 1;
    if (2 * series.size() > size) {
      auto grown = std::make_unique<Table>(std::max(kFirstTableSize, 2 * size));
      for (const auto& s : series) Insert(*grown, s.get());
      table.store(grown.get(), std::memory_order_release);
      tables.push_back(std::move(grown));
    } else {
      Insert(*current, &added);
    }
    return added;
  }

  void Add(double value, std::span<const KeyValue> attributes) override {
    if (!(value >= 0)) return;  // a counter only grows
    AtomicAdd(Lookup(attributes).value, value);
  }

  void Record(double value, std::span<const KeyValue> attributes) override {
    Into(Lookup(attributes), value);
  }

  void Into(Series& s, double value) const {
    // NaN has no bucket, and an infinity would make the sum one for good.
    if (!std::isfinite(value)) return;
    std::size_t bucket =
        std::lower_bound(boundaries.begin(), boundaries.end(), value) - boundaries.begin();
    s.buckets[bucket].fetch_add(1, std::memory_order_relaxed);
    AtomicAdd(s.sum, value);
  }

  // The one series, found once.
  std::unique_ptr<BoundHistogram> BindHistogram(std::span<const KeyValue> attributes) override;
  std::unique_ptr<BoundCounter> BindCounter(std::span<const KeyValue> attributes) override;

  MetricData Snapshot() {
    MetricData data{scope, name, unit, description, kind, boundaries, {}};
    if (kind == InstrumentKind::kGauge) {
      Collected collected;
      std::lock_guard lock(gauges_mu);
      for (Gauge* gauge : gauges) gauge->observe(collected);
      data.points = std::move(collected.points);
      return data;
    }
    std::lock_guard lock(mu);
    for (const auto& s : series) {
      DataPoint point{.attributes = s->attributes, .value = s->value.load()};
      if (kind == InstrumentKind::kHistogram) {
        for (auto& bucket : s->buckets) {
          point.bucket_counts.push_back(bucket.load());
          point.count += point.bucket_counts.back();
        }
        point.sum = s->sum.load();
      }
      data.points.push_back(std::move(point));
    }
    return data;
  }
};

namespace {

// A series found once: its instrument is kept alive with it.
class BoundSeries final : public BoundHistogram, public BoundCounter {
 public:
  using Series = MetricStore::Instrument::Series;
  BoundSeries(std::shared_ptr<MetricStore::Instrument> instrument, Series& series)
      : instrument_(std::move(instrument)), series_(series) {}
  void Record(double value) override { instrument_->Into(series_, value); }
  void Add(double value) override {
    if (value >= 0) AtomicAdd(series_.value, value);  // a counter only grows
  }

 private:
  std::shared_ptr<MetricStore::Instrument> instrument_;
  Series& series_;
};

}  // namespace

std::unique_ptr<BoundHistogram> MetricStore::Instrument::BindHistogram(
    std::span<const KeyValue> attributes) {
  return std::make_unique<BoundSeries>(shared_from_this(), Find(attributes));
}

std::unique_ptr<BoundCounter> MetricStore::Instrument::BindCounter(
    std::span<const KeyValue> attributes) {
  return std::make_unique<BoundSeries>(shared_from_this(), Find(attributes));
}

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
