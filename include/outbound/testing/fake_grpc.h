// SPDX-License-Identifier: Apache-2.0
// outbound/testing/fake_grpc.h
//
// A fake gRPC dependency on the FakeServer's HTTP/2 (h2c in plain text, or
// h2 over TLS): each call is read as a GrpcRequest (its method, its
// messages deframed, its metadata and grpc-timeout) and answered with a
// GrpcReply, which is a well-formed gRPC answer or a misbehaviour on cue:
// a status with pushback, a hang, a Trailers-Only answer, RST_STREAM,
// GOAWAY, a bad length prefix, an oversized message, no grpc-status, or an
// HTTP status other than 200. Any client speaking gRPC can call it: grpc++,
// grpc-go, rpc::Client.
//
// example: examples/headers/testing.cc#fake-grpc
//   // Two calls to Get fail UNAVAILABLE (the first asking for 2 s of
//   // pushback), then every call succeeds; any other method is UNIMPLEMENTED.
//   auto server = testing::StartFakeGrpc(
//       {.script = {{"/cart.v1.Carts/Get",
//                    {testing::GrpcReply::Status(rpc::Code::kUnavailable).Pushback(2000),
//                     testing::GrpcReply::TrailersOnly(rpc::Code::kUnavailable, "draining"),
//                     testing::GrpcReply::Ok(cart_bytes)}}}});
//   network.Add("carts", 9090, "127.0.0.1", (*server)->port());
//   // ... calls to carts:9090 in plain text ...
//   testing::GrpcRequest first = testing::GrpcRequest::From((*server)->requests()[0]);
//   EXPECT_EQ(first.method, "/cart.v1.Carts/Get");
//   EXPECT_EQ(first.messages.size(), 1u);
//
// Threads: as the FakeServer's (outbound/testing/fake_server.h): a handler
// or a script runs on the server's one thread, one call at a time.
#ifndef OUTBOUND_TESTING_FAKE_GRPC_H_
#define OUTBOUND_TESTING_FAKE_GRPC_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "outbound/clock.h"
#include "outbound/error.h"
#include "outbound/rpc/settings.h"
#include "outbound/testing/fake_server.h"

namespace outbound::testing {

// One gRPC call as the fake received it.
struct GrpcRequest {
  std::string method;                 // the :path, "/pkg.Service/Method"
  std::vector<std::string> messages;  // the request's messages, deframed and decoded
  // Custom metadata, in the order sent, names lower-cased, "-bin" values
  // decoded to their bytes. Left out: pseudo-headers and the fields gRPC
  // itself writes (content-type, te, user-agent, grpc-timeout,
  // grpc-encoding, grpc-accept-encoding).
  Headers metadata;
  // grpc-timeout, decoded; nullopt when absent or not a valid value (then
  // `raw.header("grpc-timeout")` shows what came).
  std::optional<Duration> timeout;
  // Why the body did not deframe (a bad prefix, a message cut short), or
  // "" when it did; `messages` then holds those before the fault.
  std::string error;
  ServerRequest raw;  // the request as the FakeServer recorded it

  // Reads `request` as a gRPC call.
  static GrpcRequest From(const ServerRequest& request);
  // The first value of metadata `key` (lower case), or "" if absent.
  std::string metadata_value(std::string_view key) const;
};

// A gRPC answer, or a misbehaviour, for one call. Build one with the
// factories, adjust it with the chained setters, and hand it where a
// testing::Reply is wanted (it converts). Except where said, an answer is
// HTTP status 200, content-type application/grpc, its messages each
// length-prefixed (flag 0), and grpc-status with grpc-message
// (percent-encoded) in trailers.
class GrpcReply {
 public:
  // A bad length prefix (BadPrefix).
  enum class BadFlag {
    kCompressedWithoutEncoding,  // flag 1 and no grpc-encoding: INTERNAL to the client
    kTwo,                        // flag 2, which no encoding defines: INTERNAL
  };

