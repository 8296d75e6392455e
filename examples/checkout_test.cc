// SPDX-License-Identifier: Apache-2.0
//
// Testing the checkout service's calls with outbound's kit: a fake payments
// dependency over TLS with a CA made for the test, reached by name, and the
// client on a ManualClock, so a 2 s Retry-After costs no real time.
// docs/testing.md and docs/http-client.md quote this file.
#include "checkout.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>

#include "outbound/http/client.h"
#include "outbound/testing/fake_server.h"
#include "outbound/testing/fixed_random.h"
#include "outbound/testing/manual_clock.h"
#include "outbound/testing/network_map.h"
#include "outbound/testing/scripted_client.h"
#include "outbound/testing/test_ca.h"

namespace {

namespace http = outbound::http;
using namespace outbound::testing;
using namespace std::chrono_literals;

// [example complete-test]
TEST(Checkout, RetriesAChargeAnswered503AfterItsRetryAfter) {
  TestCA ca;                // new keys, every test
  ManualClock clock;        // the client's waits and the fake's run on it
  FixedRandom random(0.5);  // jitter: each backoff is half its ceiling
  NetworkMap network;       // payments:8443 reaches the fake; nothing else resolves
  std::atomic<int> calls{0};
  auto payments = FakeServer::Start({
      .tls = ServerTls(ca.IssueServer({"payments"})),
      .handler =
          [&](const ServerRequest&) {
            if (++calls == 1) return Reply::Status(503).Header("Retry-After", "2");
            return Reply::Status(201, R"({"id":"ch_1"})")
                .Header("Content-Type", "application/json");
          },
      .clock = &clock,
  });
  ASSERT_TRUE(payments) << payments.error().message();
  network.Add("payments", 8443, "127.0.0.1", (*payments)->port());

  http::Settings settings = http::DefaultSettings();
  settings.base_url = "https://payments:8443";
  settings.tls = http::TlsSettings{.root_pem = ca.pem()};
  outbound::Runtime runtime{.clock = &clock, .network = &network, .random = &random};
  checkout::Checkout checkout(http::Client::CreateOrThrow(runtime, settings));

  // The call blocks, so it runs on a thread of its own while the test
  // moves the clock.
  auto charged =
      std::async(std::launch::async, [&] { return checkout.Charge("cus_7", 500, "k1"); });
  ASSERT_TRUE((*payments)->WaitForRequests(1));         // attempt 1 got its 503
  ASSERT_TRUE(clock.WaitForTimerBy(clock.Now() + 2s));  // the client waits out Retry-After
  clock.Advance(1999ms);
  EXPECT_EQ((*payments)->request_count(), 1u);  // not yet
  clock.Advance(1ms);                           // attempt 2 starts now
  auto id = charged.get();
  ASSERT_TRUE(id) << id.error().message();
  EXPECT_EQ(*id, "ch_1");

  auto requests = (*payments)->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].header("idempotency-key"), "k1");
  EXPECT_EQ(requests[1].body, R"({"amount":500,"customer":"cus_7"})");
}
// [end complete-test]

class CheckoutTest : public ::testing::Test {
 protected:
  void Serve(Handler handler) {
    auto started = FakeServer::Start({.tls = ServerTls(ca.IssueServer({"payments"})),
                                      .handler = std::move(handler),
                                      .clock = &clock});
    ASSERT_TRUE(started) << started.error().message();
    server = std::move(*started);
    network.Add("payments", 8443, "127.0.0.1", server->port());
    http::Settings settings = http::DefaultSettings();
    settings.base_url = "https://payments:8443";
    settings.tls = http::TlsSettings{.root_pem = ca.pem()};
    checkout.emplace(http::Client::CreateOrThrow(runtime, settings));
  }

  TestCA ca;
  ManualClock clock;
  FixedRandom random{0.5};
  NetworkMap network;
  outbound::Runtime runtime{.clock = &clock, .network = &network, .random = &random};
  std::unique_ptr<FakeServer> server;
  std::optional<checkout::Checkout> checkout;
};

TEST_F(CheckoutTest, ListsACustomersChargesWithAnEncodedQuery) {
  Serve([](const ServerRequest& r) {
    if (r.target != "/charges?customer=cus%207%26co&limit=10") return Reply::Status(400, r.target);
    return Reply::Ok(R"({"data":[{"id":"ch_1"},{"id":"ch_2"}]})")
        .Header("Content-Type", "application/json");
  });
  auto ids = checkout->Charges("cus 7&co", 10);
  ASSERT_TRUE(ids) << ids.error().message();
  EXPECT_EQ(*ids, (std::vector<std::string>{"ch_1", "ch_2"}));
}

