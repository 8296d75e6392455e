// SPDX-License-Identifier: Apache-2.0
#include "core_client.h"

#include <future>
#include <string>
#include <utility>

#include "../http/client_peer.h"
#include "address.h"
#include "exchange.h"
#include "front_end.h"
#include "wire/framing.h"

namespace outbound::rpc::internal {
namespace {

// The call core's settings for a gRPC dependency: plain text is HTTP/2
// with prior knowledge; each attempt may take the whole call's time.
http::Settings CoreSettings(const Settings& s, const Addr& addr) {
  http::Settings core;
  std::string host = addr.host.find(':') == std::string::npos ? addr.host : "[" + addr.host + "]";
  core.base_url = (s.tls ? "https://" : "http://") + host + ":" + std::to_string(addr.port);
  if (s.tls) {
    core.tls = http::TlsSettings{s.tls->root_pem, s.tls->client_cert_pem, s.tls->client_key_pem};
  } else {
    core.http2_prior_knowledge = true;
  }
  core.timeout = s.timeout;
  core.max_attempts = s.max_attempts;
  core.backoff_base = s.backoff_base;
  core.backoff_max = s.backoff_max;
  core.retry_budget = s.retry_budget;
  core.breaker = s.breaker;
  core.breaker_policy = s.breaker_policy;
  core.classify = CoreClassify(s.classify);
  core.max_response_bytes = kDefaultReceiveLimit + kFramePrefixSize;
  core.faults = s.faults;
  return core;
}

}  // namespace

Result<std::unique_ptr<CoreClient>> CoreClient::Create(const Runtime& runtime, Settings settings) {
  if (auto valid = Validate(settings); !valid) return tl::unexpected(valid.error());
  auto addr = ParseAddr(settings.addr);
  if (!addr) return tl::unexpected(addr.error());
  auto core = http::internal::CreateClient(runtime, CoreSettings(settings, *addr), GrpcFrontEnd());
  if (!core) return tl::unexpected(core.error());
  return std::unique_ptr<CoreClient>(new CoreClient(std::move(*core), kDefaultReceiveLimit));
}

Reply CoreClient::Call(std::string_view method, std::string_view request, const Context& context) {
  std::promise<Reply> replied;
  auto reply = replied.get_future();
  CallAsync(
      method, request,
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

void CoreClient::CallAsync(std::string_view method, std::string_view request, Client::Done done,
                           const Context& context) {
  http::internal::ClientPeer::SendAsync(
      *core_, MessageRequest(method, request, context), /*idempotent=*/true,
      [done = std::move(done), limit = receive_limit_](Result<http::Response> result,
                                                       std::exception_ptr thrown) {
        done(ReplyOf(std::move(result), limit), thrown);
      });
}

Reply CoreClient::ServerStream(std::string_view method, std::string_view request,
                               const std::function<void(std::string_view message)>& on_message,
                               const Context& context) {
  // No grpc-accept-encoding is sent, so the server sends its messages as
  // they are; a compressed one is a malformed answer.
  Deframer deframer(/*encoding=*/"", receive_limit_,
                    [&on_message](std::string message) { on_message(message); });
  http::Request sent = MessageRequest(method, request, context);
  sent.StreamBodyTo([&deframer](std::string_view chunk) { return deframer.Feed(chunk).ok(); });
  std::promise<Result<http::Response>> answered;
  auto answer = answered.get_future();
  http::internal::ClientPeer::SendAsync(
      *core_, std::move(sent), /*idempotent=*/true,
      [&answered](Result<http::Response> result, std::exception_ptr thrown) {
        if (thrown) {
          answered.set_exception(thrown);
        } else {
          answered.set_value(std::move(result));
        }
      });
  Result<http::Response> result = answer.get();
  Reply reply;
  reply.attempts = result ? result->attempts : result.error().attempts();
  reply.status = StatusOf(result);
  if (result) reply.trailers = TrailersOf(*result);
  // A malformed message ended the stream (the body sink said stop), or the
  // body ended inside one.
  if (!deframer.status().ok()) {
    reply.status = deframer.status();
  } else if (reply.status.ok()) {
    reply.status = deframer.Finish();
  }
  return reply;
}

}  // namespace outbound::rpc::internal
