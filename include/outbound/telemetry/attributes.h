// SPDX-License-Identifier: Apache-2.0
// outbound/telemetry/attributes.h
//
// Attributes: the key-value pairs on spans, data points and log records.
// Instrumentation passes them borrowed (`KeyValue`, valid for the call
// only), so recording a data point allocates nothing; what is kept is
// owned (`Attribute`), except a key that is a string literal, which lives
// as long as the program and is kept as it is. (A literal of a module the
// program unloads with dlclose does not: keep such a module's keys out of
// the library's telemetry, or pass them as `std::string_view`.)
//
// example: examples/headers/telemetry.cc#attributes
//   const telemetry::KeyValue attributes[] = {{"server.address", "payments"},
//                                             {"server.port", std::int64_t{8443}}};
//   counter.Add(1, attributes);
#ifndef OUTBOUND_TELEMETRY_ATTRIBUTES_H_
#define OUTBOUND_TELEMETRY_ATTRIBUTES_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace outbound::telemetry {

// A borrowed value. A string literal is a string, never a bool.
using ValueView = std::variant<bool, std::int64_t, double, std::string_view>;

class Key;

namespace internal {
// What a key can be read from: anything that reads as a std::string_view.
template <class T>
concept KeyText = std::is_convertible_v<const T&, std::string_view>;
// What a key is read from at run time: any such text but a char array
// (a literal, read at compile time) and a Key (which says if it was one).
template <class T>
concept RuntimeKeyText = KeyText<T> && !std::is_array_v<T> && !std::is_same_v<T, Key>;
}  // namespace internal

// A key as instrumentation passes it: borrowed, and known to live as long
// as the program when it is a string literal, so whatever keeps it need
// not copy it. Every key the library records is a literal.
class KeyView {
 public:
  KeyView() = default;
  // A string literal, or another constant char array of static storage:
  // its text up to the terminator, which must be its last char. Any other
  // char array (a buffer, a local) does not compile: pass it as a
  // std::string_view.
  template <std::size_t N>
  consteval KeyView(const char (&literal)[N])  // NOLINT(google-explicit-constructor)
      : text_(literal, std::char_traits<char>::length(literal)), literal_(true) {
    if (text_.size() != N - 1) throw "a key is a string literal, with no NUL inside";
  }
  // Any other text, valid for as long as the KeyView is used.
  template <internal::RuntimeKeyText Chars>
  KeyView(const Chars& text)  // NOLINT(google-explicit-constructor)
      : text_(text) {}
  // A kept key, a literal still if it was one.
  KeyView(const Key& key);  // NOLINT(google-explicit-constructor)

  constexpr std::string_view text() const { return text_; }
  operator std::string_view() const { return text_; }  // NOLINT(google-explicit-constructor)
  // Whether the text is a literal's (above), so lives as long as the program.
  bool literal() const { return literal_; }

  template <internal::KeyText Chars>
  friend bool operator==(const KeyView& key, const Chars& text) {
    return key.text_ == std::string_view(text);
  }

 private:
  std::string_view text_;
  bool literal_ = false;
};

struct KeyValue {
  KeyView key;
  ValueView value;
};

// An owned value.
using Value = std::variant<bool, std::int64_t, double, std::string>;

// A key as it is kept: a literal's text as it is (KeyView::literal), any
// other text copied.
class Key {
 public:
  Key() = default;
  // A literal's text as it is, any other copied.
  Key(KeyView key) { KeepOrCopy(key); }  // NOLINT(google-explicit-constructor)
  // A literal written in place (as KeyView's): kept as it is.
  template <std::size_t N>
  consteval Key(const char (&literal)[N])  // NOLINT(google-explicit-constructor)
      : text_(KeyView(literal).text()) {}
  // Any other text: copied.
  template <internal::RuntimeKeyText Chars>
  Key(const Chars& text) {  // NOLINT(google-explicit-constructor)
    Copy(std::string_view(text));
  }
  Key(const Key& other) { KeepOrCopy(other); }
  Key(Key&& other) noexcept
      : text_(std::exchange(other.text_, {})), owned_(std::move(other.owned_)) {}
  Key& operator=(const Key& other) {
    if (this != &other) KeepOrCopy(other);
    return *this;
  }
  Key& operator=(Key&& other) noexcept {
    text_ = std::exchange(other.text_, {});
    owned_ = std::move(other.owned_);
    return *this;
  }
  ~Key() = default;

  std::string_view text() const { return text_; }
  operator std::string_view() const { return text_; }  // NOLINT(google-explicit-constructor)
  // Whether the text is a literal's, kept as it is; never for an empty key.
  bool literal() const { return owned_ == nullptr && !text_.empty(); }

  template <internal::KeyText Chars>
  friend bool operator==(const Key& key, const Chars& text) {
    return key.text_ == std::string_view(text);
  }

 private:
  void KeepOrCopy(KeyView key) {
    if (!key.literal()) return Copy(key.text());
    owned_.reset();
    text_ = key.text();
  }
  void Copy(std::string_view text);

  std::string_view text_;          // a literal's, or owned_'s
  std::unique_ptr<char[]> owned_;  // the copy, where the text is not a literal's
};

inline KeyView::KeyView(const Key& key) : text_(key.text()), literal_(key.literal()) {}

struct Attribute {
  Key key;
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
