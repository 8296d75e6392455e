// SPDX-License-Identifier: Apache-2.0
#include "endpoint_health.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace outbound::http::internal {

EndpointHealth::EndpointHealth(std::uint64_t id, std::string name,
                               std::shared_ptr<OutlierDetector> detector)
    : id_(id), name_(std::move(name)), detector_(std::move(detector)) {}

EndpointHealth::Reported EndpointHealth::Report(bool failed, TimePoint now) {
  OutlierDetector& d = *detector_;
  std::lock_guard lock(d.mu_);
  if (!tracked_) return {};
  d.EndEjectionIfDue(*this, now);
  if (!failed) {
    failures_in_a_row_ = 0;
    return {};  // a success is no one's to take
  }
  ++failures_in_a_row_;
  int threshold = d.settings_.consecutive_failures;
  // An attempt that was under way when the endpoint was ejected adds
  // nothing: the ejection already counts its run.
  if (ejected_until_) return {.out = true, .others_serve = d.OthersServe(*this)};
  if (threshold == 0 || failures_in_a_row_ < threshold || !d.MayEject()) return {};
  ++ejections_;
  failures_in_a_row_ = 0;
  ++d.ejected_;
  // base * n, capped, without overflowing on the way.
  Duration out = d.settings_.base_ejection > d.settings_.max_ejection / ejections_
                     ? d.settings_.max_ejection
                     : d.settings_.base_ejection * ejections_;
  ejected_until_ = AddSaturated(now, out);
  return {.ejected_for = out, .out = true, .others_serve = d.OthersServe(*this)};
}

bool EndpointHealth::Available(TimePoint now) {
  OutlierDetector& d = *detector_;
  std::lock_guard lock(d.mu_);
  d.EndEjectionIfDue(*this, now);
  return !ejected_until_;
}

std::shared_ptr<EndpointHealth> OutlierDetector::Track(std::uint64_t id, std::string name) {
  auto endpoint = std::make_shared<EndpointHealth>(id, std::move(name), shared_from_this());
  std::lock_guard lock(mu_);
  ++tracked_;
  return endpoint;
}

void OutlierDetector::Untrack(EndpointHealth& endpoint) {
  std::lock_guard lock(mu_);
  if (!endpoint.tracked_) return;
  endpoint.tracked_ = false;
  --tracked_;
  if (endpoint.ejected_until_) --ejected_;
}

bool OutlierDetector::MayEject() const {
  // The only endpoint is never out; of two or more, one may always be.
  if (tracked_ < 2) return false;
  int allowed = std::max(1, static_cast<int>(std::floor(settings_.max_ejected_share * tracked_)));
  if (settings_.max_ejected_share == 0) allowed = 0;
  return ejected_ < allowed;
}

bool OutlierDetector::OthersServe(const EndpointHealth& endpoint) const {
  // The ejected count includes `endpoint` when it is out.
  int out_besides = ejected_ - (endpoint.ejected_until_ ? 1 : 0);
  return tracked_ - 1 - out_besides > 0;
}

void OutlierDetector::EndEjectionIfDue(EndpointHealth& endpoint, TimePoint now) {
  if (!endpoint.ejected_until_ || now < *endpoint.ejected_until_) return;
  endpoint.ejected_until_.reset();
  endpoint.failures_in_a_row_ = 0;
  --ejected_;
}

}  // namespace outbound::http::internal
