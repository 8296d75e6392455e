// SPDX-License-Identifier: Apache-2.0
#include "outbound/telemetry/trace.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "../core/random_bits.h"
#include "../core/recycled.h"
#include "outbound/internal/ascii.h"
#include "outbound/telemetry/log.h"

namespace outbound::telemetry {
namespace {

// Eight bytes at a time: asked of every context an attempt starts from.
template <std::size_t N>
bool AnyNonZero(const std::array<std::uint8_t, N>& bytes) {
  static_assert(N % 8 == 0);
  std::uint64_t any = 0;
  for (std::size_t i = 0; i < N; i += 8) {
    std::uint64_t word;
    std::memcpy(&word, bytes.data() + i, sizeof word);
    any |= word;
  }
  return any != 0;
}

template <std::size_t N>
std::string ToHex(const std::array<std::uint8_t, N>& bytes) {
  std::string hex(2 * N, '0');
  outbound::internal::WriteHex(bytes, hex.data());
  return hex;
}

// Random bytes, never all zero: ids of zeroes are invalid (W3C), so a
// draw of all zeroes (only likely from a fixed source that gives 0) has
// its last byte set to 1, rather than drawn again, which from such a
// source would never end. From DefaultRandom(), 64 bits a draw: one draw
// for a span id, two for a trace id. From any other source, 48 bits a draw
// of Uniform (which gives at least 53 good bits), each draw's bits laid out
// from the lowest byte.
template <std::size_t N>
std::array<std::uint8_t, N> RandomBytes(Random& random) {
  std::array<std::uint8_t, N> bytes{};
  if (&random == &DefaultRandom()) {
    static_assert(N % 8 == 0);
    for (std::size_t i = 0; i < N; i += 8) {
      std::uint64_t bits = outbound::internal::DefaultRandomBits();
      std::memcpy(bytes.data() + i, &bits, 8);
    }
  } else {
    constexpr std::size_t kBytesPerDraw = 6;
    for (std::size_t i = 0; i < N; i += kBytesPerDraw) {
      auto bits = static_cast<std::uint64_t>(random.Uniform() * 0x1.0p48);
      std::size_t n = std::min(kBytesPerDraw, N - i);
      if constexpr (std::endian::native == std::endian::little) {
        std::memcpy(bytes.data() + i, &bits, n);  // an id drawn per attempt: no loop
      } else {
        for (std::size_t j = 0; j < n; ++j) {
          bytes[i + j] = static_cast<std::uint8_t>(bits >> (8 * j));
        }
      }
    }
  }
  if (!AnyNonZero(bytes)) bytes[N - 1] = 1;
  return bytes;
}

class RecordingSpan final : public Span {
 public:
  // Room for a client span's attributes, so they are not moved as they come.
  static constexpr std::size_t kAttributesExpected = 12;

  RecordingSpan(SpanProcessor& processor, const SpanStart& start, Random& random)
      : processor_(processor) {
    data_.scope = start.scope;
    data_.name = start.name;
    data_.kind = start.kind;
    data_.start = start.start;
    if (start.parent != nullptr && start.parent->trace_id.valid()) {
      data_.context.trace_id = start.parent->trace_id;
      data_.context.trace_state = start.parent->trace_state;
      // Not sampled upstream: not here either, so the services after this
      // one do not record a trace whose root recorded nothing.
      data_.context.sampled = start.parent->sampled;
      data_.parent_span_id = start.parent->span_id;  // invalid: no parent
    } else {
      data_.context.trace_id = NewTraceId(random);
    }
    data_.context.span_id = NewSpanId(random);
    data_.attributes.reserve(kAttributesExpected);
  }
  ~RecordingSpan() override { End(data_.start); }

