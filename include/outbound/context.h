// SPDX-License-Identifier: Apache-2.0
// outbound/context.h
//
// What one call carries besides its request: a deadline, a way for the
// caller to give up, and the caller's trace context and baggage, which
// every attempt passes on to the dependency (`traceparent`, `baggage`),
// and the metadata a gRPC call sends (an HTTP call's: header fields).
//
// example: examples/headers/core.cc#context
//   CancelSource cancel;
//   Context ctx{.deadline = clock.Now() + 2s, .cancel = cancel.token()};
//   auto call = payments.SendAsync(http::Request::Get("/charges/1").WithContext(ctx));
//   cancel.Cancel();  // the call ends with ErrorKind::kCancelled
#ifndef OUTBOUND_CONTEXT_H_
#define OUTBOUND_CONTEXT_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "outbound/clock.h"
#include "outbound/telemetry/propagation.h"
#include "outbound/telemetry/trace.h"

namespace outbound {

// Request metadata: names and values, a name possibly more than once.
using Metadata = std::multimap<std::string, std::string>;

namespace internal {
// Shared by a CancelSource and its tokens. Thread-safe.
class CancelState {
 public:
  // Runs `fn` when cancelled (at once if already). Returns an id for Forget.
  int OnCancel(std::function<void()> fn);
  void Forget(int id);
  void Cancel();
  bool cancelled() const;

 private:
  mutable std::mutex mu_;
  bool cancelled_ = false;
  int next_id_ = 0;
  std::vector<std::pair<int, std::function<void()>>> callbacks_;
};
}  // namespace internal

// A caller's handle to give up on calls. Thread-safe; cheap to copy tokens.
class CancelSource {
 public:
  CancelSource() : state_(std::make_shared<internal::CancelState>()) {}
  // Ends every call whose context holds this source's token.
  void Cancel() { state_->Cancel(); }
  bool cancelled() const { return state_->cancelled(); }
  std::shared_ptr<internal::CancelState> token() const { return state_; }

 private:
  std::shared_ptr<internal::CancelState> state_;
};

struct Context {
  // The call ends by this time at the latest; the client's Timeout applies
  // too, and the earlier of the two wins.
  std::optional<TimePoint> deadline;
  // From a CancelSource; null means the caller never cancels.
  std::shared_ptr<internal::CancelState> cancel;
  // The caller's span (e.g. its server span for the request being served):
  // every attempt's span is its child. Invalid (the default): a new trace.
  telemetry::SpanContext trace;
  // Passed on to the dependency in each attempt's `baggage` header.
  telemetry::Baggage baggage;
  // Sent with each attempt, after the call's own fields. A gRPC call's
  // metadata: a name is taken without case and sent in lower case, a
  // "-bin" name's value is any bytes (sent base64-coded, as gRPC wants),
  // any other value printable ASCII. A name gRPC reserves ("grpc-*",
  // content-type, te), a name of other than letters, digits, '-', '_' and
  // '.', or a value that breaks these rules ends the call with INTERNAL,
  // naming it, before anything is sent. An HTTP call sends them as header
  // fields, after the Request's own, checked as those are (Request::headers).
  // They go in the order of their names. They are this call's: a Context
  // passed on to calls of other dependencies takes them along (a token
  // for one to the others), so clear them before passing it on.
  //
  // example: examples/headers/rpc.cc#context-metadata
  //   Context ctx;
  //   ctx.metadata.emplace("authorization", "Bearer " + token);
  //   ctx.metadata.emplace("x-request-id-bin", request_id);  // bytes
  //   rpc::Reply reply = carts.Call("/cart.v1.Carts/Get", request_bytes, ctx);
  Metadata metadata;
};

}  // namespace outbound

#endif  // OUTBOUND_CONTEXT_H_
