// SPDX-License-Identifier: Apache-2.0
// The rpc tests' server and fixture: the Echo service of echo.proto on a
// real grpc++ server on 127.0.0.1, and a client fixture whose waits run on
// a ManualClock that Drive advances to each timer a call sets.
#ifndef OUTBOUND_TESTS_RPC_ECHO_SERVER_H_
#define OUTBOUND_TESTS_RPC_ECHO_SERVER_H_

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "echo.grpc.pb.h"
#include "methods.h"
#include "outbound/rpc/client.h"
#include "outbound/testing/fixed_random.h"
#include "outbound/testing/manual_clock.h"
#include "outbound/testing/network_map.h"

namespace outbound::rpc {
namespace {

using outbound::test::Echo;
using outbound::test::EchoReply;
using outbound::test::EchoRequest;
using Handler =
    std::function<grpc::Status(int call, grpc::ServerContext*, const EchoRequest&, EchoReply*)>;

class EchoService final : public Echo::Service {
 public:
  explicit EchoService(Handler handler) : handler_(std::move(handler)) {}
  grpc::Status Say(grpc::ServerContext* context, const EchoRequest* request,
                   EchoReply* reply) override {
    int n = ++calls_;
    return handler_(n, context, *request, reply);
  }
  grpc::Status Count(grpc::ServerContext* context, const EchoRequest* request,
                     grpc::ServerWriter<EchoReply>* writer) override {
    int n = ++stream_calls_;
    if (!stream) return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "no stream");
    return stream(n, context, *request, writer);
  }
  grpc::Status Collect(grpc::ServerContext* context, grpc::ServerReader<EchoRequest>* reader,
                       EchoReply* reply) override {
    int n = ++collect_calls_;
    if (!collect) return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "no collect");
    return collect(n, context, reader, reply);
  }
  grpc::Status Chat(grpc::ServerContext* context,
                    grpc::ServerReaderWriter<EchoReply, EchoRequest>* chat_stream) override {
    int n = ++chat_calls_;
    if (!chat) return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "no chat");
    return chat(n, context, chat_stream);
  }
  int calls() const { return calls_.load(); }
  int stream_calls() const { return stream_calls_.load(); }
  int collect_calls() const { return collect_calls_.load(); }
  int chat_calls() const { return chat_calls_.load(); }

  // Each set before the first call of its method.
  std::function<grpc::Status(int call, grpc::ServerContext*, const EchoRequest&,
                             grpc::ServerWriter<EchoReply>*)>
      stream;
  std::function<grpc::Status(int call, grpc::ServerContext*, grpc::ServerReader<EchoRequest>*,
                             EchoReply*)>
      collect;
  std::function<grpc::Status(int call, grpc::ServerContext*,
                             grpc::ServerReaderWriter<EchoReply, EchoRequest>*)>
      chat;

 private:
  Handler handler_;
  std::atomic<int> calls_{0};
  std::atomic<int> stream_calls_{0};
  std::atomic<int> collect_calls_{0};
  std::atomic<int> chat_calls_{0};
};

