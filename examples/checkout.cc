// SPDX-License-Identifier: Apache-2.0
#include "checkout.h"

#include <chrono>
#include <filesystem>
#include <system_error>

#include "outbound/http/json.h"

namespace checkout {

namespace http = outbound::http;
using namespace std::chrono_literals;

// [example charge]
outbound::Result<std::string> Checkout::Charge(std::string_view customer, int amount_cents,
                                               std::string_view key) {
  // A POST is sent once unless it carries an idempotency key: with one, the
  // client retries it like a GET.
  auto sent = payments_->Send(
      http::Request::Post("/charges",
                          http::Json({{"customer", customer}, {"amount", amount_cents}}))
          .Header("Idempotency-Key", std::string(key)));
  // A 5xx that outlasted the retries is still a response: only 2xx is a charge.
  auto charge = http::ReadJson(http::Require2xx(std::move(sent)));
  if (!charge) return tl::unexpected(charge.error());
  return charge->value("id", "");
}
// [end charge]

// [example list]
outbound::Result<std::vector<std::string>> Checkout::Charges(std::string_view customer, int limit) {
  auto listed =
      payments_->Send(http::Request::Get("/charges")
                          .WithQuery(http::Query().Add("customer", customer).Add("limit", limit))
                          .WithTimeout(300ms));  // this call's own bound, on the client's clock
  auto page = http::ReadJson(http::Require2xx(std::move(listed)));
  if (!page) return tl::unexpected(page.error());
  std::vector<std::string> ids;
  for (const auto& charge : (*page)["data"]) ids.push_back(charge.value("id", ""));
  return ids;
}
// [end list]

outbound::Result<void> Checkout::Describe(std::string_view charge_id,
                                          std::string_view description) {
  auto done = payments_->Send(
      http::Request::Put("/charges/" + http::PercentEncode(charge_id) + "/description",
                         http::Body{std::string(description), "text/plain"}));
  if (auto ok = http::Require2xx(std::move(done)); !ok) return tl::unexpected(ok.error());
  return {};
}

// [example cancel]
outbound::Result<void> Checkout::Cancel(std::string_view charge_id) {
  auto resp = payments_->Send(http::Request::Delete("/charges/" + http::PercentEncode(charge_id)));
  if (!resp) return tl::unexpected(resp.error());  // kRejected, kDeadline, kTransport...
  if (resp->status == 404) return {};              // already gone: cancelled
  return http::Require2xx(std::move(resp)).map([](const http::Response&) {});
}
// [end cancel]

// [example export]
outbound::Result<void> Checkout::Export(std::string_view month, std::ostream& out) {
  // The body of the 2xx answer goes to `out` as it arrives, with no size
  // limit; the call returns once it has ended (or failed: kTransport).
  auto write = [&out](std::string_view chunk) {
    return static_cast<bool>(out.write(chunk.data(), static_cast<std::streamsize>(chunk.size())));
  };
  auto sent = payments_->Send(
      http::Request::Get("/exports/" + http::PercentEncode(month) + ".csv").StreamBodyTo(write));
  return http::Require2xx(std::move(sent)).map([](const http::Response&) {});
}
// [end export]

// [example upload]
outbound::Result<void> Checkout::SubmitEvidence(std::string_view dispute_id,
                                                const std::string& path) {
  std::error_code error;
  std::uintmax_t size = std::filesystem::file_size(path, error);
  if (error)
    return outbound::Fail(outbound::ErrorKind::kInvalidRequest, path + ": " + error.message());
  // Each attempt reads the file again from its start: a PUT is retried
  // like a GET, the file sent whole each time, never held in memory.
  auto sent = payments_->Send(
      http::Request::Put("/disputes/" + http::PercentEncode(dispute_id) + "/evidence")
          .Header("Content-Type", "application/pdf")
          .StreamBodyFrom(http::FileReader(path), size));
  return http::Require2xx(std::move(sent)).map([](const http::Response&) {});
}
// [end upload]

}  // namespace checkout
