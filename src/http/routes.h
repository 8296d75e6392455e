// SPDX-License-Identifier: Apache-2.0
// The policy each call runs under (Settings::routes): the client's own, or
// a route's in its place, chosen once as the call starts from the path it
// was sent to. Every call has one (CallState::policy), so the layers read
// their rule from it without asking whether the call has a route. Internal.
#ifndef OUTBOUND_SRC_HTTP_ROUTES_H_
#define OUTBOUND_SRC_HTTP_ROUTES_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "outbound/clock.h"
#include "outbound/error.h"
#include "outbound/http/classify.h"
#include "outbound/http/settings.h"
#include "outbound/retry/budget.h"
#include "outbound/retry/retrier.h"

namespace outbound::http::internal {

// A route's rules, each the route's own or the client's; the client's own
// rules are its first route, whose prefix is "".
struct CallPolicy {
  std::string path_prefix;  // "" for the client's own
  std::size_t index = 0;    // its place among the client's routes
  Duration timeout{0};
  std::optional<Duration> attempt_timeout;  // none: the attempt has only the call's
  retry::Retrier retrier;                   // its attempts, on the client's budget
  Classify classify;
};

// The routes of one client, built once; lives as long as the client.
class Routes {
 public:
  // The client's own rules from `settings` (an attempt timeout only where
  // `attempt_timeout` is set), each of settings.routes over them, every
  // retrier spending `budget`, which outlives this.
  Routes(const Settings& settings, std::optional<Duration> attempt_timeout, retry::Budget& budget);
  Routes(const Routes&) = delete;
  Routes& operator=(const Routes&) = delete;

  // The policy of a call to `url` (a path, or an absolute URL on the
  // client's origin): the longest path prefix that matches it whole
  // segments at a time (RoutePolicy::path_prefix), else the client's own.
  const CallPolicy& For(std::string_view url) const {
    // Most clients have no routes: their calls pay one comparison.
    return routes_.size() == 1 ? routes_.front() : Search(url);
  }

  // Every route, the client's own first.
  const std::vector<CallPolicy>& all() const { return routes_; }

 private:
  const CallPolicy& Search(std::string_view url) const;

  std::vector<CallPolicy> routes_;  // the client's own first, then longest prefix first
};

// Every wrong field of `routes`, each as "[1].timeout: must be positive":
// a prefix (named `prefix_field`) without a leading "/", with a query, or
// given twice, or a timeout, attempt timeout or attempt count Settings
// would refuse.
std::vector<std::string> RoutePolicyProblems(const std::vector<RoutePolicy>& routes,
                                             std::string_view prefix_field);

// Whether `path` is under `prefix` whole segments at a time: "/v1/reports"
// holds "/v1/reports", "/v1/reports/2026" and "/v1/reports?year=2026", not
// "/v1/reportsX"; a prefix ending in "/" holds whatever follows it.
bool UnderPrefix(std::string_view path, std::string_view prefix);

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_ROUTES_H_
