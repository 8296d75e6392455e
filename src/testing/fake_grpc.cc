// SPDX-License-Identifier: Apache-2.0
// The fake gRPC dependency: requests read and answers written with the gRPC
// front end's own wire code (src/rpc/wire/), so the kit and the client
// share one reading of the protocol.
#include "outbound/testing/fake_grpc.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <utility>

#include "../rpc/wire/framing.h"
#include "../rpc/wire/metadata.h"
#include "../rpc/wire/status.h"
#include "../rpc/wire/timeout.h"
#include "outbound/http/message.h"
#include "outbound/internal/ascii.h"

namespace outbound::testing {
namespace {

namespace wire = rpc::internal;

// Fields of a request that gRPC writes itself, not the caller's metadata.
bool IsProtocolField(std::string_view name) {
  static constexpr std::array<std::string_view, 7> kFields = {
      "host",          "content-type",        "te", "user-agent", "grpc-timeout",
      "grpc-encoding", "grpc-accept-encoding"};
  return name.empty() || name[0] == ':' ||
         std::any_of(kFields.begin(), kFields.end(),
                     [name](std::string_view field) { return http::SameHeaderName(name, field); });
}

// `name` lower-cased (each file of the kit names its helpers apart: a
// unity build compiles several in one).
std::string LowerCaseName(std::string name) {
  return outbound::internal::AsciiLowered(std::move(name));
}

// A metadata entry as it goes on the wire: "-bin" values in base64.
std::pair<std::string, std::string> WireEntry(std::string key, std::string value) {
  if (wire::IsBinaryKey(key)) value = wire::EncodeBinaryValue(value);
  return {std::move(key), std::move(value)};
}

constexpr std::string_view kContentType = "application/grpc";

}  // namespace

// --- GrpcRequest ---

GrpcRequest GrpcRequest::From(const ServerRequest& request) {
  GrpcRequest call;
  call.method = request.target;
  call.raw = request;
  for (const auto& [name, value] : request.headers) {
    if (IsProtocolField(name)) continue;
    std::string key = LowerCaseName(name);
    if (wire::IsBinaryKey(key)) {
      std::optional<std::string> bytes = wire::DecodeBinaryValue(value);
      if (!bytes) continue;  // not base64: no bytes to show
      call.metadata.emplace_back(std::move(key), std::move(*bytes));
    } else {
      call.metadata.emplace_back(std::move(key), value);
    }
  }
  std::string timeout = request.header("grpc-timeout");
  if (!timeout.empty()) call.timeout = wire::DecodeTimeout(timeout);
  // A fake takes any size it is sent: the limit is the prefix's own.
  wire::Deframer deframer(
      request.header("grpc-encoding"), wire::kMaxFrameLength,
      [&call](std::string message, bool) { call.messages.push_back(std::move(message)); });
  rpc::Status status = deframer.Feed(request.body);
  if (status.ok()) status = deframer.Finish();
  if (!status.ok()) call.error = status.message;
  return call;
}

std::string GrpcRequest::metadata_value(std::string_view key) const {
  for (const auto& [name, value] : metadata) {
    if (name == key) return value;
  }
  return "";
}

// --- GrpcReply ---

GrpcReply GrpcReply::Ok(std::string message) { return Messages({std::move(message)}); }

GrpcReply GrpcReply::Messages(std::vector<std::string> messages) {
  GrpcReply reply;
  for (const std::string& message : messages) wire::FrameTo(reply.body_, message);
  return reply;
}

GrpcReply GrpcReply::Status(rpc::Code code, std::string message) {
  GrpcReply reply;
  reply.code_ = code;
  reply.message_ = std::move(message);
  return reply;
}

GrpcReply GrpcReply::TrailersOnly(rpc::Code code, std::string message) {
  GrpcReply reply = Status(code, std::move(message));
  reply.kind_ = Kind::kTrailersOnly;
  return reply;
}

GrpcReply GrpcReply::Hang() {
  GrpcReply reply;
  reply.kind_ = Kind::kHang;
  return reply;
}

GrpcReply GrpcReply::ResetStream(std::uint32_t h2_code) {
  GrpcReply reply;
  reply.kind_ = Kind::kReset;
  reply.h2_code_ = h2_code;
  return reply;
}

GrpcReply GrpcReply::Goaway(std::uint32_t h2_code) {
  GrpcReply reply = ResetStream(h2_code);
  reply.kind_ = Kind::kGoaway;
  return reply;
}

GrpcReply GrpcReply::BadPrefix(BadFlag flag) {
  GrpcReply reply = Ok("bad");
  reply.body_[0] = flag == BadFlag::kTwo ? '\x02' : '\x01';
  return reply;
}

GrpcReply GrpcReply::Oversized(std::size_t size) { return Ok(std::string(size, 'x')); }

GrpcReply GrpcReply::MissingStatus(std::vector<std::string> messages) {
  GrpcReply reply = Messages(std::move(messages));
  reply.code_.reset();
  return reply;
}

GrpcReply GrpcReply::HttpStatus(int status, std::string body) {
  GrpcReply reply;
  reply.kind_ = Kind::kHttpStatus;
  reply.http_status_ = status;
  reply.body_ = std::move(body);
  reply.code_.reset();
  return reply;
}

GrpcReply& GrpcReply::Pushback(std::int64_t ms) {
  trailing_.emplace_back("grpc-retry-pushback-ms", std::to_string(ms));
  return *this;
}

GrpcReply& GrpcReply::Metadata(std::string key, std::string value) {
  trailing_.push_back(WireEntry(std::move(key), std::move(value)));
  return *this;
}

GrpcReply& GrpcReply::InitialMetadata(std::string key, std::string value) {
  initial_.push_back(WireEntry(std::move(key), std::move(value)));
  return *this;
}

GrpcReply& GrpcReply::EndWith(rpc::Code code, std::string message) {
  code_ = code;
  message_ = std::move(message);
  return *this;
}

GrpcReply& GrpcReply::DelayHeaders(Duration d) {
  delay_ = d;
  return *this;
}

Reply GrpcReply::ToReply() const {
  Reply reply;
  switch (kind_) {
    case Kind::kHang:
      reply = Reply::Hang();
      break;
    case Kind::kReset:
      reply = Reply::Reset(h2_code_);
      break;
    case Kind::kGoaway:
      reply = Reply::Reset(h2_code_).ResetBy(Reply::H2Reset::kGoaway);
      break;
    case Kind::kHttpStatus:
      reply = Reply::Status(http_status_, body_).Header("content-type", "text/plain");
      break;
    case Kind::kAnswer:
    case Kind::kTrailersOnly: {
      // gRPC servers announce no length: END_STREAM (or the trailers) ends it.
      reply = Reply::Ok(body_).Unannounced().Header("content-type", std::string(kContentType));
      for (const auto& [key, value] : initial_) reply.Header(key, value);
      Headers status;
      if (code_) {
        status.emplace_back("grpc-status", std::to_string(static_cast<int>(*code_)));
        if (!message_.empty()) {
          status.emplace_back("grpc-message", wire::EncodeStatusMessage(message_));
        }
      }
      status.insert(status.end(), trailing_.begin(), trailing_.end());
      if (kind_ == Kind::kTrailersOnly) {
        reply.HeadersOnly();
        for (auto& [key, value] : status) reply.Header(key, value);
      } else {
        for (auto& [key, value] : status) reply.Trailer(key, value);
      }
      break;
    }
  }
  reply.DelayHeaders(delay_);
  return reply;
}

// --- The server ---

Result<std::unique_ptr<FakeServer>> StartFakeGrpc(FakeGrpcOptions options) {
  FakeServer::Options server;
  server.clock = options.clock;
  if (options.tls) {
    server.tls = std::move(*options.tls);
    server.tls->alpn = {"h2"};  // gRPC is HTTP/2 only
  } else {
    server.h2c = true;
  }
  if (options.handler) {
    server.handler = [handler = std::move(options.handler)](const ServerRequest& request) {
      return handler(GrpcRequest::From(request));
    };
  } else {
    // Each method's next answer; the handler runs on the server's one thread.
    struct Script {
      GrpcScript replies;
      std::map<std::string, std::size_t, std::less<>> used;
    };
    auto script = std::make_shared<Script>(Script{std::move(options.script), {}});
    server.handler = [script](const ServerRequest& request) -> Reply {
      auto it = script->replies.find(request.target);
      if (it == script->replies.end() || it->second.empty()) {
        return GrpcReply::TrailersOnly(rpc::Code::kUnimplemented,
                                       "no script for " + request.target);
      }
      std::size_t& next = script->used[request.target];
      const Reply& reply = it->second[std::min(next, it->second.size() - 1)];
      ++next;
      return reply;
    };
  }
  return FakeServer::Start(std::move(server));
}

}  // namespace outbound::testing
