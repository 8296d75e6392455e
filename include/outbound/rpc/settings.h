// SPDX-License-Identifier: Apache-2.0
// The settings of one gRPC dependency: an address, TLS or plain text, the
// call's timeout, the retry schedule and budget, the breaker, and how each
// attempt's result counts.
#ifndef OUTBOUND_RPC_SETTINGS_H_
#define OUTBOUND_RPC_SETTINGS_H_

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "outbound/circuit/breaker.h"
#include "outbound/clock.h"
#include "outbound/error.h"
#include "outbound/fault.h"
#include "outbound/http/middleware.h"
#include "outbound/http/settings.h"
#include "outbound/retry/budget.h"
#include "outbound/retry/retrier.h"

namespace outbound::rpc {

// A gRPC status code, by its number (grpc::StatusCode's values), so these
// settings compile without grpc++'s headers.
enum class Code : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

// An attempt's or a call's final status: its code and message. `rejected`
// is set on a call the client turned away itself (its breaker, its
// bulkhead, its adaptive concurrency limit): nothing was sent, and the code is UNAVAILABLE with the
// rejection's message.
struct Status {
  Code code = Code::kOk;
  std::string message;
  bool rejected = false;
  bool ok() const { return code == Code::kOk; }
};

// Trailing metadata of one attempt, names in lower case.
using Trailers = std::multimap<std::string, std::string>;

// The code's name as gRPC spells it ("UNAVAILABLE"); "UNKNOWN" for a
// number that is no code.
std::string_view CodeName(Code code);

// How one attempt's result counts: for retry (another attempt or not, and the
// least wait before it) and for the breaker.
struct Classification {
  retry::Outcome retry = retry::Outcome::kStop;
  Duration retry_after{0};
  circuit::Outcome breaker = circuit::Outcome::kSuccess;
};

// classify(method, status, trailers): method is the full name,
// "/pkg.Service/Method". Called once per attempt the server answered (or the
// channel failed), never for a rejection, a cancelled call or a passed
// deadline: the client decides those. Must be safe for concurrent use.
using Classify = std::function<Classification(std::string_view method, const Status& status,
                                              const Trailers& trailers)>;

// The default, by status (the retry outcome, then the breaker's):
//   OK                                       Success  Success
//   UNAVAILABLE                              Retry (after the pushback if any)  Failure
//   RESOURCE_EXHAUSTED with a pushback >= 0  Retry (after the pushback)  Failure
//   RESOURCE_EXHAUSTED without a pushback    Stop     Failure
//   DEADLINE_EXCEEDED, INTERNAL, UNKNOWN, DATA_LOSS  Stop  Failure
//   CANCELLED                                Stop     Ignored
//   anything else                            Stop     Success
// A grpc-retry-pushback-ms that is negative or not a number makes any of
// them Stop (the server asks for no retry, as gRFC A6 says).
Classification DefaultClassify(std::string_view method, const Status& status,
                               const Trailers& trailers);

// grpc-retry-pushback-ms read from trailers: nullopt when absent; a negative
// duration when it is negative or malformed (the server asks for no retry).
std::optional<Duration> Pushback(const Trailers& trailers);

// The HTTP client's: PEM roots the server's certificate must chain to
// (empty: the system's), and for mutual TLS a client certificate and its
// key, both or neither. Checked by the same CheckTls.
using TlsSettings = http::TlsSettings;

// A policy of its own for some methods of a client (Settings::methods):
// what it sets replaces the client's setting for their calls, what it
// leaves empty keeps the client's; the calls share the client's breaker,
// retry budget, connection and everything else.
//
// example: examples/headers/rpc.cc#methods
//   settings.methods = {
//       {.method = "/reports.v1.Reports/", .timeout = 30s, .max_attempts = 1},
//       {.method = "/search.v1.Search/Query", .attempt_timeout = 200ms},
//   };
struct MethodPolicy {
  // A method ("/pkg.Service/Method", as a call names it), or a service
  // ("/pkg.Service/"): every method of it. A method's own policy wins over
  // its service's.
  std::string method;
  // In place of Settings::timeout, attempt_timeout and max_attempts, with
  // their checks.
  std::optional<Duration> timeout;
  std::optional<Duration> attempt_timeout;
  std::optional<int> max_attempts;
  // In place of Settings::classify; empty: the client's.
  Classify classify;
};

struct Settings {
  // host:port, no scheme. The host is the name the server's certificate is
  // verified for and the calls' :authority; the Runtime's Network decides
  // where it is dialled. Check: CheckAddr. No default.
  std::string addr;

