// SPDX-License-Identifier: Apache-2.0
#include "routes.h"

#include <algorithm>
#include <string>
#include <utility>

#include "url_path.h"

namespace outbound::http::internal {

bool UnderPrefix(std::string_view path, std::string_view prefix) {
  if (!path.starts_with(prefix)) return false;
  if (path.size() == prefix.size() || prefix.ends_with('/')) return true;
  char next = path[prefix.size()];
  return next == '/' || next == '?' || next == '#';
}

std::vector<std::string> RoutePolicyProblems(const std::vector<RoutePolicy>& routes,
                                             std::string_view prefix_field) {
  std::vector<std::string> problems;
  for (std::size_t i = 0; i < routes.size(); ++i) {
    const RoutePolicy& route = routes[i];
    auto wrong = [&](std::string_view field, const std::string& why) {
      problems.push_back("[" + std::to_string(i) + "]." + std::string(field) + ": " + why);
    };
    const std::string& prefix = route.path_prefix;
    if (!prefix.starts_with('/')) {
      wrong(prefix_field, "must start with '/' (\"" + prefix + "\")");
    } else if (prefix.find_first_of("?#") != std::string::npos) {
      wrong(prefix_field, "a path has no query or fragment (\"" + prefix + "\")");
    } else {
      for (std::size_t j = 0; j < i; ++j) {
        if (routes[j].path_prefix == prefix) {
          wrong(prefix_field, "\"" + prefix + "\" is [" + std::to_string(j) + "]'s already");
          break;
        }
      }
    }
    if (route.timeout) {
      if (auto checked = CheckTimeout(*route.timeout); !checked) {
        wrong("timeout", checked.error().message());
      }
    }
    if (route.attempt_timeout) {
      if (auto checked = CheckAttemptTimeout(*route.attempt_timeout); !checked) {
        wrong("attempt_timeout", checked.error().message());
      }
    }
    if (route.max_attempts) {
      if (auto checked = CheckMaxAttempts(*route.max_attempts); !checked) {
        wrong("max_attempts", checked.error().message());
      }
    }
  }
  return problems;
}

Routes::Routes(const Settings& settings, std::optional<Duration> attempt_timeout,
               retry::Budget& budget) {
  // Longest prefix first, so the first that matches is the longest.
  std::vector<const RoutePolicy*> policies;
  for (const RoutePolicy& policy : settings.routes) policies.push_back(&policy);
  std::stable_sort(policies.begin(), policies.end(), [](const auto* a, const auto* b) {
    return a->path_prefix.size() > b->path_prefix.size();
  });
  retry::Exponential backoff(settings.backoff_base, settings.backoff_max);
  routes_.reserve(policies.size() + 1);
  routes_.push_back(CallPolicy{"", 0, settings.timeout, attempt_timeout,
                               retry::Retrier({settings.max_attempts, backoff}, budget),
                               settings.classify});
  for (const RoutePolicy* policy : policies) {
    routes_.push_back(CallPolicy{
        policy->path_prefix, routes_.size(), policy->timeout.value_or(settings.timeout),
        policy->attempt_timeout ? policy->attempt_timeout : attempt_timeout,
        retry::Retrier({policy->max_attempts.value_or(settings.max_attempts), backoff}, budget),
        policy->classify ? policy->classify : settings.classify});
  }
}

const CallPolicy& Routes::Search(std::string_view url) const {
  std::string_view path = PathOf(url);
  for (std::size_t i = 1; i < routes_.size(); ++i) {
    if (UnderPrefix(path, routes_[i].path_prefix)) return routes_[i];
  }
  return routes_.front();
}

}  // namespace outbound::http::internal