TEST_F(CheckoutTest, ListingGivesUpAfterItsOwnTimeoutOnTheClock) {
  Serve([](const ServerRequest&) { return Reply::Hang(); });
  auto listed = std::async(std::launch::async, [&] { return checkout->Charges("cus_7", 10); });
  ASSERT_TRUE(server->WaitForRequests(1));
  clock.Advance(300ms);
  auto ids = listed.get();
  ASSERT_FALSE(ids);
  EXPECT_EQ(ids.error().kind(), outbound::ErrorKind::kDeadline);
}

TEST_F(CheckoutTest, ExportsAMonthAsItArrivesWithNoSizeLimit) {
  std::string csv = "id,amount\n";
  while (csv.size() < 1024 * 1024) csv += "ch_" + std::to_string(csv.size()) + ",500\n";
  Serve([&](const ServerRequest& r) {
    return r.target == "/exports/2026-11.csv" ? Reply::Ok(csv) : Reply::Status(404);
  });
  std::ostringstream out;
  auto exported = checkout->Export("2026-11", out);
  ASSERT_TRUE(exported) << exported.error().message();
  EXPECT_EQ(out.str(), csv);

  auto missing = checkout->Export("1999-01", out);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind(), outbound::ErrorKind::kHttpStatus);
}

TEST_F(CheckoutTest, SubmitsEvidenceReadFromAFileAgainForTheRetry) {
  std::atomic<int> seen{0};
  Serve([&](const ServerRequest& r) {
    if (r.target != "/disputes/dp_1/evidence") return Reply::Status(404);
    return ++seen == 1 ? Reply::Status(503) : Reply::Ok(r.body);
  });
  std::string path = ::testing::TempDir() + "checkout_evidence.pdf";
  std::string pdf(300 * 1024, 'p');
  std::ofstream(path, std::ios::binary) << pdf;
  auto submitted =
      std::async(std::launch::async, [&] { return checkout->SubmitEvidence("dp_1", path); });
  ASSERT_TRUE(server->WaitForRequests(1));
  ASSERT_TRUE(clock.WaitForTimerBy(clock.Now() + 50ms));  // the backoff: half of 100ms
  clock.Advance(50ms);
  auto done = submitted.get();
  ASSERT_TRUE(done) << done.error().message();
  auto requests = server->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_TRUE(requests[1].body == pdf) << "the retry sent another body";
  EXPECT_EQ(requests[1].header("content-length"), std::to_string(pdf.size()));
  std::filesystem::remove(path);

  auto missing = checkout->SubmitEvidence("dp_1", path);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind(), outbound::ErrorKind::kInvalidRequest);
}

TEST_F(CheckoutTest, DescribesWithAPutAndCancelsWithADelete) {
  Serve([](const ServerRequest& r) {
    if (r.method == "DELETE" && r.target == "/charges/ch_gone") return Reply::Status(404);
    if (r.method == "DELETE") return Reply::Status(409);
    return Reply::Status(204);
  });
  EXPECT_TRUE(checkout->Describe("ch/1", "two shirts"));
  EXPECT_TRUE(checkout->Cancel("ch_gone"));
  auto conflict = checkout->Cancel("ch_1");
  ASSERT_FALSE(conflict);
  EXPECT_EQ(conflict.error().kind(), outbound::ErrorKind::kHttpStatus);
  auto requests = server->requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].method, "PUT");
  EXPECT_EQ(requests[0].target, "/charges/ch%2F1/description");
  EXPECT_EQ(requests[0].body, "two shirts");
  EXPECT_EQ(requests[0].header("content-type"), "text/plain");
}

// [example scripted-test]
// The checkout code's own logic, with no network: a ScriptedClient answers
// as the test says and keeps what was sent.
TEST(CheckoutUnitTest, ACancelOfAChargeAlreadyGoneSucceeds) {
  ScriptedClient payments([](const http::Request& r) -> outbound::Result<http::Response> {
    if (r.method == "DELETE" && r.url == "/charges/ch_gone") return Respond(404);
    return Respond(500);
  });
  checkout::Checkout checkout(payments.handle());

  EXPECT_TRUE(checkout.Cancel("ch_gone"));
  auto failed = checkout.Cancel("ch_1");  // a 500 that outlasted the retries
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().kind(), outbound::ErrorKind::kHttpStatus);
  EXPECT_EQ(payments.requests().at(1).url, "/charges/ch_1");
}
// [end scripted-test]

}  // namespace
