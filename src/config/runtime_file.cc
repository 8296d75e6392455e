// SPDX-License-Identifier: Apache-2.0
// The runtime file (outbound/config/runtime_file.h): read, checked whole,
// then applied to each controlled client as the difference from what was
// applied to it before, so an unchanged field changes nothing and logs
// nothing.
#include "outbound/config/runtime_file.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <vector>

#include "outbound/config/resolver.h"
#include "outbound/http/client.h"
#include "outbound/telemetry/attributes.h"
#include "outbound/telemetry/log.h"
#include "parsers.h"
#include "runtime_target.h"

namespace outbound::config {
namespace {

using Json = nlohmann::json;

// A key the file has no use for: named, with the known key it most likely
// misspells.
std::string Unknown(const std::string& where, const std::string& key,
                    const std::vector<std::string>& known) {
  std::string text = where + key + ": not a key";
  if (auto near = NearestName(key, known)) text += "; did you mean " + *near + "?";
  return text;
}

Result<circuit::Override> ParseOverride(const Json& value, const std::string& where) {
  static const circuit::Override kAll[] = {
      circuit::Override::kForceOpen, circuit::Override::kForceClosed, circuit::Override::kIsolate,
      circuit::Override::kRelease};
  if (value.is_string()) {
    for (circuit::Override o : kAll) {
      if (value.get_ref<const std::string&>() == circuit::ToString(o)) return o;
    }
  }
  return Fail(ErrorKind::kInvalidSettings,
              where + ": " + value.dump() + " is not force_open, force_closed, isolate or release");
}

Result<FaultSettings> ParseFaults(const Json& value, const std::string& where) {
  if (value.is_string()) {
    Result<bool> on = internal::ParseOnOff(value.get_ref<const std::string&>());
    if (!on) {
      return Fail(ErrorKind::kInvalidSettings,
                  where + ": " + value.dump() + " is not on, off or an object");
    }
    return FaultSettings{.enabled = *on};
  }
  if (!value.is_object()) {
    return Fail(ErrorKind::kInvalidSettings,
                where + ": " + value.dump() + " is not on, off or an object");
  }
  FaultSettings faults;
  for (const auto& [key, field] : value.items()) {
    bool* target = key == "enabled"            ? &faults.enabled
                   : key == "forward_scenario" ? &faults.forward_scenario
                                               : nullptr;
    if (target == nullptr) {
      return Fail(ErrorKind::kInvalidSettings,
                  Unknown(where + ".", key, {"enabled", "forward_scenario"}));
    }
    if (!field.is_boolean()) {
      return Fail(ErrorKind::kInvalidSettings,
                  where + "." + key + ": " + field.dump() + " is not true or false");
    }
    *target = field.get<bool>();
  }
  return faults;
}

Result<std::optional<http::RateLimit>> ParseRate(const Json& value, const std::string& where) {
  if (!value.is_string()) {
    return Fail(ErrorKind::kInvalidSettings,
                where + ": " + value.dump() + " is not a string such as \"50/s,10\" or \"off\"");
  }
  // The PREFIX_RATE_LIMIT variable's parser and check: one way to write it.
  auto limit = internal::ParseRateLimit(value.get_ref<const std::string&>());
  if (!limit) return Fail(ErrorKind::kInvalidSettings, where + ": " + limit.error().message());
  if (auto valid = http::CheckRateLimit(*limit); !valid) {
    return Fail(ErrorKind::kInvalidSettings, where + ": " + valid.error().message());
  }
  return *limit;
}

bool Same(const FaultSettings& a, const FaultSettings& b) {
  return a.enabled == b.enabled && a.forward_scenario == b.forward_scenario;
}

bool Same(const std::optional<http::RateLimit>& a, const std::optional<http::RateLimit>& b) {
  if (a.has_value() != b.has_value()) return false;
  return !a || (a->per_second == b->per_second && a->burst == b->burst);
}

// A hold that stays until released: what a dependency the file stops
// naming must be released from. (A forced open is no hold: the breaker's
// rules already took it from there.)
bool Holds(const std::optional<circuit::Override>& o) {
  return o == circuit::Override::kForceClosed || o == circuit::Override::kIsolate;
}

}  // namespace

struct RuntimeFile::State {
  using Entries = std::map<std::string, Entry>;

