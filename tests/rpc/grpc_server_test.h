// SPDX-License-Identifier: Apache-2.0
// GrpcServerTest: the gRPC client against a server nobody here wrote, run
// as a program for each test (GrpcPeer): Python grpcio's
// (tests/rpc/grpcio_peer.py), grpc-go's (tests/rpc/grpc_go_peer) or
// grpc-js's (tests/rpc/grpc_js_test_service.js). All three serve the same
// service, peer.Test, and answer "stats" alike, so what any
// such server must see is written once (StockGrpcServerTest,
// stock_grpc_server_test.cc) and each peer's own file adds what only its
// server does. Waits run on a ManualClock the test advances to each timer
// the call sets.
#ifndef OUTBOUND_TESTS_RPC_GRPC_SERVER_TEST_H_
#define OUTBOUND_TESTS_RPC_GRPC_SERVER_TEST_H_

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "outbound/http/middleware.h"
#include "outbound/rpc/client.h"
#include "outbound/testing/fixed_random.h"
#include "outbound/testing/manual_clock.h"
#include "outbound/testing/network_map.h"
#include "outbound/testing/test_ca.h"
#include "spawned_peer.h"

namespace outbound::rpc {

// A gRPC server program serving peer.Test.
struct GrpcServerProgram {
  std::string name;                  // as its x-served-by metadata says: "grpcio"
  std::vector<std::string> command;  // what runs it, before the test's options
  std::string what;                  // named when it does not start
  bool node_script = false;          // command[0] is a script run with Node
};

// A failure names the program, not its bytes.
inline void PrintTo(const GrpcServerProgram& program, std::ostream* out) { *out << program.name; }

// What each attempt sent and got, as HTTP/2 carried it: the first byte of
// the framed request (its compressed flag), its grpc-encoding, and the
// answer's grpc-encoding.
class WireLog final : public http::AttemptMiddleware {
 public:
  void OnResult(const http::OutgoingRequest& request, Result<http::Response>& result,
                const http::AttemptInfo&) override {
    std::lock_guard lock(mu);
    request_flag = request.body().empty() ? -1 : static_cast<int>(request.body()[0]);
    request_encoding = std::string(request.header("grpc-encoding"));
    answer_encoding = result ? std::string(result->headers.Find("grpc-encoding")) : "";
  }
  std::mutex mu;
  int request_flag = -1;
  std::string request_encoding;
  std::string answer_encoding;
};

class GrpcServerTest : public ::testing::Test {
 protected:
  // A safety net for a broken test, never a tolerance: a passing test
  // waits for events.
  static constexpr auto kSafetyNet = GrpcPeer::kSafetyNet;

  explicit GrpcServerTest(GrpcServerProgram program)
      : program_(std::move(program)), random_(0.0) {  // jitter 0: a wait is the pushback alone
    runtime_.clock = &clock_;
    runtime_.network = &network_;
    runtime_.random = &random_;
  }

  // Starts the server with `args` (over TLS with a certificate for
  // "backend" when `tls`, else plain text), and a client of it with
  // `settings`.
  void Start(std::vector<std::string> args = {}, Settings settings = DefaultSettings(),
             bool tls = false) {
    if (tls) {
      files_ = std::make_unique<CertFiles>(ca_.IssueServer({"backend"}));
      std::vector<std::string> cert = files_->Args();
      args.insert(args.begin(), cert.begin(), cert.end());
      settings.tls = TlsSettings{.root_pem = ca_.pem()};
    }
    args.insert(args.begin(), program_.command.begin(), program_.command.end());
    if (program_.node_script) {
      args = peers::NodeCommand(args.front(), {args.begin() + 1, args.end()});
    }
    peer_ = std::make_unique<GrpcPeer>(std::move(args), program_.what);
    network_.Add("backend", 9090, "127.0.0.1", peer_->port());
    timeout_ = settings.timeout;
    settings.addr = "backend:9090";
    auto client = Client::Create(runtime_, std::move(settings));
    ASSERT_TRUE(client) << client.error().message();
    client_ = std::move(*client);
  }

  // A unary call, the clock advanced to each wait it sets (a backoff, a
  // pushback) but never to its deadline: the server answers in real time
  // while the deadline's timer is pending.
  Reply Call(const std::string& method, const std::string& request, const Context& context = {}) {
    TimePoint until = clock_.Now() + timeout_;
    auto future = std::async(std::launch::async, [&] {
      return client_->Call("/peer.Test/" + method, request, context);
    });
    while (future.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready) {
      if (auto next = clock_.next_timer(); next && *next < until) clock_.AdvanceTo(*next);
    }
    return future.get();
  }

  // Waits until the server has seen `n` calls of `method`.
  void WaitForCalls(const std::string& method, int n) {
    ASSERT_TRUE(peer_->WaitFor([&](const nlohmann::json& stats) {
      return stats.at("calls").value(method, 0) >= n;
    })) << program_.name
        << " never saw call " << n << " of " << method;
  }

  // The server's Deadline handler's answer: what it had left of the call,
  // in milliseconds, at most `ms` and more than a second less (the trip).
  static void ExpectTimeLeft(const Reply& reply, int ms) {
    ASSERT_TRUE(reply.status.ok()) << reply.status.message;
    ASSERT_NE(reply.body, "none") << "no grpc-timeout arrived";
    int left_ms = std::stoi(reply.body);
    EXPECT_LE(left_ms, ms);
    EXPECT_GT(left_ms, ms - 1000);
  }

  bool PeerSawCancelled(int n) {
    return peer_->WaitFor(
        [n](const nlohmann::json& stats) { return stats.at("cancelled").get<int>() >= n; });
  }

  GrpcServerProgram program_;
  testing::TestCA ca_;
  testing::ManualClock clock_;
  testing::NetworkMap network_;
  testing::FixedRandom random_;
  Runtime runtime_;
  std::unique_ptr<CertFiles> files_;
  std::unique_ptr<GrpcPeer> peer_;
  std::unique_ptr<Client> client_;
  Duration timeout_ = DefaultSettings().timeout;
};

// What every gRPC server must see of the client, instantiated by each
// peer's file with its program.
class StockGrpcServerTest : public GrpcServerTest,
                            public ::testing::WithParamInterface<GrpcServerProgram> {
 protected:
  StockGrpcServerTest() : GrpcServerTest(GetParam()) {}
};

// "grpc_go" for grpc-go: a test name's part.
inline std::string ProgramName(const ::testing::TestParamInfo<GrpcServerProgram>& info) {
  std::string name = info.param.name;
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name;
}

}  // namespace outbound::rpc

#endif  // OUTBOUND_TESTS_RPC_GRPC_SERVER_TEST_H_
