// SPDX-License-Identifier: Apache-2.0
// What a Transport is told of the client it carries attempts for
// (outbound/http/transport.h). Internal.
#ifndef OUTBOUND_SRC_HTTP_TRANSPORT_SPEC_H_
#define OUTBOUND_SRC_HTTP_TRANSPORT_SPEC_H_

#include "origin.h"
#include "outbound/http/message.h"
#include "outbound/http/settings.h"
#include "outbound/runtime.h"

namespace outbound::http::internal {

// Whether an answer's body is the caller's, told the answer's head (its
// status and headers).
using BodyWanted = bool (*)(const Response& head);

struct TransportSpec {
  const Runtime& runtime;
  const Settings& settings;  // the client's, checked
  const Origin& origin;
  // What the client's front end asks of the wire (FrontEnd): HTTP/2 only;
  // and whose bodies to keep (null: every one), the rest read and dropped,
  // neither kept nor streamed, within Settings::max_error_response_bytes.
  bool http2_only = false;
  BodyWanted body_wanted = nullptr;
};

}  // namespace outbound::http::internal

#endif  // OUTBOUND_SRC_HTTP_TRANSPORT_SPEC_H_