  // A client under control, and what the file last applied to it.
  struct Controlled {
    std::string dependency;
    Target target;
    std::optional<circuit::Override> breaker;  // the last override applied
    FaultSettings faults;                      // as applied (its own at first)
    std::optional<http::RateLimit> rate_limit;
  };

  State(const Runtime& rt, std::string p, Duration e) : runtime(rt), path(std::move(p)), every(e) {}

  const Runtime runtime;
  const std::string path;
  const Duration every;

  std::mutex mu;  // guards everything below, and the clients' switching
  bool stopped = false;
  Timer timer;
  std::optional<std::string> seen;     // the bytes last read, good or refused
  Result<void> seen_result;            // what became of them
  std::optional<std::string> refused;  // the refusal last logged; empty after a good file
  Entries entries;                     // the last good file's
  std::map<std::uint64_t, Controlled> controlled;
  std::uint64_t next_id = 0;

  // The whole file, or the first thing wrong with it.
  static Result<Entries> Parse(const std::string& text) {
    Json doc;
    try {
      doc = Json::parse(text);
    } catch (const Json::parse_error& e) {
      std::string what = e.what();
      // "[json.exception.parse_error.101] parse error at line 1, ...": the
      // part after the library's tag.
      if (auto close = what.find("] "); close != std::string::npos) what.erase(0, close + 2);
      return Fail(ErrorKind::kInvalidSettings, "is not JSON: " + what);
    }
    if (!doc.is_object()) {
      return Fail(ErrorKind::kInvalidSettings, "is not a JSON object with \"dependencies\"");
    }
    Entries entries;
    for (const auto& [key, value] : doc.items()) {
      if (key != "dependencies") {
        return Fail(ErrorKind::kInvalidSettings, Unknown("", key, {"dependencies"}));
      }
      if (!value.is_object()) {
        return Fail(ErrorKind::kInvalidSettings, "dependencies: is not an object");
      }
      for (const auto& [dependency, fields] : value.items()) {
        std::string where = "dependencies." + dependency;
        if (!fields.is_object()) {
          return Fail(ErrorKind::kInvalidSettings, where + ": is not an object");
        }
        Entry entry;
        for (const auto& [name, field] : fields.items()) {
          std::string at = where + "." + name;
          if (name == "breaker") {
            auto o = ParseOverride(field, at);
            if (!o) return tl::unexpected(o.error());
            entry.breaker = *o;
          } else if (name == "faults") {
            auto f = ParseFaults(field, at);
            if (!f) return tl::unexpected(f.error());
            entry.faults = *f;
          } else if (name == "rate_limit") {
            auto r = ParseRate(field, at);
            if (!r) return tl::unexpected(r.error());
            entry.rate_limit = *r;
          } else {
            return Fail(ErrorKind::kInvalidSettings,
                        Unknown(where + ".", name, {"breaker", "faults", "rate_limit"}));
          }
        }
        entries[dependency] = entry;
      }
    }
    return entries;
  }

  // Brings `c` to what `entry` says (null: to its own settings), changing
  // only what differs from what was applied before. Under mu.
  static void Apply(Controlled& c, const Entry* entry) {
    std::optional<circuit::Override> breaker = entry ? entry->breaker : std::nullopt;
    if (breaker != c.breaker) {
      if (breaker) {
        c.target.override_breaker(*breaker);
      } else if (Holds(c.breaker)) {
        c.target.override_breaker(circuit::Override::kRelease);
      }
      c.breaker = breaker;
    }
    FaultSettings faults = entry && entry->faults ? *entry->faults : c.target.own_faults;
    if (!Same(faults, c.faults)) {
      c.target.set_faults(faults);
      c.faults = faults;
    }
    std::optional<http::RateLimit> rate_limit =
        entry && entry->rate_limit ? *entry->rate_limit : c.target.own_rate_limit;
    // Checked as the file was parsed; the client's own was checked at its
    // creation: this cannot fail.
    if (!Same(rate_limit, c.rate_limit) && c.target.set_rate_limit(rate_limit)) {
      c.rate_limit = rate_limit;
    }
  }

  const Entry* Find(const std::string& dependency) const {
    auto it = entries.find(dependency);
    return it == entries.end() ? nullptr : &it->second;
  }

