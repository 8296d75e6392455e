// SPDX-License-Identifier: Apache-2.0
#include "outbound/telemetry/otlp.h"

#include <algorithm>
#include <array>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <random>
#include <string_view>
#include <utility>
#include <vector>

#include "otlp_json.h"
#include "outbound/http/client.h"
#include "outbound/internal/ascii.h"
#include "outbound/internal/problems.h"

namespace outbound::telemetry {
namespace {

Result<void> Positive(Duration d) {
  if (d <= Duration::zero()) return Fail(ErrorKind::kInvalidSettings, "must be positive");
  return {};
}

bool IsHttps(const std::string& endpoint) {
  return outbound::internal::StartsWithIgnoringAsciiCase(endpoint, "https://");
}

// A batch is sent at most this many times.
constexpr int kExportAttempts = 5;

// OTLP/HTTP's rule for a failed export: 429, 502, 503 and 504 are sent
// again (after the Retry-After a 429 or 503 names), and so is a request
// whose connection failed; any other status is final. A receiver that asks
// for time (429, 503) is up: its answer is not a failure to the breaker of
// the exporter's client, which would otherwise open on one batch's attempts
// and fail the queued batches unsent.
http::Classification ClassifyExport(const Result<http::Response>& result) {
  http::Classification verdict = http::DefaultClassify(result);
  if (!result) return verdict;
  int status = result->status;
  if (status == 429 || status == 503) {
    verdict.breaker = circuit::Outcome::kSuccess;
  } else if (status != 502 && status != 504 && verdict.retry == retry::Outcome::kRetry) {
    verdict.retry = retry::Outcome::kStop;
  }
  return verdict;
}

// The exporter's part of its batches' Idempotency-Keys: 64 bits from the
// OS's randomness, in decimal, not from the Runtime's Random (which a
// program may fix, and then two exporters would share their keys). A
// batch's key is this, "-" and the batch's number, the same on each
// attempt of the batch, so a receiver can tell a batch sent again from a
// new one. (The header is also what lets the client repeat a POST.)
std::string KeyPrefix() {
  std::random_device device;
  std::uint64_t bits = static_cast<std::uint64_t>(device()) << 32 | device();
  return std::to_string(bits) + '-';
}

// Lets the destructor wait out a timer callback that has already begun:
// cancelling a Timer does not wait for one running on another thread.
class Lifeline {
 public:
  // Runs `fn` unless Close has begun.
  template <typename Fn>
  void Run(Fn&& fn) {
    {
      std::lock_guard lock(mu_);
      if (closed_) return;
      ++running_;
    }
    fn();
    std::lock_guard lock(mu_);
    if (--running_ == 0) idle_.notify_all();
  }

