// SPDX-License-Identifier: Apache-2.0
// outbound/telemetry/propagation.h
//
// W3C Trace Context (`traceparent`, `tracestate`) and W3C Baggage, as
// they travel in HTTP headers and gRPC metadata. The client injects them
// into every attempt; a server (or a test's fake dependency) extracts them.
//
// example: examples/headers/telemetry.cc#propagation
//   auto parent = telemetry::ParseTraceparent(request.header("traceparent"));
#ifndef OUTBOUND_TELEMETRY_PROPAGATION_H_
#define OUTBOUND_TELEMETRY_PROPAGATION_H_

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "outbound/telemetry/trace.h"

namespace outbound::telemetry {

// "00-<trace id>-<span id>-<flags>". `context` must be valid.
std::string FormatTraceparent(const SpanContext& context);

// The length of the traceparent above: version 00's.
inline constexpr std::size_t kTraceparentSize = 55;

// The same, written into `out`, for a caller that keeps its own room (the
// client writes one for every attempt).
void FormatTraceparent(const SpanContext& context, std::span<char, kTraceparentSize> out);

// The context a `traceparent` value (and its `tracestate`) carries; none
// for a malformed value, a zero id, or version ff. Versions above 00 are
// read as 00 (their extra fields ignored), as the spec asks. A `tracestate`
// that is not a list of at most 32 well-formed "key=value" members is
// dropped whole (trace_state empty).
std::optional<SpanContext> ParseTraceparent(std::string_view traceparent,
                                            std::string_view tracestate = {});

// One baggage member: a key, a value, and properties (";"-separated) as text.
struct BaggageEntry {
  std::string key;
  std::string value;
  std::string properties;
  friend bool operator==(const BaggageEntry&, const BaggageEntry&) = default;
};

// What a call carries to its dependency besides its trace context.
using Baggage = std::vector<BaggageEntry>;

// W3C Baggage's bounds on what a platform must pass on: members, and
// bytes of the header's value.
inline constexpr std::size_t kMaxBaggageMembers = 180;
inline constexpr std::size_t kMaxBaggageBytes = 8192;

// The value of a `baggage` header: values percent-encoded, members joined
// with ",". Members whose key is not a token are left out, and so are
// properties holding a "," (it would start a member of its own) or a
// control character: the member goes without them. At most
// kMaxBaggageMembers members and kMaxBaggageBytes bytes, whole members
// only: the first member that would pass either bound ends the value (a
// server may refuse a request whose headers are too large).
std::string FormatBaggage(const Baggage& baggage);

// The members of a `baggage` header value, values percent-decoded (each
// decoded byte that is not UTF-8 replaced with U+FFFD, as W3C Baggage
// asks); malformed members are skipped.
Baggage ParseBaggage(std::string_view header);

// The value under `key`, or null.
const std::string* FindBaggage(const Baggage& baggage, std::string_view key);

}  // namespace outbound::telemetry

#endif  // OUTBOUND_TELEMETRY_PROPAGATION_H_