  void LogRefusal(const Error& error) const {
    telemetry::Logger* logger = runtime.telemetry.logger;
    if (logger == nullptr) return;
    telemetry::LogRecord record;
    record.scope = "outbound.config";
    record.at = runtime.clock->Now();
    record.severity = telemetry::Severity::kWarn;
    record.body = "runtime file refused, the last good state kept: " + error.message();
    const telemetry::KeyValue attributes[] = {{"outbound.runtime_file.path", path}};
    record.attributes = telemetry::Own(attributes);
    logger->Emit(std::move(record));
  }

  // Reads the file; applies it if it changed and is good. `log`: a refusal
  // is logged (once per content or reason).
  Result<void> Reload(bool log) {
    std::lock_guard lock(mu);
    // The timer's callback may have begun as ~RuntimeFile stopped it: a
    // stopped watch reads nothing, logs nothing and applies nothing.
    if (stopped) return seen_result;
    Result<std::string> bytes = ReadFile(path);
    if (bytes && seen && *bytes == *seen) return seen_result;
    Result<Entries> parsed = bytes ? Parse(*bytes) : Result<Entries>(tl::unexpected(bytes.error()));
    if (bytes) {
      seen = *bytes;
    } else {
      seen.reset();
    }
    if (!parsed) {
      std::string what = parsed.error().message();
      // ReadFile's message names the path already.
      Error error(ErrorKind::kInvalidSettings,
                  bytes ? "runtime file \"" + path + "\": " + what : "runtime file: " + what);
      if (log && refused != error.message()) LogRefusal(error);
      refused = error.message();
      seen_result = tl::unexpected(error);
      return seen_result;
    }
    refused.reset();
    entries = std::move(*parsed);
    for (auto& [id, c] : controlled) Apply(c, Find(c.dependency));
    seen_result = {};
    return seen_result;
  }

  void Schedule(const std::shared_ptr<State>& self) {
    std::weak_ptr<State> weak = self;
    timer = runtime.clock->ScheduleAfter(every, [weak] {
      std::shared_ptr<State> state = weak.lock();
      if (!state) return;
      (void)state->Reload(true);  // a refusal is logged; the timer goes on
      std::lock_guard lock(state->mu);
      if (!state->stopped) state->Schedule(state);
    });
  }
};

RuntimeFile::RuntimeFile(std::shared_ptr<State> state) : state_(std::move(state)) {}

Result<std::unique_ptr<RuntimeFile>> RuntimeFile::Watch(const Runtime& runtime, std::string path,
                                                        Duration every) {
  if (every <= Duration::zero()) {
    return Fail(ErrorKind::kInvalidSettings, "runtime file: the interval must be above 0");
  }
  auto state = std::make_shared<State>(runtime, std::move(path), every);
  // The program hears of a bad file at start from the error: no log too.
  if (auto read = state->Reload(false); !read) return tl::unexpected(read.error());
  {
    std::lock_guard lock(state->mu);
    state->Schedule(state);
  }
  return std::unique_ptr<RuntimeFile>(new RuntimeFile(std::move(state)));
}

RuntimeFile::~RuntimeFile() {
  std::lock_guard lock(state_->mu);
  state_->stopped = true;
  state_->timer.Cancel();
}

Result<void> RuntimeFile::Reload() { return state_->Reload(true); }

Subscription RuntimeFile::Control(std::string dependency, Target target) {
  std::lock_guard lock(state_->mu);
  std::uint64_t id = state_->next_id++;
  State::Controlled& c = state_->controlled[id];
  c.dependency = std::move(dependency);
  c.faults = target.own_faults;
  c.rate_limit = target.own_rate_limit;
  c.target = std::move(target);
  State::Apply(c, state_->Find(c.dependency));
  return Subscription([state = state_, id] {
    std::lock_guard guard(state->mu);
    auto it = state->controlled.find(id);
    if (it == state->controlled.end()) return;
    State::Apply(it->second, nullptr);
    state->controlled.erase(it);
  });
}

Subscription RuntimeFile::Control(std::string dependency, http::Client& client) {
  return Control(std::move(dependency), TargetOf(client));
}

}  // namespace outbound::config
