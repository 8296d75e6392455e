// SPDX-License-Identifier: Apache-2.0
#include "outbound/http/sender.h"

#include <memory>
#include <utility>

namespace outbound::http {

std::future<Result<Response>> Sender::SendAsync(Request request) {
  // Shared: a Callback is a std::function, which must be copyable.
  auto promise = std::make_shared<std::promise<Result<Response>>>();
  std::future<Result<Response>> future = promise->get_future();
  SendAsync(std::move(request), [promise](Result<Response> result, std::exception_ptr thrown) {
    if (thrown) {
      promise->set_exception(thrown);
    } else {
      promise->set_value(std::move(result));
    }
  });
  return future;
}

}  // namespace outbound::http
