// SPDX-License-Identifier: Apache-2.0
#include "outbound/telemetry/attributes.h"

#include <charconv>
#include <cstring>

namespace outbound::telemetry {

Value Own(const ValueView& value) {
  return std::visit(
      [](const auto& v) -> Value {
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string_view>) {
          return std::string(v);
        } else {
          return v;
        }
      },
      value);
}

void Key::Copy(std::string_view text) {
  // Copied before the old copy goes: `text` may be a view of it.
  std::unique_ptr<char[]> copy;
  if (!text.empty()) {
    copy = std::make_unique_for_overwrite<char[]>(text.size());
    std::memcpy(copy.get(), text.data(), text.size());
  }
  text_ = std::string_view(copy.get(), text.size());
  owned_ = std::move(copy);
}

Attribute Own(const KeyValue& attribute) {
  return Attribute{Key(attribute.key), Own(attribute.value)};
}

Attributes Own(std::span<const KeyValue> attributes) {
  Attributes owned;
  owned.reserve(attributes.size());
  for (const KeyValue& attribute : attributes) owned.push_back(Own(attribute));
  return owned;
}

const Value* Find(const Attributes& attributes, std::string_view key) {
  for (const Attribute& attribute : attributes) {
    if (attribute.key == key) return &attribute.value;
  }
  return nullptr;
}

std::string ToString(const Value& value) {
  struct Visitor {
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(std::int64_t v) const { return std::to_string(v); }
    // The shortest text that reads back as `v` ("0.1", not
    // "0.10000000000000001"), with a point whatever the C locale says.
    std::string operator()(double v) const {
      char text[32];
      return std::string(text, std::to_chars(text, text + sizeof text, v).ptr);
    }
    std::string operator()(const std::string& v) const { return v; }
  };
  return std::visit(Visitor{}, value);
}

}  // namespace outbound::telemetry
