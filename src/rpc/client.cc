// SPDX-License-Identifier: Apache-2.0
// The gRPC client as a front end on the call core: a call is an HTTP/2
// POST to its method's path with its message framed (exchange.h), sent
// through an http::Client built with the gRPC front end (front_end.h), so
// the deadline, retries, budget, breaker, failure injection, middleware and
// telemetry are the core's, written once. What is gRPC's own is here: the
// settings as the core's, which methods are safe to send twice, the
// message limits, and a reply out of an answer.
#include "outbound/rpc/client.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <future>
#include <memory>
#include <string>
#include <utility>

#include "../http/client_peer.h"
#include "address.h"
#include "client_impl.h"
#include "exchange.h"
#include "front_end.h"
#include "wire/framing.h"

namespace outbound::rpc {
namespace {

// The call core's settings for a gRPC dependency: plain text is HTTP/2
// with prior knowledge; each attempt may take the whole call's time.
http::Settings CoreSettings(const Settings& s, const internal::Addr& addr) {
  http::Settings core;
  std::string host = addr.host.find(':') == std::string::npos ? addr.host : "[" + addr.host + "]";
  core.base_url = (s.tls ? "https://" : "http://") + host + ":" + std::to_string(addr.port);
  if (s.tls) {
    core.tls = s.tls;
  } else {
    core.http2_prior_knowledge = true;
  }
  core.timeout = s.timeout;
  if (s.attempt_timeout) core.attempt_timeout = *s.attempt_timeout;
  core.max_attempts = s.max_attempts;
  core.backoff_base = s.backoff_base;
  core.backoff_max = s.backoff_max;
  core.retry_budget = s.retry_budget;
  core.breaker = s.breaker;
  core.breaker_policy = s.breaker_policy;
  core.classify = internal::CoreClassify(s.classify, s.max_receive_message_bytes);
  // A gzip-coded answer is smaller than its message; the Deframer holds the
  // decoded message to max_receive_message_bytes.
  core.max_response_bytes = s.max_receive_message_bytes + internal::kFramePrefixSize;
  core.faults = s.faults;
  core.max_connection_age = s.max_connection_age;
  core.balancing = s.balancing;
  core.call_middleware = s.call_middleware;
  core.attempt_middleware = s.attempt_middleware;
  core.rate_limit = s.rate_limit;
  core.bulkhead = s.bulkhead;
  core.adaptive_concurrency = s.adaptive_concurrency;
  core.hedging = s.hedging;
  core.routes = internal::CoreRoutes(s.methods, s.max_receive_message_bytes);
  return core;
}

}  // namespace

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

// The core's destructor ends every call still going with kCancelled
// (CANCELLED here) and waits for their callbacks.
Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::Create(const Runtime& runtime, Settings settings) {
  if (auto valid = Validate(settings); !valid) return tl::unexpected(valid.error());
  auto addr = internal::ParseAddr(settings.addr);
  if (!addr) return tl::unexpected(addr.error());
  auto core = http::internal::CreateClient(
      runtime, CoreSettings(settings, *addr),
      internal::GrpcFrontEnd(settings.attempt_timeout, settings.max_receive_message_bytes));
  if (!core) return tl::unexpected(core.error());
  auto impl = std::make_unique<Impl>();
  impl->core = std::move(*core);
  impl->receive_limit = settings.max_receive_message_bytes;
  impl->send_limit = settings.max_send_message_bytes;
  impl->gzip = settings.gzip_requests;
  // Kept without the leading '/', so that a method the caller names without
  // it (as grpc-java spells a full name; CallRequest adds the '/') is found.
  for (std::string& method : settings.non_idempotent_methods) {
    impl->non_idempotent.push_back(method.substr(1));
  }
  std::sort(impl->non_idempotent.begin(), impl->non_idempotent.end());
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

bool Client::Impl::Idempotent(std::string_view method) const {
  if (!method.empty() && method.front() == '/') method.remove_prefix(1);
  return !std::binary_search(non_idempotent.begin(), non_idempotent.end(), method);
}

void Client::Impl::Send(http::Request request, bool idempotent, http::Client::Callback done) {
  http::internal::ClientPeer::SendAsync(*core, std::move(request), idempotent, std::move(done));
}

Reply Client::Call(std::string_view method, std::string_view request, const Context& context) {
  return CallAsync(method, request, context).get();
}

std::future<Reply> Client::CallAsync(std::string_view method, std::string_view request,
                                     const Context& context) {
  auto replied = std::make_shared<std::promise<Reply>>();
  std::future<Reply> reply = replied->get_future();
  CallAsync(
      method, request,
      [replied](Reply r, std::exception_ptr thrown) {
        if (thrown) {
          replied->set_exception(thrown);
        } else {
          replied->set_value(std::move(r));
        }
      },
      context);
  return reply;
}

void Client::CallAsync(std::string_view method, std::string_view request, Done done,
                       const Context& context) {
  Impl& impl = *impl_;
  internal::StatusOr<http::Request> sent =
      internal::MessageRequest(method, request, context, impl.send_limit, impl.gzip);
  if (!sent) {
    // Never on the caller's stack: the core's loop says it, as it says a
    // call that ends inside SendAsync.
    http::internal::ClientPeer::Post(
        *impl.core, [done = std::move(done), status = std::move(sent.error())]() mutable {
          done(Reply{std::move(status), {}, {}, 0}, nullptr);
        });
    return;
  }
  impl.Send(
      std::move(*sent), impl.Idempotent(method),
      [&impl, done = std::move(done)](Result<http::Response> result, std::exception_ptr thrown) {
        done(internal::ReplyOf(std::move(result), impl.receive_limit), thrown);
      });
}

Reply Client::ServerStream(std::string_view method, std::string_view request,
                           const std::function<void(std::string_view message)>& on_message,
                           const Context& context) {
  std::promise<Reply> replied;
  auto reply = replied.get_future();
  ServerStreamAsync(
      method, request, on_message,
      [&replied](Reply r, std::exception_ptr thrown) {
        if (thrown) {
          replied.set_exception(thrown);
        } else {
          replied.set_value(std::move(r));
        }
      },
      context);
  return reply.get();
}

void Client::ServerStreamAsync(std::string_view method, std::string_view request,
                               std::function<void(std::string_view message)> on_message, Done done,
                               const Context& context) {
  Impl& impl = *impl_;
  // Not gzip-coded: a server answers in the request's encoding (grpc-go
  // does), and a stream is read as it comes. Answers may be gzip-coded,
  // as a unary call's: the answer's head tells the Deframer (DeframingHead).
  internal::StatusOr<http::Request> sent = internal::MessageRequest(
      method, request, context, impl.send_limit, /*gzip=*/false, /*accept_gzip=*/true);
  if (!sent) {
    http::internal::ClientPeer::Post(
        *impl.core, [done = std::move(done), status = std::move(sent.error())]() mutable {
          done(Reply{std::move(status), {}, {}, 0}, nullptr);
        });
    return;
  }
  // A handler may cancel the call (its end is then posted to the loop):
  // the messages left in that piece are dropped from the cancel on, and
  // once the call has ended, not handed to a caller told it has ended.
  auto open = std::make_shared<std::atomic<bool>>(true);
  auto deframer = std::make_shared<internal::Deframer>(
      /*encoding=*/"", impl.receive_limit,
      [open, cancel = context.cancel, on_message = std::move(on_message)](
          std::string message, bool /*compressed: never, decoded*/) {
        if (!open->load(std::memory_order_acquire)) return;
        if (cancel != nullptr && cancel->cancelled()) return;
        on_message(message);
      });
  sent->StreamBodyTo(internal::DeframingSink(deframer))
      .OnBodyHead(internal::DeframingHead(deframer));
  impl.Send(std::move(*sent), impl.Idempotent(method),
            [open, deframer, done = std::move(done)](Result<http::Response> result,
                                                     std::exception_ptr thrown) {
              open->store(false, std::memory_order_release);
              Reply reply;
              reply.attempts = result ? result->attempts : result.error().attempts();
              reply.status = internal::StatusOf(result);
              if (result) {
                reply.trailers = internal::TrailersOf(*result);
                reply.headers = internal::HeadersOf(*result);
              }
              // A malformed message, or a body that ended inside one, ended
              // the call (DeframingSink): the Deframer has its exact code,
              // read here, on the thread that fed it.
              if (Status framing = deframer->status(); !framing.ok()) reply.status = framing;
              done(std::move(reply), thrown);
            });
}

std::future<Result<void>> Client::Warm(const Context& context) {
  return impl_->core->Warm(context);
}

bool Client::Connected() const { return impl_->core->Connected(); }

circuit::Breaker& Client::breaker() { return http::internal::ClientPeer::breaker(*impl_->core); }

void Client::OverrideBreaker(circuit::Override override) { impl_->core->OverrideBreaker(override); }

void Client::SetFaults(FaultSettings faults) { impl_->core->SetFaults(faults); }

Result<void> Client::SetRateLimit(std::optional<http::RateLimit> limit) {
  return impl_->core->SetRateLimit(limit);
}

FaultSettings Client::faults() const { return impl_->core->faults(); }

std::optional<http::RateLimit> Client::rate_limit() const { return impl_->core->rate_limit(); }

}  // namespace outbound::rpc