  // A span is made and ended on every attempt: its block is kept by the
  // thread that deleted it, for the next span made there (recycled.h). The
  // class is final, so every block asked for is one RecordingSpan's.
  static void* operator new(std::size_t /*size*/) {
    static_assert(alignof(RecordingSpan) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
    return outbound::internal::RecycledBlocks<sizeof(RecordingSpan)>::Take();
  }
  static void operator delete(void* block) noexcept {
    outbound::internal::RecycledBlocks<sizeof(RecordingSpan)>::Give(block);
  }

  const SpanContext& context() const override { return data_.context; }
  void SetAttribute(const KeyValue& attribute) override {
    Value* value = nullptr;
    // A key of a length no key held has is new: a client span's keys all
    // differ in length, so none of them searches the others.
    std::uint64_t length_bit = std::uint64_t{1} << (attribute.key.text().size() % 64);
    if ((key_lengths_ & length_bit) != 0) {
      for (Attribute& existing : data_.attributes) {
        if (existing.key == attribute.key.text()) {
          value = &existing.value;
          break;
        }
      }
    }
    if (value == nullptr) {
      // A literal key is kept as it is, not copied; the attribute is made
      // in place, and its value below.
      Key key(attribute.key);
      Attribute& added = data_.attributes.emplace_back();
      added.key = std::move(key);
      key_lengths_ |= length_bit;
      value = &added.value;
    }
    // Made in place, with no Value to move in; a string replacing a string
    // reuses its buffer.
    std::visit(
        [value](const auto& v) {
          using View = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<View, std::string_view>) {
            if (auto* text = std::get_if<std::string>(value)) {
              text->assign(v);
            } else {
              value->emplace<std::string>(v);
            }
          } else {
            *value = v;
          }
        },
        attribute.value);
  }
  void AddEvent(std::string_view name, TimePoint at,
                std::span<const KeyValue> attributes) override {
    data_.events.push_back(SpanEvent{std::string(name), at, Own(attributes)});
  }
  void SetStatus(StatusCode code, std::string_view description) override {
    data_.status = code;
    data_.status_description = code == StatusCode::kError ? std::string(description) : "";
  }
  void End(TimePoint at) override {
    if (ended_) return;
    ended_ = true;
    data_.end = at;
    processor_.OnEnd(std::move(data_));
  }

 private:
  SpanProcessor& processor_;
  SpanData data_;
  bool ended_ = false;
  std::uint64_t key_lengths_ = 0;  // bit n % 64 set for each key of length n held
};

}  // namespace

bool TraceId::valid() const { return AnyNonZero(bytes); }
std::string TraceId::Hex() const { return ToHex(bytes); }
bool SpanId::valid() const { return AnyNonZero(bytes); }
std::string SpanId::Hex() const { return ToHex(bytes); }

TraceId NewTraceId(Random& random) { return TraceId{RandomBytes<16>(random)}; }
SpanId NewSpanId(Random& random) { return SpanId{RandomBytes<8>(random)}; }

std::unique_ptr<Span> RecordingTracer::StartSpan(const SpanStart& start) {
  return std::make_unique<RecordingSpan>(processor_, start, random_);
}

std::string_view ToString(SpanKind kind) {
  switch (kind) {
    case SpanKind::kInternal:
      return "INTERNAL";
    case SpanKind::kServer:
      return "SERVER";
    case SpanKind::kClient:
      return "CLIENT";
    case SpanKind::kProducer:
      return "PRODUCER";
    case SpanKind::kConsumer:
      return "CONSUMER";
  }
  return "INTERNAL";
}

std::string_view ToString(StatusCode code) {
  switch (code) {
    case StatusCode::kUnset:
      return "UNSET";
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kError:
      return "ERROR";
  }
  return "UNSET";
}

std::string_view ToString(Severity severity) {
  switch (severity) {
    case Severity::kTrace:
      return "TRACE";
    case Severity::kDebug:
      return "DEBUG";
    case Severity::kInfo:
      return "INFO";
    case Severity::kWarn:
      return "WARN";
    case Severity::kError:
      return "ERROR";
  }
  return "INFO";
}

}  // namespace outbound::telemetry
