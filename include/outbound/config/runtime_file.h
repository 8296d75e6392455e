// SPDX-License-Identifier: Apache-2.0
// outbound/config/runtime_file.h
//
// Operator control from a file the process watches: a dependency's breaker
// forced open, held closed, isolated or released, and its failure injection
// and rate limit switched, without a restart. The file is JSON, as a
// Kubernetes ConfigMap mount delivers it:
//
//  {"dependencies": {"payments": {"breaker": "isolate", "rate_limit": "50/s,10"}}}
//
// with, for each dependency (docs/beyond-retries.md, "Operator control"):
//
//   breaker     "force_open", "force_closed", "isolate" or "release"
//               (the client's OverrideBreaker)
//   faults      FaultSettings' fields (missing ones: its defaults), "on" or
//               "off" (the client's SetFaults; docs/failure-injection.md)
//   rate_limit  "50/s", "50/s,10" (a burst of 10) or "off", as the
//               PREFIX_RATE_LIMIT variable is written
//
// Each field is optional: one the entry does not name leaves the client as
// its settings made it. A dependency the file stops naming goes back to
// that too (its breaker released, its faults and rate limit as they were
// when Control began).
//
// A file that is not JSON, has a key nobody knows (named with the key it
// most likely misspells) or a bad value is refused whole: nothing of it
// applies, the last good state stays, and one log record (WARN, scope
// "outbound.config", through the Runtime's logger) names the file and what
// is wrong. An unreadable file at a later read is refused the same way (a
// ConfigMap's swap never shows one: its `..data` symlink is renamed
// atomically, and each read opens the path afresh). The file is parsed only
// when its bytes changed, so a refused file is logged once, not every
// second. Each change applied is logged once, by the client it changes
// (a breaker override and its counter outbound.circuit.overrides, or a
// switched setting).
//
// The library reads no environment variable: a program names the file,
// for example from its own PREFIX_RUNTIME_FILE (docs/beyond-retries.md).
//
// example: examples/headers/config.cc#runtime-file
//   config::Resolver env(config::ProcessEnvironment());
//   auto path = env.Get<std::string>(
//       "APP_RUNTIME_FILE", [](const std::string& text) { return Result<std::string>(text); },
//       std::nullopt);
//   if (auto read = env.Finish(); !read) return Exit(config::kExitConfig, read.error());
//   auto control = config::RuntimeFile::Watch(runtime, path);  // now, then every second
//   if (!control) return Exit(config::kExitConfig, control.error());
//   config::Subscription held = (*control)->Control("payments", payments);  // before ~payments
//
// Thread-safe. The clock's timer re-reads the file; destroy the RuntimeFile
// (which stops its timer) and every Subscription before the Runtime's clock.
#ifndef OUTBOUND_CONFIG_RUNTIME_FILE_H_
#define OUTBOUND_CONFIG_RUNTIME_FILE_H_

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "outbound/circuit/breaker.h"
#include "outbound/clock.h"
#include "outbound/error.h"
#include "outbound/fault.h"
#include "outbound/http/settings.h"
#include "outbound/runtime.h"

namespace outbound::http {
class Client;
}  // namespace outbound::http
namespace outbound::rpc {
class Client;  // Control(rpc::Client&) is built into outbound::rpc
}  // namespace outbound::rpc

namespace outbound::config {

// Keeps a client under a runtime file's control while it lives (RAII):
// destroyed, it gives the client back its own settings. Move-only; an
// empty one (default-made, or moved from) does nothing.
class Subscription {
 public:
  Subscription() = default;
  explicit Subscription(std::function<void()> end) : end_(std::move(end)) {}
  Subscription(Subscription&& other) noexcept : end_(std::exchange(other.end_, nullptr)) {}
  Subscription& operator=(Subscription&& other) noexcept {
    if (this != &other) {
      Reset();
      end_ = std::exchange(other.end_, nullptr);
    }
    return *this;
  }
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;
  ~Subscription() { Reset(); }

  // Ends the control now.
  void Reset() {
    if (end_) std::exchange(end_, nullptr)();
  }

 private:
  std::function<void()> end_;
};

class RuntimeFile {
 public:
  // Reads `path` now and then every `every` on runtime.clock. An unreadable
  // or bad file now is an error (kInvalidSettings) naming the file and what
  // is wrong; later ones are refused and logged, and the last good state
  // stays.
  [[nodiscard]] static Result<std::unique_ptr<RuntimeFile>> Watch(
      const Runtime& runtime, std::string path, Duration every = std::chrono::seconds(1));
  // Stops the timer. Subscriptions still alive end by themselves, later.
  ~RuntimeFile();
  RuntimeFile(const RuntimeFile&) = delete;
  RuntimeFile& operator=(const RuntimeFile&) = delete;

  // The file's entry for `dependency` applies to `client` now and on every
  // change, until the returned handle is destroyed, which must be before
  // the client is. One client per dependency name, or several: each gets
  // the entry.
  [[nodiscard]] Subscription Control(std::string dependency, http::Client& client);
  [[nodiscard]] Subscription Control(std::string dependency, rpc::Client& client);

  // Reads the file now, as the timer does: success when it was applied
  // (or had not changed), or why it was refused (then logged, once per
  // content).
  [[nodiscard]] Result<void> Reload();

  struct State;

 private:
  // What a file may say of one dependency: a field the file does not name
  // is empty.
  struct Entry {
    std::optional<circuit::Override> breaker;
    std::optional<FaultSettings> faults;
    std::optional<std::optional<http::RateLimit>> rate_limit;
  };
  // What a controlled client offers: the three switches, and its own
  // settings when Control began.
  struct Target {
    std::function<void(circuit::Override)> override_breaker;
    std::function<void(FaultSettings)> set_faults;
    std::function<Result<void>(std::optional<http::RateLimit>)> set_rate_limit;
    FaultSettings own_faults;
    std::optional<http::RateLimit> own_rate_limit;
  };

  explicit RuntimeFile(std::shared_ptr<State> state);
  Subscription Control(std::string dependency, Target target);
  // The switches of an http::Client or an rpc::Client, which offer the
  // same ones (src/config/runtime_target.h).
  template <class ClientT>
  static Target TargetOf(ClientT& client);

  std::shared_ptr<State> state_;
};

}  // namespace outbound::config

#endif  // OUTBOUND_CONFIG_RUNTIME_FILE_H_
