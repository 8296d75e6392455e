// SPDX-License-Identifier: Apache-2.0
// outbound/http/auth.h
//
// Credentials held by a client, as attempt middleware: the Authorization
// header is added to attempts on the client's own origin and to no other
// (a client never sends elsewhere, and the middleware checks again).
//
// example: examples/headers/http.cc#auth
//   settings.attempt_middleware.push_back(http::WithBearerToken(
//       [&vault](bool refresh) { return refresh ? vault.Renew() : vault.Current(); }));
//
// The provider is asked before every attempt, so a rotating token is always
// current. When an attempt that carried it is answered 401 with a
// WWW-Authenticate header, the request is sent once more at once, and the
// provider is asked for that attempt with `refresh` true; a second 401 is
// the call's answer (never a loop). The credential is never written to an
// error message, an AttemptRecord, a span or a log record: none of them
// holds a request header.
#ifndef OUTBOUND_HTTP_AUTH_H_
#define OUTBOUND_HTTP_AUTH_H_

#include <functional>
#include <memory>
#include <string>

#include "outbound/http/middleware.h"

namespace outbound::http {

// The credential for one attempt; `refresh` is true for the attempt that
// repeats one the dependency refused. Thread-safe and quick (it runs on
// the client's threads); empty: the attempt carries no Authorization.
using CredentialProvider = std::function<std::string(bool refresh)>;

// "Authorization: Bearer <token>".
std::shared_ptr<AttemptMiddleware> WithBearerToken(CredentialProvider token);
std::shared_ptr<AttemptMiddleware> WithBearerToken(std::string token);

// "Authorization: Basic <base64(user:password)>", encoded once. A colon in
// `user` cannot be told from the separator (RFC 7617): don't use one.
std::shared_ptr<AttemptMiddleware> WithBasicAuth(const std::string& user,
                                                 const std::string& password);

}  // namespace outbound::http

#endif  // OUTBOUND_HTTP_AUTH_H_
