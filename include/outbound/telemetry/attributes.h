// SPDX-License-Identifier: Apache-2.0
// outbound/telemetry/attributes.h
//
// Attributes: the key-value pairs on spans, data points and log records.
// Instrumentation passes them borrowed (`KeyValue`, valid for the call
// only), so recording a data point allocates nothing; what is kept is
// owned (`Attribute`).
//
// example: examples/headers/telemetry.cc#attributes
//   const telemetry::KeyValue attributes[] = {{"server.address", "payments"},
//                                             {"server.port", std::int64_t{8443}}};
//   counter.Add(1, attributes);
#ifndef OUTBOUND_TELEMETRY_ATTRIBUTES_H_
#define OUTBOUND_TELEMETRY_ATTRIBUTES_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace outbound::telemetry {

// A borrowed value. A string literal is a string, never a bool.
using ValueView = std::variant<bool, std::int64_t, double, std::string_view>;

struct KeyValue {
  std::string_view key;
  ValueView value;
};

// An owned value.
using Value = std::variant<bool, std::int64_t, double, std::string>;

struct Attribute {
  std::string key;
  Value value;
  friend bool operator==(const Attribute&, const Attribute&) = default;
};

using Attributes = std::vector<Attribute>;

Value Own(const ValueView& value);
Attribute Own(const KeyValue& attribute);
Attributes Own(std::span<const KeyValue> attributes);

// The value under `key`, or null.
const Value* Find(const Attributes& attributes, std::string_view key);

// A value as text: "true", "42", "0.5", or the string itself.
std::string ToString(const Value& value);

}  // namespace outbound::telemetry

#endif  // OUTBOUND_TELEMETRY_ATTRIBUTES_H_
