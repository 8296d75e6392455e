// SPDX-License-Identifier: Apache-2.0
//
// A program outside the project that uses only the client: it builds one
// from the installed headers and library and makes a call that is refused
// (nothing listens on port 1 of loopback).
#include <cstdio>
#include <cstring>

#include "outbound/http/client.h"
#include "outbound/version.h"

int main() {
  if (outbound::Version() != OUTBOUND_VERSION_STRING) {
    std::fprintf(stderr, "headers %s, library %.*s\n", OUTBOUND_VERSION_STRING,
                 static_cast<int>(outbound::Version().size()), outbound::Version().data());
    return 1;
  }
  namespace http = outbound::http;
  http::Settings settings = http::DefaultSettings();
  settings.base_url = "http://127.0.0.1:1";
  settings.max_attempts = 1;
  auto client = http::Client::CreateOrThrow(outbound::Runtime{}, settings);
  auto response = client->Send(http::Request::Get("/").WithQuery(http::Query{{"q", "a b"}}));
  if (response || response.error().kind() != outbound::ErrorKind::kTransport) {
    std::fprintf(stderr, "expected a refused connection\n");
    return 1;
  }
  std::printf("http consumer: outbound %s, %s\n", OUTBOUND_VERSION_STRING,
              response.error().message().c_str());
  return 0;
}
