// SPDX-License-Identifier: Apache-2.0
#include "outbound/version.h"

namespace outbound {

std::string_view Version() { return OUTBOUND_VERSION_STRING; }

}  // namespace outbound