  // Set for TLS, empty for plain text. Check: CheckTls.
  std::optional<TlsSettings> tls;

  // Bounds each call, its retries included, unless the caller's deadline is
  // earlier. Default 10s. Valid: positive. Check: CheckTimeout.
  Duration timeout = std::chrono::seconds(10);

  // Bounds each attempt, as http::Settings::attempt_timeout does: from when
  // it is handed to a connection to the response's headers, which a gRPC
  // server sends with its first message or its status. Not a stream's
  // (Client::OpenStream): once open, only its Context's deadline bounds
  // it. An attempt it cuts ends UNAVAILABLE ("no response headers within
  // the attempt timeout"), which classify sees and DefaultClassify retries
  // (elsewhere, with balancing), so a replica that hangs costs a call one
  // attempt timeout, not its deadline; the server of a unary call is told
  // the shorter of the two (grpc-timeout). gRPC's per_attempt_recv_timeout,
  // Envoy's per_try_timeout. Empty (the default): each attempt may take the
  // call's whole time. Valid: positive. Check: CheckAttemptTimeout.
  std::optional<Duration> attempt_timeout;

  // Attempts per call; 1 turns retries off. Default 3. Check: CheckMaxAttempts.
  int max_attempts = 3;

  // Exponential backoff with full jitter between attempts. Default 100ms and
  // 5s; positive, backoff_max at least backoff_base. A pushback longer than
  // backoff_max ends the call. Check: CheckBackoffBase, CheckBackoffMax.
  Duration backoff_base = std::chrono::milliseconds(100);
  Duration backoff_max = std::chrono::seconds(5);

  // Limits retries across every call of the client (gRFC A6's throttling).
  // Default {10, 0.1, 10}. Checks: retry::CheckMaxTokens, retry::CheckTokenRatio,
  // retry::CheckMinRetriesPerSecond.
  retry::BudgetConfig retry_budget;

  // The client's one breaker. Checks: circuit::Check*.
  circuit::Config breaker;

  // When the breaker opens and closes. Default circuit::DefaultPolicy().
  circuit::Policy breaker_policy = circuit::DefaultPolicy();

  // How each attempt's result counts. Default DefaultClassify. Must be set.
  Classify classify = DefaultClassify;

  // Methods that must not run twice ("/pkg.Service/Method", as a call names
  // them): an attempt of one is sent again only when nothing of it can
  // have reached the server (no connection, a refused stream, a stream
  // above the server's GOAWAY), whatever classify says. Every other unary
  // method is taken as idempotent, as gRPC's retry policy takes the codes
  // it names. Each must start with '/' and name a service and a method.
  std::vector<std::string> non_idempotent_methods;

  // The largest response message a call takes, decoded: a larger one ends
  // the call RESOURCE_EXHAUSTED (refused from its length prefix, before it
  // is held). Default 4 MiB, gRPC's. At least 1.
  std::size_t max_receive_message_bytes = 4 * 1024 * 1024;
  // The largest request message a call sends: a larger one ends the call
  // RESOURCE_EXHAUSTED, nothing sent. Default: what a length prefix can
  // announce (4 GiB - 1). At least 1.
  std::size_t max_send_message_bytes = 0xFFFF'FFFF;
  // Sends each unary request message gzip-coded (grpc-encoding: gzip).
  // Answers may be gzip-coded either way (every call sends
  // grpc-accept-encoding: gzip), decoded within max_receive_message_bytes,
  // a stream's as they arrive. Streams (ServerStream, OpenStream) send
  // their messages as they are: a server may answer in the request's
  // encoding (grpc-go does), and an answer is read before it has ended.
  bool gzip_requests = false;

  // A connection's maximum age, as http::Settings::max_connection_age
  // (jittered ±10 %; a connection past it drains: its calls finish, new
  // ones go to a new connection, none fails for it). Empty (the default):
  // the client keeps its connection while it lasts. Valid: positive.
  // Check: CheckMaxConnectionAge.
  std::optional<Duration> max_connection_age;

  // Several endpoints behind the target (http::Balancing: every address
  // the name resolves to, or a list; each call's attempt to the endpoint
  // with fewer outstanding of two drawn, outlier detection ejecting one
  // whose attempts keep failing as the breaker counts failures, a retry
  // sent to another endpoint). Empty (the default): one connection, as
  // gRPC's pick_first. Check: http::CheckBalancing.
  std::optional<http::Balancing> balancing;