  // Stops later Runs and waits for those running.
  void Close() {
    std::unique_lock lock(mu_);
    closed_ = true;
    idle_.wait(lock, [&] { return running_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable idle_;
  bool closed_ = false;
  int running_ = 0;
};

// What one signal's requests have done, in items (spans, records or
// snapshots): accepted >= taken >= settled. Items queued are
// accepted - taken; items in flight are taken - settled.
struct Lane {
  std::string url;
  std::uint64_t accepted = 0;
  std::uint64_t taken = 0;
  std::uint64_t settled = 0;
  // Send partial batches until `taken` reaches this (a flush).
  std::uint64_t drain_to = 0;
  bool in_flight = false;
};

enum Signal { kTraces, kLogs, kMetrics, kSignals };

}  // namespace

struct OtlpExporter::Impl {
  Impl(const Runtime& runtime, OtlpSettings s)
      : clock(*runtime.clock),
        key_prefix(KeyPrefix()),
        settings(std::move(s)),
        resource{settings.service_name} {
    std::string base = settings.endpoint;
    while (!base.empty() && base.back() == '/') base.pop_back();
    lanes[kTraces].url = base + "/v1/traces";
    lanes[kLogs].url = base + "/v1/logs";
    lanes[kMetrics].url = base + "/v1/metrics";
    start = clock.WallNow();
  }

  // Sends a batch on every signal that has one ready and nothing in flight.
  void Pump();
  // A request of `lane` for `items` items ended.
  // `rejected` of the `items` sent failed.
  void Done(Signal lane, std::uint64_t items, std::uint64_t rejected);
  // Arms the next periodic flush. Under mu.
  void ArmFlushTimer();
  // Sets every lane to send what is queued now; returns each lane's accepted.
  std::array<std::uint64_t, kSignals> DrainAll();
  bool SettledUpTo(const std::array<std::uint64_t, kSignals>& targets) const;
  // Arms a send at the clock's next chance, off the caller's thread. Under mu.
  void Kick();

  Clock& clock;
  const std::string key_prefix;
  const OtlpSettings settings;
  const internal::OtlpResource resource;
  std::chrono::system_clock::time_point start;  // of the cumulative metrics
  std::unique_ptr<http::Client> client;
  std::shared_ptr<Lifeline> lifeline = std::make_shared<Lifeline>();

  mutable std::mutex mu;
  std::condition_variable changed;  // a request ended or was sent, or the destructor gave up
  std::array<Lane, kSignals> lanes;
  std::deque<SpanData> spans;
  std::deque<LogRecord> logs;
  std::optional<std::string> metrics_body;  // a snapshot, encoded, not yet sent
  std::uint64_t dropped = 0;
  std::uint64_t failed = 0;
  std::uint64_t batches = 0;  // sent so far, for their keys
  bool closing = false;
  bool giving_up = false;
  // Pumps between taking a batch and SendAsync's return: the destructor
  // waits for them before it destroys the client.
  int sending = 0;
  Timer flush_timer;
  Timer kick_timer;
};

void OtlpExporter::Impl::ArmFlushTimer() {
  flush_timer = clock.ScheduleAfter(settings.flush_interval, [this, life = lifeline] {
    life->Run([this] {
      {
        std::lock_guard lock(mu);
        if (closing) return;
        for (Lane& lane : lanes) lane.drain_to = lane.accepted;
        ArmFlushTimer();
      }
      Pump();
    });
  });
}

void OtlpExporter::Impl::Kick() {
  if (kick_timer.pending() || closing) return;
  kick_timer =
      clock.ScheduleAt(clock.Now(), [this, life = lifeline] { life->Run([this] { Pump(); }); });
}

std::array<std::uint64_t, kSignals> OtlpExporter::Impl::DrainAll() {
  std::array<std::uint64_t, kSignals> targets{};
  for (int i = 0; i < kSignals; ++i) {
    lanes[i].drain_to = lanes[i].accepted;
    targets[i] = lanes[i].accepted;
  }
  return targets;
}

bool OtlpExporter::Impl::SettledUpTo(const std::array<std::uint64_t, kSignals>& targets) const {
  for (int i = 0; i < kSignals; ++i) {
    if (lanes[i].settled < targets[i]) return false;
  }
  return true;
}

void OtlpExporter::Impl::Pump() {
  const std::size_t batch = static_cast<std::size_t>(settings.max_batch_size);
  for (int i = 0; i < kSignals; ++i) {
    Signal signal = static_cast<Signal>(i);
    std::vector<SpanData> span_batch;
    std::vector<LogRecord> log_batch;
    std::string body;
    std::uint64_t items = 0;
    std::uint64_t number = 0;
    {
      std::lock_guard lock(mu);
      Lane& lane = lanes[i];
      std::uint64_t queued = lane.accepted - lane.taken;
      if (closing || lane.in_flight || queued == 0) continue;
      if (queued < batch && lane.taken >= lane.drain_to) continue;
      items = std::min<std::uint64_t>(queued, batch);
      if (signal == kTraces) {
        std::move(spans.begin(), spans.begin() + static_cast<std::ptrdiff_t>(items),
                  std::back_inserter(span_batch));
        spans.erase(spans.begin(), spans.begin() + static_cast<std::ptrdiff_t>(items));
      } else if (signal == kLogs) {
        std::move(logs.begin(), logs.begin() + static_cast<std::ptrdiff_t>(items),
                  std::back_inserter(log_batch));
        logs.erase(logs.begin(), logs.begin() + static_cast<std::ptrdiff_t>(items));
      } else {
        body = std::move(*metrics_body);
        metrics_body.reset();
      }
      lane.taken += items;
      lane.in_flight = true;
      number = ++batches;
      ++sending;
    }
    // Encoded outside the lock, so OnEnd and Emit never wait for it.
    internal::UnixTime time(clock.Now(), clock.WallNow());
    if (signal == kTraces) body = internal::EncodeSpans(resource, span_batch, time);
    if (signal == kLogs) body = internal::EncodeLogs(resource, log_batch, time);
    http::Request request{"POST", lanes[i].url};
    request.body = std::move(body);
    request.Header("Content-Type", "application/json");
    request.Header("Idempotency-Key", key_prefix + std::to_string(number));
    client->SendAsync(std::move(request), [this, signal, items](Result<http::Response> result,
                                                                std::exception_ptr) {
      std::uint64_t rejected = items;
      if (result && result->status / 100 == 2) {
        // A partial success: what the receiver says it rejected failed (a
        // metric snapshot, whole, if any of its points was).
        static constexpr std::array<std::string_view, kSignals> kRejected = {
            "rejectedSpans", "rejectedLogRecords", "rejectedDataPoints"};
        std::uint64_t said = internal::RejectedItems(result->body, kRejected[signal]);
        rejected = signal == kMetrics ? (said > 0 ? items : 0) : std::min(said, items);
      }
      Done(signal, items, rejected);
    });
    {
      std::lock_guard lock(mu);
      --sending;
    }
    changed.notify_all();
  }
}

void OtlpExporter::Impl::Done(Signal signal, std::uint64_t items, std::uint64_t rejected) {
  {
    std::lock_guard lock(mu);
    Lane& lane = lanes[signal];
    lane.in_flight = false;
    lane.settled += items;
    failed += rejected;
  }
  changed.notify_all();
  Pump();  // the next batch, if one is ready
}

Result<void> CheckOtlpEndpoint(const std::string& endpoint) {
  if (endpoint.empty()) return Fail(ErrorKind::kInvalidSettings, "must be set");
  if (!outbound::internal::StartsWithIgnoringAsciiCase(endpoint, "http://") && !IsHttps(endpoint)) {
    return Fail(ErrorKind::kInvalidSettings, "must be an http or https URL");
  }
  return http::CheckBaseUrl(endpoint);
}

Result<void> CheckServiceName(const std::string& service_name) {
  if (service_name.empty()) return Fail(ErrorKind::kInvalidSettings, "must be set");
  return {};
}

Result<void> CheckMaxBatchSize(int max_batch_size) {
  if (max_batch_size < 1) return Fail(ErrorKind::kInvalidSettings, "must be 1 or more");
  return {};
}

Result<void> CheckMaxQueueSize(int max_queue_size) {
  if (max_queue_size < 1 || max_queue_size > 1000000) {
    return Fail(ErrorKind::kInvalidSettings, "must be from 1 to 1000000");
  }
  return {};
}

Result<void> CheckFlushInterval(Duration flush_interval) { return Positive(flush_interval); }
Result<void> CheckExportTimeout(Duration export_timeout) { return Positive(export_timeout); }

Result<void> Validate(const OtlpSettings& s) {
  std::vector<std::string> problems;
  auto check = [&](const char* field, const Result<void>& result) {
    if (!result) {
      problems.push_back(std::string("OtlpSettings.") + field + ": " + result.error().message());
    }
  };
  check("endpoint", CheckOtlpEndpoint(s.endpoint));
  check("tls", http::CheckTls(s.tls));
  check("service_name", CheckServiceName(s.service_name));
  check("max_batch_size", CheckMaxBatchSize(s.max_batch_size));
  check("max_queue_size", CheckMaxQueueSize(s.max_queue_size));
  check("flush_interval", CheckFlushInterval(s.flush_interval));
  check("export_timeout", CheckExportTimeout(s.export_timeout));
  if (s.max_batch_size > s.max_queue_size && s.max_queue_size >= 1) {
    problems.push_back("OtlpSettings.max_batch_size must be at most OtlpSettings.max_queue_size");
  }
  if (CheckOtlpEndpoint(s.endpoint)) {
    bool https = IsHttps(s.endpoint);
    if (https && !s.tls) {
      problems.push_back("OtlpSettings.tls must be set for an https OtlpSettings.endpoint");
    }
    if (!https && s.tls) {
      problems.push_back("OtlpSettings.tls must be empty for an http OtlpSettings.endpoint");
    }
  }
  return outbound::internal::Refuse(problems);
}

Result<std::unique_ptr<OtlpExporter>> OtlpExporter::Create(const Runtime& runtime,
                                                           OtlpSettings settings) {
  if (auto valid = Validate(settings); !valid) return tl::unexpected(valid.error());
  // The exporter's own client reports nothing: its spans would be exported
  // by itself, and so on without end.
  Runtime quiet = runtime;
  quiet.telemetry = {};
  http::Settings client_settings = http::DefaultSettings();
  client_settings.base_url = settings.endpoint;
  client_settings.tls = settings.tls;
  // Each batch's attempts together take at most export_timeout. The
  // backoff's ceiling starts at a second, so a receiver shedding load is
  // not asked again within milliseconds, and a Retry-After is honoured up
  // to export_timeout (past that the batch could not be sent in time).
  client_settings.timeout = settings.export_timeout;
  client_settings.attempt_timeout = settings.export_timeout;
  client_settings.max_attempts = kExportAttempts;
  client_settings.backoff_base = std::chrono::seconds(1);
  client_settings.backoff_max =
      std::max<Duration>(settings.export_timeout, std::chrono::seconds(1));
  client_settings.classify = ClassifyExport;
  auto client = http::Client::Create(quiet, std::move(client_settings));
  if (!client) return tl::unexpected(client.error());

  auto impl = std::make_unique<Impl>(runtime, std::move(settings));
  impl->client = std::move(*client);
  {
    std::lock_guard lock(impl->mu);
    impl->ArmFlushTimer();
  }
  return std::unique_ptr<OtlpExporter>(new OtlpExporter(std::move(impl)));
}

OtlpExporter::OtlpExporter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

OtlpExporter::~OtlpExporter() {
  Impl& s = *impl_;
  Timer give_up;
  std::array<std::uint64_t, kSignals> targets{};
  {
    std::lock_guard lock(s.mu);
    targets = s.DrainAll();
    if (!s.SettledUpTo(targets)) {
      give_up = s.clock.ScheduleAfter(s.settings.export_timeout, [&s, life = s.lifeline] {
        life->Run([&s] {
          {
            std::lock_guard held(s.mu);
            s.giving_up = true;
          }
          s.changed.notify_all();
        });
      });
    }
  }
  s.Pump();
  Timer flush_timer;
  Timer kick_timer;
  {
    std::unique_lock lock(s.mu);
    s.changed.wait(lock, [&] { return s.giving_up || s.SettledUpTo(targets); });
    s.closing = true;                                      // Pump takes nothing more...
    s.changed.wait(lock, [&] { return s.sending == 0; });  // ...and has sent what it took
    flush_timer = std::move(s.flush_timer);
    kick_timer = std::move(s.kick_timer);
  }
  give_up.Cancel();
  flush_timer.Cancel();
  kick_timer.Cancel();
  s.lifeline->Close();
  // Ends what is still in flight (its callbacks run now, and send nothing).
  s.client.reset();
}

void OtlpExporter::OnEnd(SpanData&& span) {
  Impl& s = *impl_;
  std::lock_guard lock(s.mu);
  Lane& lane = s.lanes[kTraces];
  if (s.spans.size() >= static_cast<std::size_t>(s.settings.max_queue_size)) {
    ++s.dropped;
    return;
  }
  s.spans.push_back(std::move(span));
  ++lane.accepted;
  if (s.spans.size() >= static_cast<std::size_t>(s.settings.max_batch_size) && !lane.in_flight) {
    s.Kick();
  }
}

void OtlpExporter::Emit(LogRecord&& record) {
  Impl& s = *impl_;
  std::lock_guard lock(s.mu);
  Lane& lane = s.lanes[kLogs];
  if (s.logs.size() >= static_cast<std::size_t>(s.settings.max_queue_size)) {
    ++s.dropped;
    return;
  }
  s.logs.push_back(std::move(record));
  ++lane.accepted;
  if (s.logs.size() >= static_cast<std::size_t>(s.settings.max_batch_size) && !lane.in_flight) {
    s.Kick();
  }
}

void OtlpExporter::ExportMetrics(const MetricStore& store) {
  Impl& s = *impl_;
  std::vector<MetricData> metrics = store.Collect();
  std::string body = internal::EncodeMetrics(s.resource, metrics, s.start, s.clock.WallNow());
  {
    std::lock_guard lock(s.mu);
    Lane& lane = s.lanes[kMetrics];
    if (s.metrics_body) {
      ++lane.taken;  // the snapshot replaced counts as sent: this one supersedes it
      ++lane.settled;
    }
    s.metrics_body = std::move(body);
    ++lane.accepted;
    lane.drain_to = lane.accepted;
  }
  s.Pump();
}

bool OtlpExporter::ForceFlush() {
  Impl& s = *impl_;
  std::array<std::uint64_t, kSignals> targets{};
  std::uint64_t failed_before = 0;
  {
    std::lock_guard lock(s.mu);
    targets = s.DrainAll();
    failed_before = s.failed;
  }
  s.Pump();
  std::unique_lock lock(s.mu);
  s.changed.wait(lock, [&] { return s.SettledUpTo(targets); });
  return s.failed == failed_before;
}

std::uint64_t OtlpExporter::dropped() const {
  std::lock_guard lock(impl_->mu);
  return impl_->dropped;
}

std::uint64_t OtlpExporter::failed() const {
  std::lock_guard lock(impl_->mu);
  return impl_->failed;
}

}  // namespace outbound::telemetry
