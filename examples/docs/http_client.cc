// SPDX-License-Identifier: Apache-2.0
//
// docs/http-client.md's blocks, compiled (scripts/check-doc-examples).
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <iostream>
#include <memory>
#include <string>

#include "outbound/http/asio.h"
#include "outbound/http/classify.h"
#include "outbound/http/client.h"
#include "outbound/http/sender.h"
#include "outbound/http/settings.h"

namespace outbound::docs {

namespace asio = boost::asio;

// [example coroutine]
asio::awaitable<void> ShowCharge(http::Sender& payments) {
  outbound::Result<http::Response> got =
      co_await http::AsyncSend(payments, http::Request::Get("/charges/1"), asio::use_awaitable);
  if (got) std::cout << got->status << " " << got->body << "\n";
}
// [end coroutine]

Result<http::Response> Require2xxExample(const std::unique_ptr<http::Client>& payments) {
  // [example require-2xx]
  auto charge = http::Require2xx(payments->Send(http::Request::Get("/charges/7")));
  // [end require-2xx]
  return charge;
}

void ClassifyExample(http::Settings& settings) {
  // [example classify]
  settings.classify = [](const outbound::Result<http::Response>& result) {
    if (result && result->status == 409) {  // another write is in flight; over by the next attempt
      return http::Classification{retry::Outcome::kRetry, {}, circuit::Outcome::kSuccess};
    }
    if (result && result->body.find("\"error\"") != std::string::npos) {  // a 200 carrying an error
      return http::Classification{retry::Outcome::kRetry, {}, circuit::Outcome::kSuccess};
    }
    return http::DefaultClassify(result);
  };
  // [end classify]
}

void ClassifySentExample(http::Settings& settings) {
  // [example classify-sent]
  settings.classify = [](const http::SentRequest& sent,
                         const outbound::Result<http::Response>& result) {
    if (sent.method == "DELETE" && result && result->status == 404) {
      return http::Classification{};  // gone already: the delete succeeded
    }
    return http::DefaultClassify(result);
  };
  // [end classify-sent]
}

}  // namespace outbound::docs