  // One message, then status OK: a unary answer.
  static GrpcReply Ok(std::string message);
  // Each message in order (a server stream's), then status OK.
  static GrpcReply Messages(std::vector<std::string> messages);
  // No message; trailers with `code` and `message`, after the headers.
  static GrpcReply Status(rpc::Code code, std::string message = "");
  // Trailers-Only: one HEADERS frame with END_STREAM carrying :status 200,
  // content-type, grpc-status and grpc-message; no DATA frame.
  static GrpcReply TrailersOnly(rpc::Code code, std::string message = "");
  // Never answers; the client's deadline or cancel ends the call (the
  // FakeServer counts it in cancelled_requests()).
  static GrpcReply Hang();
  // RST_STREAM `h2_code` on the call's stream before any answer. gRPC maps
  // the code: 8 CANCEL is CANCELLED, 11 ENHANCE_YOUR_CALM
  // RESOURCE_EXHAUSTED, 12 INADEQUATE_SECURITY PERMISSION_DENIED, 7
  // REFUSED_STREAM UNAVAILABLE (and retried transparently), others INTERNAL.
  static GrpcReply ResetStream(std::uint32_t h2_code);
  // GOAWAY `h2_code` whose last-stream-id leaves the call's stream out (not
  // processed, so a client may send it again on a new connection), then
  // the connection closes.
  static GrpcReply Goaway(std::uint32_t h2_code = 0);
  // A message whose prefix is wrong as `flag` says, then status OK.
  static GrpcReply BadPrefix(BadFlag flag = BadFlag::kCompressedWithoutEncoding);
  // A message of `size` bytes (its prefix announcing them, then the bytes),
  // then status OK: over a client's receive limit (4 MiB by default) the
  // client ends the call RESOURCE_EXHAUSTED.
  static GrpcReply Oversized(std::size_t size);
  // `messages`, and the stream ends with no grpc-status anywhere (END_STREAM
  // on the last DATA frame, no trailers): INTERNAL to the client.
  static GrpcReply MissingStatus(std::vector<std::string> messages = {});
  // HTTP status `status` with a text/plain `body`, as a proxy in front of
  // the server answers: no grpc-status; the client maps the HTTP status
  // (503 is UNAVAILABLE, 404 UNIMPLEMENTED, ...).
  static GrpcReply HttpStatus(int status, std::string body = "");

  // grpc-retry-pushback-ms `ms` with the status (in trailers, or in the
  // one HEADERS frame of TrailersOnly). Negative asks for no retry.
  GrpcReply& Pushback(std::int64_t ms);
  // Trailing metadata sent with the status. A key ending in "-bin" has its
  // `value` (raw bytes) sent in base64.
  GrpcReply& Metadata(std::string key, std::string value);
  // Initial metadata, in the response's headers ("-bin" as above).
  GrpcReply& InitialMetadata(std::string key, std::string value);
  // The status the answer ends with, after its messages (Messages, Ok):
  // a stream that fails part way.
  GrpcReply& EndWith(rpc::Code code, std::string message = "");
  // Waits `d` on the server's clock before answering.
  GrpcReply& DelayHeaders(Duration d);

  // The answer as the FakeServer sends it.
  Reply ToReply() const;
  // Implicit, so a handler or a script takes a GrpcReply where a Reply goes.
  operator Reply() const { return ToReply(); }

 private:
  enum class Kind { kAnswer, kTrailersOnly, kHang, kReset, kGoaway, kHttpStatus };

  Kind kind_ = Kind::kAnswer;
  std::string body_;                                // the framed messages, as sent
  std::optional<rpc::Code> code_ = rpc::Code::kOk;  // nullopt: no grpc-status
  std::string message_;
  Headers initial_;
  Headers trailing_;
  std::uint32_t h2_code_ = 0;
  int http_status_ = 200;
  Duration delay_{0};
};

// What a fake gRPC server answers each call with.
using GrpcHandler = std::function<Reply(const GrpcRequest&)>;

// Per method ("/pkg.Service/Method"): its calls' answers in order, the last
// repeating once the others are used.
using GrpcScript = std::map<std::string, std::vector<Reply>, std::less<>>;

struct FakeGrpcOptions {
  // h2 over TLS (ALPN h2 only), or h2c in plain text when empty.
  std::optional<ServerTls> tls;
  // Answers every call when set; `script` is then unused.
  GrpcHandler handler;
  // Without a handler: each method's answers. A method not in it is
  // answered TrailersOnly(UNIMPLEMENTED), as a gRPC server does.
  GrpcScript script;
  Clock* clock = nullptr;  // the server's waits (DelayHeaders); null: SystemClock()
};

// Starts a FakeServer on 127.0.0.1 speaking gRPC as `options` say. Its
// requests() are the calls as received; GrpcRequest::From reads each.
[[nodiscard]] Result<std::unique_ptr<FakeServer>> StartFakeGrpc(FakeGrpcOptions options);

}  // namespace outbound::testing

#endif  // OUTBOUND_TESTING_FAKE_GRPC_H_
