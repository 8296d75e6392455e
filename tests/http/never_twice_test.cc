// SPDX-License-Identifier: Apache-2.0
// Never sent twice (issue 11): POSTs with unique bodies and no
// Idempotency-Key, through a server that ends the exchange at every phase
// (before reading the body, after part of it, after all of it, after
// answering part), by closing, resetting, RST_STREAM or GOAWAY, on fresh
// and reused connections, over HTTP/1.1 and HTTP/2. It proves that:
//   - every request reaches the server at most once, except writes the
//     protocol proves were not processed (HTTP/2 REFUSED_STREAM, or a
//     stream above a GOAWAY's last-stream-id), counted apart;
//   - a write that could have been processed is the call's last: the call
//     fails then (kTransport), and that failure is the correct outcome;
//   - every write the server saw is an attempt the client reported
//     (Error::attempts() / Response::attempts), and no attempt is unseen;
//   - a call the server answered whole succeeds with its own answer.
// A "write" is any part of a request the server read: its head, part of its
// body, or all of it. Each call's target and body carry its number, so every
// write is traced to its call. Faulted requests are chosen per connection
// (fresh: a new client per call, its connection's first request faulted;
// reused: every second request on a connection faulted, the first
// answered), and the faults of a phase take turns call by call.
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "client_test_support.h"

namespace outbound::http {
namespace {

using testing::ReadCut;
using testing::Reply;
using testing::ServerRequest;

enum class Phase { kBeforeBody, kPartOfBody, kWholeBody, kPartOfAnswer };
enum class Connection { kFresh, kReused };

constexpr std::size_t kBodyBytes = 200;  // under curl's 1 KiB Expect: 100-continue
constexpr std::size_t kPartBytes = 100;

// The calls of the default run (over the 16 cases: about 1 000) and of the
// `long` one (10 000).
constexpr int kCalls = 64;
constexpr int kLongCalls = 625;

std::string Target(int call) { return "/charges/" + std::to_string(call); }

std::string Body(int call) {
  std::string body = "charge " + std::to_string(call) + ";";
  while (body.size() < kBodyBytes) body += static_cast<char>('a' + call % 26);
  return body;
}

// The call a target names, or -1.
int CallOf(const std::string& target) {
  if (target.rfind("/charges/", 0) != 0) return -1;
  return std::stoi(target.substr(9));
}

// One way the server ends a faulted exchange.
struct Fault {
  std::string name;
  Reply end;
  bool refused;  // the protocol tells the client it was not processed
};

// The faults of `phase` on `protocol`: for the reading phases, the end of a
// ReadCut; for the others, the handler's reply.
std::vector<Fault> FaultsOf(Protocol protocol, Phase phase) {
  using H2Reset = Reply::H2Reset;
  std::string answer = "charged, but cut short";
  if (protocol == Protocol::kHttp11) {
    switch (phase) {
      case Phase::kBeforeBody:
      case Phase::kPartOfBody:
      case Phase::kWholeBody:
        return {{"close", Reply::Close(), false}, {"tcp_reset", Reply::Reset(), false}};
      case Phase::kPartOfAnswer:
        return {{"close", Reply::ShortBody(5, answer), false},
                {"tcp_reset", Reply::ResetAfter(5, answer), false}};
    }
  }
  switch (phase) {
    case Phase::kBeforeBody:
    case Phase::kPartOfBody:
    case Phase::kWholeBody:
      return {{"tcp_close", Reply::Close(), false},
              {"tcp_reset", Reply::ResetConnection(), false},
              {"rst_refused_stream", Reply::Reset(7), true},
              {"rst_internal_error", Reply::Reset(2), false},
              {"goaway_below", Reply::Reset(0).ResetBy(H2Reset::kGoaway), true}};
    case Phase::kPartOfAnswer:
      return {{"rst_internal_error", Reply::ResetAfter(5, answer), false},
              {"goaway_then_close", Reply::ResetAfter(5, answer).ResetBy(H2Reset::kGoaway), false},
              {"tcp_close", Reply::ResetAfter(5, answer).ResetBy(H2Reset::kConnection), false}};
  }
  return {};
}

using Params = std::tuple<Protocol, Phase, Connection>;

class NeverTwiceTest : public ClientTestBase, public ::testing::TestWithParam<Params> {
 protected:
  Protocol protocol() const { return std::get<0>(GetParam()); }
  Phase phase() const { return std::get<1>(GetParam()); }
  Connection connection() const { return std::get<2>(GetParam()); }

