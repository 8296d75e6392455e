// SPDX-License-Identifier: Apache-2.0
#include "outbound/telemetry/metric_store.h"

#include <gtest/gtest.h>

#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace outbound::telemetry {
namespace {

const DataPoint* PointWith(const MetricData& metric, std::string_view key, std::string_view value) {
  for (const DataPoint& point : metric.points) {
    const Value* found = Find(point.attributes, key);
    if (found != nullptr && *found == Value(std::string(value))) return &point;
  }
  return nullptr;
}

TEST(MetricStoreTest, ACounterSumsPerAttributeSetWhateverTheAttributeOrder) {
  MetricStore store;
  auto counter = store.CreateCounter({"s", "c", "{x}", ""});
  const KeyValue ab[] = {{"a", "1"}, {"b", std::int64_t{2}}};
  const KeyValue ba[] = {{"b", std::int64_t{2}}, {"a", "1"}};
  const KeyValue other[] = {{"a", "2"}, {"b", std::int64_t{2}}};
  counter->Add(1, ab);
  counter->Add(2, ba);
  counter->Add(5, other);
  counter->Add(-3, other);  // a counter never goes down
  auto metrics = store.Collect();
  ASSERT_EQ(metrics.size(), 1u);
  EXPECT_EQ(metrics[0].kind, InstrumentKind::kCounter);
  ASSERT_EQ(metrics[0].points.size(), 2u);
  EXPECT_EQ(PointWith(metrics[0], "a", "1")->value, 3);
  EXPECT_EQ(PointWith(metrics[0], "a", "2")->value, 5);
  EXPECT_EQ(metrics[0].points[0].attributes[0].key, "a");  // sorted by key
}

TEST(MetricStoreTest, TheSameNameTwiceIsTheSameInstrument) {
  MetricStore store;
  auto first = store.CreateCounter({"s", "c", "", ""});
  auto second = store.CreateCounter({"s", "c", "", ""});
  first->Add(1, {});
  second->Add(1, {});
  auto metrics = store.Collect();
  ASSERT_EQ(metrics.size(), 1u);
  EXPECT_EQ(metrics[0].points[0].value, 2);
}

TEST(MetricStoreTest, AHistogramCountsEachValueInTheBucketOfItsUpperBound) {
  MetricStore store;
  const double bounds[] = {1, 2, 5};
  auto histogram = store.CreateHistogram({"s", "h", "s", ""}, bounds);
  for (double v : {0.5, 1.0, 1.5, 5.0, 7.0}) histogram->Record(v, {});
  auto metrics = store.Collect();
  ASSERT_EQ(metrics[0].points.size(), 1u);
  const DataPoint& p = metrics[0].points[0];
  EXPECT_EQ(p.bucket_counts,
            (std::vector<std::uint64_t>{2, 1, 1, 1}));  // (..1] (1..2] (2..5] (5..)
  EXPECT_EQ(p.count, 5u);
  EXPECT_EQ(p.sum, 15.0);
  EXPECT_EQ(metrics[0].boundaries, (std::vector<double>{1, 2, 5}));
}

// NaN has no bucket and an infinity no sum: both are dropped, and the
// count is the buckets' total.
TEST(MetricStoreTest, AHistogramDropsNanAndInfinities) {
  MetricStore store;
  const double bounds[] = {1};
  auto histogram = store.CreateHistogram({"s", "h", "s", ""}, bounds);
  histogram->Record(std::numeric_limits<double>::quiet_NaN(), {});
  histogram->Record(std::numeric_limits<double>::infinity(), {});
  histogram->Record(0.5, {});
  auto metrics = store.Collect();
  ASSERT_EQ(metrics.size(), 1u);
  ASSERT_EQ(metrics[0].points.size(), 1u);
  const DataPoint& point = metrics[0].points[0];
  EXPECT_EQ(point.count, 1u);
  EXPECT_EQ(point.sum, 0.5);
  EXPECT_EQ(point.bucket_counts, (std::vector<std::uint64_t>{1, 0}));
}

TEST(MetricStoreTest, GaugesAreReadAtCollectionAndAddUpAcrossCallbacks) {
  MetricStore store;
  int reads = 0;
  auto one = store.AddObservableGauge({"s", "g", "", ""}, [&](Observations& out) {
    ++reads;
    const KeyValue closed[] = {{"state", "closed"}};
    out.Observe(1, closed);
  });
  auto two = store.AddObservableGauge({"s", "g", "", ""}, [](Observations& out) {
    const KeyValue closed[] = {{"state", "closed"}};
    const KeyValue open[] = {{"state", "open"}};
    out.Observe(1, closed);
    out.Observe(0, open);
  });
  EXPECT_EQ(reads, 0);  // nothing read before a collection
  auto metrics = store.Collect();
  EXPECT_EQ(reads, 1);
  EXPECT_EQ(PointWith(metrics[0], "state", "closed")->value, 2);
  EXPECT_EQ(PointWith(metrics[0], "state", "open")->value, 0);
  two.reset();  // unregistered
  metrics = store.Collect();
  EXPECT_EQ(PointWith(metrics[0], "state", "closed")->value, 1);
  EXPECT_EQ(PointWith(metrics[0], "state", "open"), nullptr);
}

TEST(MetricStoreTest, ConcurrentAddsAreAllCounted) {
  MetricStore store;
  auto counter = store.CreateCounter({"s", "c", "", ""});
  auto histogram = store.CreateHistogram({"s", "h", "", ""}, kDurationBuckets);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      const KeyValue attributes[] = {{"thread", std::int64_t{t % 2}}};
      for (int i = 0; i < 10000; ++i) {
        counter->Add(1, attributes);
        histogram->Record(0.01, attributes);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  auto metrics = store.Collect();
  double total = 0;
  for (const DataPoint& p : metrics[0].points) total += p.value;
  EXPECT_EQ(total, 80000);
  std::uint64_t count = 0;
  for (const DataPoint& p : metrics[1].points) count += p.count;
  EXPECT_EQ(count, 80000u);
}

// New sets grow the store's table while other threads record into known
// ones, each set recorded in both key orders: every set stays one series.
TEST(MetricStoreTest, SetsAddedWhileOthersRecordAreEachOneSeries) {
  MetricStore store;
  auto counter = store.CreateCounter({"s", "c", "", ""});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        std::int64_t set = (i + 25 * t) % 100;
        const KeyValue ab[] = {{"a", set}, {"b", "x"}};
        const KeyValue ba[] = {{"b", "x"}, {"a", set}};
        counter->Add(1, i % 2 == 0 ? std::span<const KeyValue>(ab) : std::span<const KeyValue>(ba));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  auto metrics = store.Collect();
  ASSERT_EQ(metrics[0].points.size(), 100u);
  for (const DataPoint& p : metrics[0].points) {
    EXPECT_EQ(p.attributes[0].key, "a");
    EXPECT_EQ(p.value, 80);
  }
}

// A bound series (Counter::BindCounter, Histogram::BindHistogram) is the set's one series:
// what it records adds to what the set recorded unbound, in any key order,
// and the attributes it was bound with may be gone.
TEST(MetricStoreTest, ABoundSeriesIsItsSetsOneSeries) {
  MetricStore store;
  auto counter = store.CreateCounter({"s", "c", "", ""});
  const double bounds[] = {1, 2};
  auto histogram = store.CreateHistogram({"s", "h", "s", ""}, bounds);
  std::unique_ptr<BoundCounter> bound_counter;
  std::unique_ptr<BoundHistogram> bound_histogram;
  {
    std::string host = "payments";  // gone once bound
    const KeyValue set[] = {{"b", host}, {"a", std::int64_t{1}}};
    bound_counter = counter->BindCounter(set);
    bound_histogram = histogram->BindHistogram(set);
  }
  const KeyValue same[] = {{"a", std::int64_t{1}}, {"b", "payments"}};
  const KeyValue other[] = {{"a", std::int64_t{2}}, {"b", "payments"}};
  counter->Add(1, same);
  bound_counter->Add(2);
  bound_counter->Add(-5);  // a counter never goes down, bound or not
  counter->Add(7, other);
  histogram->Record(0.5, same);
  bound_histogram->Record(1.5);
  bound_histogram->Record(3);
  auto metrics = store.Collect();
  ASSERT_EQ(metrics.size(), 2u);
  ASSERT_EQ(metrics[0].points.size(), 2u);
  EXPECT_EQ(metrics[0].points[0].value + metrics[0].points[1].value, 10);
  const DataPoint* counted = PointWith(metrics[0], "b", "payments");
  ASSERT_NE(counted, nullptr);
  for (const DataPoint& p : metrics[0].points) {
    EXPECT_EQ(p.value, *Find(p.attributes, "a") == Value(std::int64_t{1}) ? 3 : 7);
  }
  ASSERT_EQ(metrics[1].points.size(), 1u);
  EXPECT_EQ(metrics[1].points[0].bucket_counts, (std::vector<std::uint64_t>{1, 1, 1}));
  EXPECT_EQ(metrics[1].points[0].count, 3u);
  EXPECT_EQ(metrics[1].points[0].sum, 5.0);
}

// An instrument's bound series keeps it alive: the client that bound it
// may outlive the shared_ptr it was created through.
TEST(MetricStoreTest, ABoundSeriesOutlivesItsInstrumentsHandle) {
  MetricStore store;
  auto counter = store.CreateCounter({"s", "c", "", ""});
  const KeyValue set[] = {{"a", "1"}};
  std::unique_ptr<BoundCounter> bound = counter->BindCounter(set);
  counter.reset();
  bound->Add(4);
  EXPECT_EQ(store.Collect()[0].points[0].value, 4);
}

// What another MeterProvider's instruments get without a Bind of their
// own: the set kept, and recorded with each value through the unbound call.
TEST(MetricStoreTest, TheDefaultBindRecordsTheKeptSetThroughTheUnboundCall) {
  struct Recorded final : Counter, Histogram {
    void Add(double value, std::span<const KeyValue> attributes) override {
      seen.emplace_back(value, Own(attributes));
    }
    void Record(double value, std::span<const KeyValue> attributes) override {
      seen.emplace_back(value, Own(attributes));
    }
    std::vector<std::pair<double, Attributes>> seen;
  } recorded;
  std::unique_ptr<BoundCounter> counter;
  std::unique_ptr<BoundHistogram> histogram;
  {
    std::string host = "payments";
    const KeyValue set[] = {{"server.address", host}, {"server.port", std::int64_t{8443}}};
    counter = recorded.BindCounter(set);
    histogram = recorded.BindHistogram(set);
  }
  counter->Add(2);
  histogram->Record(0.25);
  const Attributes expected = {{"server.address", std::string("payments")},
                               {"server.port", std::int64_t{8443}}};
  ASSERT_EQ(recorded.seen.size(), 2u);
  EXPECT_EQ(recorded.seen[0], std::make_pair(2.0, expected));
  EXPECT_EQ(recorded.seen[1], std::make_pair(0.25, expected));
}

}  // namespace
}  // namespace outbound::telemetry
