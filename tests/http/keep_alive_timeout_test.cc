// SPDX-License-Identifier: Apache-2.0
// An HTTP/1.1 server's Keep-Alive timeout (`Keep-Alive: timeout=5`, as
// Node's servers send by default) on the native transport, against the
// kit's FakeServer on loopback in fake time: an idle connection is used
// again only until a margin before the server's timeout, then the client
// closes it itself, so no request is written as the server closes; a
// connection busy at that time is kept; each answer's timeout counts from
// that answer; a field that says nothing usable changes nothing.
#include <gtest/gtest.h>

#include <future>
#include <optional>
#include <string>

#include "client_test_support.h"

namespace outbound::http {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::Reply;
using testing::ServerRequest;

class KeepAliveTimeoutTest : public ::testing::Test, public ClientTestBase {
 protected:
  // Serves payments:8443 over HTTP/1.1, every answer carrying
  // `Keep-Alive: <keep_alive>` (each value given one field of its own);
  // "/slow" answers once the clock has moved ten seconds.
  void ServeWithKeepAlive(std::vector<std::string> keep_alive) {
    Serve(
        [keep_alive](const ServerRequest& r) {
          Reply reply = Reply::Ok(r.target);
          if (r.target == "/slow") reply.DelayHeaders(seconds(10));
          for (const std::string& value : keep_alive) reply.Header("Keep-Alive", value);
          return reply;
        },
        Protocol::kHttp11);
  }

  // Long enough that moving the clock between calls times nothing out.
  Settings PatientSettings() {
    Settings s = PaymentsSettings();
    s.timeout = hours(2);
    s.attempt_timeout = hours(1);
    return s;
  }

  // The connection the server saw request `i` (0-based) on.
  int ConnectionOf(std::size_t i) { return server->requests().at(i).connection_id; }

  void Call(Client& client, const std::string& path) {
    auto response = client.Send(Request::Get(path));
    ASSERT_TRUE(response) << response.error().message();
    EXPECT_EQ(response->body, path);
  }

  // Waits until the client has closed every connection by itself.
  bool AllClosed() {
    return server->WaitFor([](const testing::FakeServer& s) { return s.connections_open() == 0; });
  }
};

TEST_F(KeepAliveTimeoutTest, AnIdleConnectionIsUsedUntilASecondBeforeTheServersTimeout) {
  ServeWithKeepAlive({"timeout=5"});
  auto client = MakeClient(PatientSettings());
  Call(*client, "/0");
  clock.Advance(milliseconds(3999));  // kept for 4 s after each answer
  Call(*client, "/1");
  EXPECT_EQ(ConnectionOf(1), 1);

  // Four seconds after the last answer the client closes the connection
  // itself, with no call to make: the server never closes it under one.
  clock.Advance(seconds(4));
  EXPECT_TRUE(AllClosed());
  Call(*client, "/2");
  EXPECT_EQ(ConnectionOf(2), 2);
  EXPECT_EQ(server->connections_opened(), 2);
  EXPECT_EQ(Attempts().size(), 3u);  // none failed and sent again
}

TEST_F(KeepAliveTimeoutTest, AConnectionBusyAtItsTimeIsKeptAndCountsFromItsNextAnswer) {
  ServeWithKeepAlive({"timeout=5"});
  auto client = MakeClient(PatientSettings());
  Call(*client, "/0");
  // /slow is still being answered when /0's four seconds are over.
  auto slow = client->SendAsync(Request::Get("/slow"));
  ASSERT_TRUE(server->WaitForRequests(2));
  clock.Advance(seconds(10));
  auto slow_response = slow.get();
  ASSERT_TRUE(slow_response) << slow_response.error().message();
  EXPECT_EQ(server->connections_open(), 1);

  clock.Advance(milliseconds(3999));
  Call(*client, "/1");
  EXPECT_EQ(ConnectionOf(2), 1);
  clock.Advance(seconds(4));
  EXPECT_TRUE(AllClosed());
  EXPECT_EQ(server->connections_opened(), 1);
}

TEST_F(KeepAliveTimeoutTest, SeveralFieldsOrParametersTheSmallestTimeoutCounts) {
  ServeWithKeepAlive({"max=100, TIMEOUT = \"10\"", "timeout=bad, timeout=3, timeout=7"});
  auto client = MakeClient(PatientSettings());
  Call(*client, "/0");
  clock.Advance(milliseconds(1999));  // 3 s less one
  Call(*client, "/1");
  EXPECT_EQ(ConnectionOf(1), 1);
  clock.Advance(seconds(2));
  EXPECT_TRUE(AllClosed());
  Call(*client, "/2");
  EXPECT_EQ(ConnectionOf(2), 2);
}

TEST_F(KeepAliveTimeoutTest, UnderTwoSecondsTheMarginIsHalfTheTimeout) {
  ServeWithKeepAlive({"timeout=1"});
  auto client = MakeClient(PatientSettings());
  Call(*client, "/0");
  clock.Advance(milliseconds(499));
  Call(*client, "/1");
  EXPECT_EQ(ConnectionOf(1), 1);
  clock.Advance(milliseconds(500));
  EXPECT_TRUE(AllClosed());
}

TEST_F(KeepAliveTimeoutTest, ATimeoutOfZeroMeansTheConnectionIsNotUsedAgain) {
  ServeWithKeepAlive({"timeout=0"});
  auto client = MakeClient(PatientSettings());
  Call(*client, "/0");
  EXPECT_TRUE(AllClosed());
  Call(*client, "/1");
  EXPECT_EQ(ConnectionOf(1), 2);
}

// A Keep-Alive field without a timeout in whole seconds says nothing: the
// connection stays as without one, until the client's own idle close. Nor
// does a timeout longer than that (one past any clock's range included).
TEST_F(KeepAliveTimeoutTest, AFieldWithoutAUsableTimeoutChangesNothing) {
  for (const char* value : {"max=100", "timeout=five", "timeout=-1", "timeout=2.5", "timeout=",
                            "timeout=9223372036854775807", "timeout=99999999999999999999"}) {
    SCOPED_TRACE(value);
    ServeWithKeepAlive({value});
    auto client = MakeClient(PatientSettings());
    Call(*client, "/0");
    clock.Advance(seconds(60));
    Call(*client, "/1");
    EXPECT_EQ(ConnectionOf(1), 1);
    EXPECT_EQ(server->connections_open(), 1);
  }
}

}  // namespace
}  // namespace outbound::http