  // What the server decided for one request: answered, or which fault.
  struct Verdict {
    int call = -1;
    const Fault* fault = nullptr;  // null: answered whole
  };

  void Start() {
    faults_ = FaultsOf(protocol(), phase());
    testing::FakeServer::Options options;
    options.cut_reading = [this](const ServerRequest& head) -> std::optional<ReadCut> {
      const Verdict& verdict = Decide(head);
      if (verdict.fault == nullptr) return std::nullopt;
      if (phase() == Phase::kBeforeBody) return ReadCut{0, verdict.fault->end};
      if (phase() == Phase::kPartOfBody) return ReadCut{kPartBytes, verdict.fault->end};
      return std::nullopt;
    };
    Serve(
        [this](const ServerRequest& r) {
          std::lock_guard lock(verdicts_mu_);
          const Verdict& verdict = verdicts_.at({r.connection_id, r.stream_id});
          if (verdict.fault != nullptr) return verdict.fault->end;
          return Reply::Ok("charged " + std::to_string(verdict.call));
        },
        protocol(), std::move(options));
  }

  // Called with each request's head, on the server's thread.
  const Verdict& Decide(const ServerRequest& head) {
    std::lock_guard lock(verdicts_mu_);
    int nth = ++requests_on_[head.connection_id];
    bool faulted = connection() == Connection::kFresh ? nth == 1 : nth % 2 == 0;
    Verdict verdict{.call = CallOf(head.target)};
    if (faulted && verdict.call >= 0) {
      verdict.fault = &faults_[static_cast<std::size_t>(verdict.call) % faults_.size()];
    }
    return verdicts_[{head.connection_id, head.stream_id}] = verdict;
  }

  Settings NeverTripping() {
    Settings s = PaymentsSettings();
    s.breaker_policy.trip = [](const circuit::Counts&) { return false; };
    return s;
  }

  // Sends `calls` POSTs one after another and checks what each did.
  void Run(int calls) {
    Start();
    std::unique_ptr<Client> shared;
    if (connection() == Connection::kReused) shared = MakeClient(NeverTripping());
    std::vector<Result<Response>> results;
    for (int call = 0; call < calls; ++call) {
      std::unique_ptr<Client> own;
      if (connection() == Connection::kFresh) own = MakeClient(NeverTripping());
      Client& client = shared ? *shared : *own;
      SCOPED_TRACE("call " + std::to_string(call));
      results.push_back(SendMovingToBackoffs(client, Request::Post(Target(call), Body(call))));
    }
    shared.reset();
    Check(results);
  }

