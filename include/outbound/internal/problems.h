// SPDX-License-Identifier: Apache-2.0
// outbound/internal/problems.h
//
// How every settings check says all that is wrong at once: each problem
// found, joined into one kInvalidSettings error. Internal to the library's
// parts; not for users.
#ifndef OUTBOUND_INTERNAL_PROBLEMS_H_
#define OUTBOUND_INTERNAL_PROBLEMS_H_

#include <string>
#include <vector>

#include "outbound/error.h"

namespace outbound::internal {

// kInvalidSettings naming each of `problems` ("a; b"); nothing if none.
inline Result<void> Refuse(const std::vector<std::string>& problems) {
  if (problems.empty()) return {};
  std::string message;
  for (const std::string& problem : problems) {
    if (!message.empty()) message += "; ";
    message += problem;
  }
  return Fail(ErrorKind::kInvalidSettings, message);
}

}  // namespace outbound::internal

#endif  // OUTBOUND_INTERNAL_PROBLEMS_H_
