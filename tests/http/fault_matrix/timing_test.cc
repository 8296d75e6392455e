// SPDX-License-Identifier: Apache-2.0
// Fault matrix: a dependency that is slow rather than broken. Its waits run
// on the ManualClock (the server's too), so each row shows the exact fake
// instant the call ends at, and that the caller hears of it within 50 ms of
// real time (issue 10 #4).
#include "matrix_support.h"

namespace outbound::http::matrix {
namespace {

class TimingMatrix : public BothProtocols {};

// Headers never come: the first attempt ends at AttemptTimeout (5 s; Retry,
// Failure), the second at the call's Timeout (10 s; the deadline, Failure).
TEST_P(TimingMatrix, HeadersNeverSentEndAtTheAttemptTimeoutThenTheDeadline) {
  Serve([](const ServerRequest&) { return Reply::Hang(); });
  StartClient();
  Begin(Request::Get("/"));
  WaitForRequests(1);
  WaitThenAdvance(5s);
  WaitThenAdvance(50ms);
  WaitForRequests(2);
  WaitThenAdvance(4950ms);
  ExpectEnds({.error = ErrorKind::kDeadline,
              .attempts = 2,
              .server_saw = 2,
              .breaker_failures = 2,
              .took = 10s});
}

// AttemptTimeout ends with the headers; the test cannot see the moment the
// client has them, so the two rows below set AttemptTimeout to the Timeout:
// whenever the headers arrived, only the call's deadline can end the call.
Settings BodyBoundByTheTimeout(Settings settings) {
  settings.attempt_timeout = settings.timeout;
  return settings;
}

// A body at 1 B/s: the Timeout bounds the body. Each second the server
// sends a byte; at 10 s the call ends, exactly, not before. A body failing
// mid-read: not retried, Failure.
TEST_P(TimingMatrix, ABodyTrickledAtOneBytePerSecondEndsAtTheDeadline) {
  Serve([](const ServerRequest&) { return Reply::Trickle(std::string(100, 'x'), 1, 1s); });
  StartClient(BodyBoundByTheTimeout(PaymentsSettings()));
  Begin(Request::Get("/"));
  for (int second = 1; second < 10; ++second) WaitThenAdvance(1s);
  EXPECT_FALSE(CallDone()) << "ended before its deadline";
  WaitThenAdvance(1s);
  ExpectEnds({.error = ErrorKind::kDeadline, .attempts = 1, .breaker_failures = 1, .took = 10s});
}

// Content-Length 10, 5 bytes, then silence on an open connection: the call
// ends at its deadline.
TEST_P(TimingMatrix, ABodyThatStallsShortOfItsLengthEndsAtTheDeadline) {
  Serve([](const ServerRequest&) { return Reply::Stall(5, "0123456789"); });
  StartClient(BodyBoundByTheTimeout(PaymentsSettings()));
  Begin(Request::Get("/"));
  WaitForRequests(1);
  WaitThenAdvance(10s);
  ExpectEnds({.error = ErrorKind::kDeadline, .attempts = 1, .breaker_failures = 1, .took = 10s});
}

OUTBOUND_MATRIX_BOTH_PROTOCOLS(TimingMatrix);

}  // namespace
}  // namespace outbound::http::matrix
