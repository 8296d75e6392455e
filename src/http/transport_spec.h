// SPDX-License-Identifier: Apache-2.0
// What a Transport is told of the client it carries attempts for
// (outbound/http/transport.h). Internal.
#ifndef OUTBOUND_SRC_HTTP_TRANSPORT_SPEC_H_
#define OUTBOUND_SRC_HTTP_TRANSPORT_SPEC_H_

#include "origin.h"
#include "outbound/http/settings.h"
#include "outbound/runtime.h"

namespace outbound::http::internal {

struct TransportSpec {
  const Runtime& runtime;
  const Settings& settings;  // the client's, checked
  const Origin& origin;
};

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_TRANSPORT_SPEC_H_