// A grpc++ server on 127.0.0.1, on a port the kernel picks (or `port`),
// with the integer channel arguments in `args`.
class EchoServer {
 public:
  explicit EchoServer(
      Handler handler,
      std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials(),
      int port = 0, const std::map<std::string, int>& args = {})
      : service_(std::move(handler)) {
    grpc::ServerBuilder builder;
    for (const auto& [name, value] : args) builder.AddChannelArgument(name, value);
    builder.AddListeningPort("127.0.0.1:" + std::to_string(port), credentials, &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
  }
  ~EchoServer() { server_->Shutdown(); }
  std::uint16_t port() const { return static_cast<std::uint16_t>(port_); }
  int calls() const { return service_.calls(); }
  int stream_calls() const { return service_.stream_calls(); }
  EchoService& service() { return service_; }
  bool started() const { return server_ != nullptr && port_ > 0; }

 private:
  EchoService service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

inline grpc::Status Ok(EchoReply* reply, const EchoRequest& request) {
  reply->set_text("echo: " + request.text());
  return grpc::Status::OK;
}

inline Handler Echoing() {
  return [](int, grpc::ServerContext*, const EchoRequest& request, EchoReply* reply) {
    return Ok(reply, request);
  };
}

// UNAVAILABLE for the first `failures` calls, then an echo.
inline Handler UnavailableThenEcho(int failures) {
  return [failures](int call, grpc::ServerContext*, const EchoRequest& request, EchoReply* reply) {
    if (call <= failures) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "not yet");
    return Ok(reply, request);
  };
}

// RESOURCE_EXHAUSTED with `pushback_ms` as grpc-retry-pushback-ms for the
// first call, then an echo.
inline Handler PushbackOnceThenEcho(const char* pushback_ms) {
  return [pushback_ms](int call, grpc::ServerContext* context, const EchoRequest& request,
                       EchoReply* reply) {
    if (call == 1) {
      context->AddTrailingMetadata("grpc-retry-pushback-ms", pushback_ms);
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "slow down");
    }
    return Ok(reply, request);
  };
}

// A server that answers only when its call is cancelled or past its deadline.
inline grpc::Status Hang(int, grpc::ServerContext* context, const EchoRequest&, EchoReply*) {
  while (!context->IsCancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  return grpc::Status(grpc::StatusCode::CANCELLED, "gave up");
}

// Hang, then notes in `saw_cancel` that the call ended (cancelled, or
// past its deadline), so a test can tell the server saw it end.
inline Handler HangNotingTheEnd(std::atomic<bool>& saw_cancel) {
  return [&saw_cancel](int call, grpc::ServerContext* context, const EchoRequest& request,
                       EchoReply* reply) {
    grpc::Status status = Hang(call, context, request, reply);
    saw_cancel = true;
    return status;
  };
}

class RpcClient : public ::testing::Test {
 protected:
  RpcClient() : random_(0.0) {
    runtime_.clock = &clock_;
    runtime_.network = &network_;
    runtime_.random = &random_;
  }

  // A client of backend:9090, which the network sends to `port` on loopback.
  std::unique_ptr<Client> Make(std::uint16_t port, Settings settings = DefaultSettings()) {
    network_.Add("backend", 9090, "127.0.0.1", port);
    settings.addr = "backend:9090";
    auto client = Client::Create(runtime_, std::move(settings));
    EXPECT_TRUE(client) << client.error().message();
    return client ? std::move(*client) : nullptr;
  }
  std::unique_ptr<Client> Make(const EchoServer& server, Settings settings = DefaultSettings()) {
    return Make(server.port(), std::move(settings));
  }

  // A loopback port a server listened on and no longer does.
  static std::uint16_t PortNothingListensOn() {
    EchoServer gone(Echoing());
    return gone.port();
  }

  // Runs fn on its own thread until it returns, advancing the fake clock to
  // each timer due within `horizon` of the start: the waits a call sets (a
  // backoff, a pushback, a delay) and a deadline shorter than the default
  // Timeout, but never a default Timeout's deadline or a client's idle
  // timer, which are pending all along while a real server answers in real
  // time.
  template <typename Fn>
  auto Drive(Fn fn, Duration horizon = DefaultSettings().timeout) {
    TimePoint until = clock_.Now() + horizon;
    auto future = std::async(std::launch::async, std::move(fn));
    while (future.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready) {
      if (auto next = clock_.next_timer(); next && *next < until) clock_.AdvanceTo(*next);
    }
    return future.get();
  }

  Status Say(Client& client, const std::string& text, const Context& context = {}) {
    EchoRequest request;
    request.set_text(text);
    return Drive([&] { return client.Call(kSay, request, &reply_, context); });
  }

  testing::ManualClock clock_;
  testing::NetworkMap network_;
  testing::FixedRandom random_;
  Runtime runtime_;
  EchoReply reply_;
};

}  // namespace
}  // namespace outbound::rpc

#endif  // OUTBOUND_TESTS_RPC_ECHO_SERVER_H_
