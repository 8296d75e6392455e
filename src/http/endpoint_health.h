// SPDX-License-Identifier: Apache-2.0
// Outlier detection over one client's endpoints (Settings::balancing): each
// endpoint's run of failures, its ejections, and the share of endpoints
// out at once. The pool asks whether an endpoint may take attempts; the
// outlier-detection layer reports each attempt's outcome to the endpoint
// that carried it. Internal.
#ifndef OUTBOUND_SRC_HTTP_ENDPOINT_HEALTH_H_
#define OUTBOUND_SRC_HTTP_ENDPOINT_HEALTH_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "outbound/clock.h"
#include "outbound/http/settings.h"

namespace outbound::http::internal {

class OutlierDetector;

// One endpoint as outlier detection sees it. Shared by the pool and the
// outcomes of the attempts it carried, which may outlive its place in the
// pool (a report then changes nothing). Thread-safe but `outstanding`.
class EndpointHealth {
 public:
  EndpointHealth(std::uint64_t id, std::string name, std::shared_ptr<OutlierDetector> detector);
  EndpointHealth(const EndpointHealth&) = delete;
  EndpointHealth& operator=(const EndpointHealth&) = delete;

  // The client's own number for it (never 0) and "10.0.0.7:8443".
  std::uint64_t id() const { return id_; }
  const std::string& name() const { return name_; }

  // What a failure's report did to the endpoint (a success's: nothing).
  struct Reported {
    std::optional<Duration> ejected_for;  // this report ejected it, for so long
    bool out = false;                     // it is ejected (by this report or before)
    bool others_serve = false;            // some other endpoint is not ejected
  };
  // One attempt's outcome: a failure in a run of consecutive_failures
  // ejects the endpoint, if the share allows.
  Reported Report(bool failed, TimePoint now);
  // Whether attempts may go to it now: not ejected, or its ejection's time
  // is over (it is then probed back with calls as any other).
  bool Available(TimePoint now);

  // Attempts carried and not yet ended: the pool's count, on the loop.
  int outstanding = 0;

 private:
  friend class OutlierDetector;
  const std::uint64_t id_;
  const std::string name_;
  const std::shared_ptr<OutlierDetector> detector_;
  // Guarded by the detector's mutex.
  bool tracked_ = true;  // still one of the pool's endpoints
  int failures_in_a_row_ = 0;
  int ejections_ = 0;
  std::optional<TimePoint> ejected_until_;
};

// The rules and the counts all endpoints share. Thread-safe.
class OutlierDetector : public std::enable_shared_from_this<OutlierDetector> {
 public:
  explicit OutlierDetector(OutlierDetection settings) : settings_(settings) {}

  // A new endpoint of the pool, and one gone from it.
  std::shared_ptr<EndpointHealth> Track(std::uint64_t id, std::string name);
  void Untrack(EndpointHealth& endpoint);

 private:
  friend class EndpointHealth;
  // Whether one more endpoint may be out, of `tracked_`. Under mu_.
  bool MayEject() const;
  // Whether a tracked endpoint other than `endpoint` is not ejected.
  // Under mu_.
  bool OthersServe(const EndpointHealth& endpoint) const;
  // Ends an ejection whose time is over. Under mu_.
  void EndEjectionIfDue(EndpointHealth& endpoint, TimePoint now);

  const OutlierDetection settings_;
  std::mutex mu_;
  int tracked_ = 0;
  int ejected_ = 0;
};

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_ENDPOINT_HEALTH_H_
