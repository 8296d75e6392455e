// SPDX-License-Identifier: Apache-2.0
// What a call path and an attempt path share: their layers in order, top
// to bottom, owned, and destroyed bottom first, so what is still in flight
// hears of its end from the layers below while the ones above still exist.
// Internal.
#ifndef OUTBOUND_SRC_HTTP_LAYER_LIST_H_
#define OUTBOUND_SRC_HTTP_LAYER_LIST_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace outbound::http::internal {

template <typename Layer>
class LayerList {
 public:
  // `misused` hears of a layer that broke the path's protocol (release
  // builds; a debug build stops first).
  LayerList(std::vector<std::unique_ptr<Layer>> layers,
            std::function<void(std::string_view what)> misused)
      : layers_(std::move(layers)), misused_(std::move(misused)) {}
  ~LayerList() {
    while (!layers_.empty()) layers_.pop_back();
  }
  LayerList(const LayerList&) = delete;
  LayerList& operator=(const LayerList&) = delete;

  std::size_t size() const { return layers_.size(); }
  Layer& at(std::size_t i) const { return *layers_[i]; }
  // "redirects → retry loop": the names of the layers that act on a call
  // now (active()), top to bottom.
  std::string Describe() const {
    std::string text;
    for (const auto& layer : layers_) {
      if (!layer->active()) continue;
      if (!text.empty()) text += " → ";
      text += layer->name();
    }
    return text;
  }

 protected:
  void Report(std::string_view what) const {
    if (misused_) misused_(what);
  }

 private:
  std::vector<std::unique_ptr<Layer>> layers_;
  std::function<void(std::string_view)> misused_;
};

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_LAYER_LIST_H_
