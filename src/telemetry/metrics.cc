// SPDX-License-Identifier: Apache-2.0
#include "outbound/telemetry/metrics.h"

#include <utility>
#include <vector>

namespace outbound::telemetry {
namespace {

// An attribute set kept, and borrowed as an instrument records it.
class KeptSet {
 public:
  explicit KeptSet(std::span<const KeyValue> attributes) : owned_(Own(attributes)) {
    views_.reserve(owned_.size());
    for (const Attribute& attribute : owned_) {
      ValueView value = std::visit(
          [](const auto& v) -> ValueView {
            if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string>) {
              return std::string_view(v);
            } else {
              return v;
            }
          },
          attribute.value);
      views_.push_back({attribute.key, value});
    }
  }
  std::span<const KeyValue> views() const { return views_; }

 private:
  Attributes owned_;
  std::vector<KeyValue> views_;  // into owned_
};

// What an instrument without a Bind of its own hands out: the set, kept,
// recorded with each value.
class KeptHistogram final : public BoundHistogram {
 public:
  KeptHistogram(Histogram& histogram, std::span<const KeyValue> attributes)
      : histogram_(histogram), set_(attributes) {}
  void Record(double value) override { histogram_.Record(value, set_.views()); }

 private:
  Histogram& histogram_;
  KeptSet set_;
};

class KeptCounter final : public BoundCounter {
 public:
  KeptCounter(Counter& counter, std::span<const KeyValue> attributes)
      : counter_(counter), set_(attributes) {}
  void Add(double value) override { counter_.Add(value, set_.views()); }

 private:
  Counter& counter_;
  KeptSet set_;
};

}  // namespace

std::unique_ptr<BoundHistogram> Histogram::BindHistogram(std::span<const KeyValue> attributes) {
  return std::make_unique<KeptHistogram>(*this, attributes);
}

std::unique_ptr<BoundCounter> Counter::BindCounter(std::span<const KeyValue> attributes) {
  return std::make_unique<KeptCounter>(*this, attributes);
}

}  // namespace outbound::telemetry