  // The user's own layers (outbound/http/middleware.h), HTTP's types: a
  // call middleware runs once per call, above the retries; an attempt
  // middleware once per attempt the breaker admitted. Each sees the
  // call's HTTP/2 request (its path is the method, its body the framed
  // message).
  std::vector<std::shared_ptr<http::CallMiddleware>> call_middleware;
  std::vector<std::shared_ptr<http::AttemptMiddleware>> attempt_middleware;

  // An outbound rate limit (http::RateLimit: one token per call, waited for
  // on the Runtime's clock); a call whose wait would end after its deadline
  // ends DEADLINE_EXCEEDED at once. Empty (the default): calls are not
  // limited. Check: http::CheckRateLimit.
  std::optional<http::RateLimit> rate_limit;

  // A bulkhead (http::Bulkhead: a bound on calls in flight, with an
  // optional short queue). A call over it ends at once UNAVAILABLE with
  // Status::rejected set and nothing sent (the core's kRejected, as a
  // breaker's rejection is), and the breaker does not count it. A call's
  // retries hold its one place. Empty (the default): no bound.
  // Check: http::CheckBulkhead.
  std::optional<http::Bulkhead> bulkhead;

  // Adaptive concurrency (http::AdaptiveConcurrency: a limit on calls in
  // flight that follows the dependency's latency). A call over the limit
  // ends at once UNAVAILABLE with Status::rejected set and nothing sent;
  // the breaker does not count it. Every answer in one attempt is a
  // latency sample, whatever its status. Empty (the default): off.
  // Check: http::CheckAdaptiveConcurrency.
  std::optional<http::AdaptiveConcurrency> adaptive_concurrency;

  // Hedging (http::Hedging: one more attempt of a unary call when the
  // first has no answer after a delay; the first answer wins). Only for
  // methods safe to send twice (not in non_idempotent_methods); streams
  // never hedge. Empty (the default): off. Check: http::CheckHedging;
  // Validate also refuses it beside a max_attempts of 1 that no method's
  // policy raises (a hedge is one of the call's attempts).
  std::optional<http::Hedging> hedging;

  // Failure injection (outbound/fault.h): the client is the injection
  // point "grpc:<host>:<port>" of addr. An injected abort is UNAVAILABLE, a
  // delay is waited within the attempt's deadline, and "status:NNN" is the
  // gRPC code gRPC gives that HTTP status (429, 502, 503, 504: UNAVAILABLE;
  // 400, 431: INTERNAL; 401: UNAUTHENTICATED; 403: PERMISSION_DENIED; 404:
  // UNIMPLEMENTED; any other: UNKNOWN), its retry-after sent as
  // grpc-retry-pushback-ms. Off by default, or on with Runtime::inject_faults.
  FaultSettings faults;

  // Policies of their own for some methods or services (MethodPolicy);
  // every other call has the settings above. No two for one method. Code,
  // not sourced. Check: CheckMethods.
  std::vector<MethodPolicy> methods;
};

// The defaults; addr is empty, which CheckAddr rejects.
Settings DefaultSettings();

[[nodiscard]] Result<void> CheckAddr(const std::string& addr);
using http::CheckTls;
[[nodiscard]] Result<void> CheckTimeout(Duration timeout);
[[nodiscard]] Result<void> CheckAttemptTimeout(const std::optional<Duration>& attempt_timeout);
[[nodiscard]] Result<void> CheckMaxAttempts(int max_attempts);
// Names each wrong field of each policy and why ("[1].timeout: must be
// positive; [2].max_attempts: ...").
[[nodiscard]] Result<void> CheckMethods(const std::vector<MethodPolicy>& methods);
[[nodiscard]] Result<void> CheckBackoffBase(Duration backoff_base);
[[nodiscard]] Result<void> CheckBackoffMax(Duration backoff_max);
// A method's full name, "/pkg.Service/Method" (non_idempotent_methods).
[[nodiscard]] Result<void> CheckMethodName(const std::string& method);
// A message size limit (max_receive_message_bytes, max_send_message_bytes):
// 1 to 4 GiB - 1, what a message's length prefix can announce.
[[nodiscard]] Result<void> CheckMessageLimit(std::size_t bytes);
[[nodiscard]] Result<void> CheckMaxConnectionAge(const std::optional<Duration>& age);

// Every check, reporting every bad field at once, each named
// ("Settings.addr: ...; Settings.timeout: ...").
[[nodiscard]] Result<void> Validate(const Settings& settings);

}  // namespace outbound::rpc

#endif  // OUTBOUND_RPC_SETTINGS_H_