  void Check(const std::vector<Result<Response>>& results) {
    std::map<std::pair<int, int>, Verdict> verdicts;
    {
      std::lock_guard lock(verdicts_mu_);
      verdicts = verdicts_;
    }
    // Every write of each call, in order of arrival; whether it was refused.
    std::map<int, std::vector<std::pair<ServerRequest, std::optional<Verdict>>>> writes;
    for (const ServerRequest& r : server->requests()) {
      int call = CallOf(r.target);
      ASSERT_GE(call, 0) << r.target;
      auto it = verdicts.find({r.connection_id, r.stream_id});
      std::optional<Verdict> verdict;
      if (it != verdicts.end()) verdict = it->second;
      writes[call].emplace_back(r, verdict);
    }
    int refused_total = 0, failed = 0, succeeded = 0;
    for (int call = 0; call < static_cast<int>(results.size()); ++call) {
      SCOPED_TRACE("call " + std::to_string(call));
      const Result<Response>& result = results[static_cast<std::size_t>(call)];
      const auto& seen = writes[call];
      int refused = 0, processed = 0;
      std::optional<std::size_t> processed_at;
      for (std::size_t i = 0; i < seen.size(); ++i) {
        const auto& [request, verdict] = seen[i];
        std::string body = Body(call);
        EXPECT_EQ(request.method, "POST");
        EXPECT_EQ(request.header("idempotency-key"), "");
        EXPECT_EQ(request.body, body.substr(0, request.body.size()));
        if (request.whole) {
          EXPECT_EQ(request.body, body);
        }
        // No verdict: a stream above a GOAWAY's last-stream-id, which the
        // server recorded and did not process.
        bool was_refused = !verdict || (verdict->fault != nullptr && verdict->fault->refused);
        if (was_refused) {
          ++refused;
        } else {
          ++processed;
          processed_at = i;
        }
      }
      refused_total += refused;
      // At most once, except what the protocol proves was not processed;
      // and a write that could have been processed is never followed by
      // another.
      EXPECT_LE(processed, 1) << Describe(seen);
      if (processed_at) {
        EXPECT_EQ(*processed_at, seen.size() - 1) << Describe(seen);
      }
      // Every write is an attempt the client reported, and the reverse.
      int reported = result ? result->attempts : result.error().attempts();
      EXPECT_EQ(reported, static_cast<int>(seen.size())) << Describe(seen);
      ASSERT_FALSE(seen.empty());
      const std::optional<Verdict>& last = seen.back().second;
      if (last && last->fault == nullptr) {
        // Answered whole: the call has that answer.
        ++succeeded;
        ASSERT_TRUE(result) << result.error().message() << Describe(seen);
        EXPECT_EQ(result->status, 200);
        EXPECT_EQ(result->body, "charged " + std::to_string(call));
      } else {
        // Cut (or refused as many times as the client would resend it):
        // the call fails, and that is right.
        ++failed;
        ASSERT_FALSE(result) << "status " << result->status << Describe(seen);
        EXPECT_EQ(result.error().kind(), ErrorKind::kTransport) << result.error().message();
      }
    }
    std::ostringstream summary;
    summary << results.size() << " calls: " << succeeded << " answered, " << failed << " failed; "
            << refused_total << " writes refused (not processed) and resent";
    std::cout << "[ summary  ] " << summary.str() << "\n";
    RecordProperty("refused_writes", refused_total);
  }

  static std::string Describe(
      const std::vector<std::pair<ServerRequest, std::optional<Verdict>>>& seen) {
    std::string out = "\n  writes the server saw:";
    for (const auto& [request, verdict] : seen) {
      out += "\n    connection " + std::to_string(request.connection_id) + " stream " +
             std::to_string(request.stream_id) + (request.whole ? " whole, " : " cut, ") +
             std::to_string(request.body.size()) + " body bytes: " +
             (!verdict                    ? "above GOAWAY"
              : verdict->fault == nullptr ? "answered"
                                          : verdict->fault->name);
    }
    return out;
  }

  std::vector<Fault> faults_;
  std::mutex verdicts_mu_;
  std::map<int, int> requests_on_;                   // connection → requests seen on it
  std::map<std::pair<int, int>, Verdict> verdicts_;  // (connection, stream) → verdict
};

TEST_P(NeverTwiceTest, EveryBodyReachesTheServerAtMostOnce) { Run(kCalls); }

TEST_P(NeverTwiceTest, EveryBodyReachesTheServerAtMostOnceLong) { Run(kLongCalls); }

std::string Name(const ::testing::TestParamInfo<Params>& info) {
  const char* protocols[] = {"h2", "h1"};
  const char* phases[] = {"before_body", "part_of_body", "whole_body", "part_of_answer"};
  const char* connections[] = {"fresh", "reused"};
  return std::string(protocols[static_cast<int>(std::get<0>(info.param))]) + "_" +
         phases[static_cast<int>(std::get<1>(info.param))] + "_" +
         connections[static_cast<int>(std::get<2>(info.param))];
}

INSTANTIATE_TEST_SUITE_P(
    Phases, NeverTwiceTest,
    ::testing::Combine(::testing::Values(Protocol::kHttp11, Protocol::kHttp2),
                       ::testing::Values(Phase::kBeforeBody, Phase::kPartOfBody, Phase::kWholeBody,
                                         Phase::kPartOfAnswer),
                       ::testing::Values(Connection::kFresh, Connection::kReused)),
    Name);

}  // namespace
}  // namespace outbound::http
