// SPDX-License-Identifier: Apache-2.0
// The gRPC row of bench/run: unary calls of tests/rpc/echo.proto's Say
// through outbound's rpc::Client beside the same calls through grpc++'s
// generated stub, to one local grpc++ server, plain text or TLS. One
// process per client (as the HTTP rows run raw_curl and `outbound bench`),
// so each one's getrusage and callgrind count are its own; grpc-go's side
// is bench/grpc_go_client, h2load's is bench/run's.
//
//   grpc_bench --serve [--cert CERT.pem --key KEY.pem]
//                      a server on 127.0.0.1 (TLS with the pair); prints its port
//   grpc_bench CLIENT -n N -c C --target 127.0.0.1:PORT [--ca CA.pem]
//                      N calls, C in flight, on one connection (TLS trusting CA)
//
// CLIENT is one of, each with no thread per call (the end of each call
// starts its slot's next one, on the thread that ended it):
//   stub-callback   the generated stub's callback Say: the baseline
//   outbound-async  rpc::Client::CallAsync by name, the reply parsed into
//                   EchoReply: the library's own HTTP/2, call core,
//                   breaker, classify and deadline
//
// Each client makes one call before its clock starts, and prints one JSON
// line: calls, seconds, CPU per call from getrusage over the measured
// calls, latency percentiles, context switches, peak RSS.
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "echo.grpc.pb.h"
#include "outbound/rpc/client.h"

namespace {

using outbound::test::Echo;
using outbound::test::EchoReply;
using outbound::test::EchoRequest;
using Clock = std::chrono::steady_clock;

constexpr char kSay[] = "/outbound.test.Echo/Say";

rusage Usage() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage;
}

double CpuSeconds(const rusage& usage) {
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// The whole file, or nullopt if it cannot be read.
std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Say on the callback API: answered on gRPC's own threads, no thread per call.
class EchoService final : public Echo::CallbackService {
  grpc::ServerUnaryReactor* Say(grpc::CallbackServerContext* context, const EchoRequest* request,
                                EchoReply* reply) override {
    reply->set_text(request->text());
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

// Serves until killed; TLS when `cert` and `key` (PEM file paths) are set.
int Serve(const std::string& cert, const std::string& key) {
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (!cert.empty()) {
    auto cert_pem = ReadFile(cert);
    auto key_pem = ReadFile(key);
    if (!cert_pem || !key_pem) {
      std::fprintf(stderr, "grpc_bench: cannot read %s or %s\n", cert.c_str(), key.c_str());
      return 1;
    }
    grpc::SslServerCredentialsOptions options;
    options.pem_key_cert_pairs.push_back({*key_pem, *cert_pem});
    credentials = grpc::SslServerCredentials(options);
  }
  EchoService service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", credentials, &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "grpc_bench: the server did not start\n");
    return 1;
  }
  std::printf("%d\n", port);
  std::fflush(stdout);
  server->Wait();  // until the harness kills it
  return 0;
}

struct Figures {
  double seconds = 0;
  double cpu = 0;
  long switches = 0;  // context switches while the calls ran
  long errors = 0;
  std::vector<double> latencies_ms;
};

// Starts one call on `slot` and reports its end through `done` (true if
// OK), from whichever thread ends it.
using StartCall = std::function<void(std::size_t slot, std::function<void(bool ok)> done)>;

// n calls, `in_flight` at a time, with no thread per call: the end of each
// call starts the next one on its slot, on the thread that ended it. This
// thread only waits for the last.
Figures RunInFlight(long n, long in_flight, const StartCall& start) {
  std::atomic<long> started{0};
  std::mutex mu;
  std::condition_variable all_done;
  long finished = 0;
  Figures figures;
  figures.latencies_ms.reserve(static_cast<std::size_t>(n));
  std::function<void(std::size_t)> launch = [&](std::size_t slot) {
    if (started.fetch_add(1, std::memory_order_relaxed) >= n) return;
    auto began = Clock::now();
    start(slot, [&, slot, began](bool ok) {
      double ms = std::chrono::duration<double, std::milli>(Clock::now() - began).count();
      // The slot's next call first: once the last call counts as finished,
      // this function may return, and nothing of it may be touched.
      launch(slot);
      std::lock_guard lock(mu);
      figures.latencies_ms.push_back(ms);
      if (!ok) ++figures.errors;
      if (++finished == n) all_done.notify_all();
    });
  };
  rusage before = Usage();
  auto t0 = Clock::now();
  for (long slot = 0; slot < in_flight; ++slot) launch(static_cast<std::size_t>(slot));
  {
    std::unique_lock lock(mu);
    all_done.wait(lock, [&] { return finished == n; });
  }
  figures.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  rusage after = Usage();
  figures.cpu = CpuSeconds(after) - CpuSeconds(before);
  figures.switches = (after.ru_nvcsw + after.ru_nivcsw) - (before.ru_nvcsw + before.ru_nivcsw);
  return figures;
}

struct Options {
  std::string client;
  long n = 10000;
  long concurrency = 64;
  std::string target;
  std::string ca;  // PEM roots file: TLS; empty: plain text
};

// grpc++'s generated stub, C calls in flight on its callback API.
int RunStub(const Options& options, const EchoRequest& request, Figures& figures) {
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!options.ca.empty()) {
    auto roots = ReadFile(options.ca);
    if (!roots) return std::fprintf(stderr, "grpc_bench: cannot read %s\n", options.ca.c_str()), 1;
    credentials = grpc::SslCredentials({.pem_root_certs = *roots});
  }
  // The channel as a user of grpc++ alone would make it.
  auto channel = grpc::CreateChannel(options.target, credentials);
  auto stub = Echo::NewStub(channel);
  {
    grpc::ClientContext context;
    EchoReply reply;
    if (!stub->Say(&context, request, &reply).ok()) return 1;
  }
  // Each slot's context and reply; left to the process's exit, as the
  // stub and channel are, since gRPC's thread may still be returning from
  // the last callback when the calls are counted done.
  struct Slot {
    std::unique_ptr<grpc::ClientContext> context;
    EchoReply reply;
  };
  auto* slots = new std::vector<Slot>(static_cast<std::size_t>(options.concurrency));
  figures = RunInFlight(
      options.n, options.concurrency, [&](std::size_t index, std::function<void(bool)> done) {
        // A fresh context per call, made when its slot starts the next one.
        Slot& slot = (*slots)[index];
        slot.context = std::make_unique<grpc::ClientContext>();
        stub->async()->Say(
            slot.context.get(), &request, &slot.reply,
            [done = std::move(done)](const grpc::Status& status) { done(status.ok()); });
      });
  (void)stub.release();
  return 0;
}

// rpc::Client::CallAsync by name, C calls in flight.
int RunOutbound(const Options& options, const EchoRequest& request, Figures& figures) {
  namespace rpc = outbound::rpc;
  rpc::Settings settings = rpc::DefaultSettings();
  settings.addr = options.target;
  if (!options.ca.empty()) {
    auto roots = ReadFile(options.ca);
    if (!roots) return std::fprintf(stderr, "grpc_bench: cannot read %s\n", options.ca.c_str()), 1;
    settings.tls = rpc::TlsSettings{.root_pem = *roots};
  }
  auto client = rpc::Client::Create(outbound::Runtime{}, settings);
  if (!client) {
    std::fprintf(stderr, "grpc_bench: %s\n", client.error().message().c_str());
    return 1;
  }
  const std::string bytes = request.SerializeAsString();
  if (!(*client)->Call(kSay, bytes).status.ok()) return 1;
  figures =
      RunInFlight(options.n, options.concurrency, [&](std::size_t, std::function<void(bool)> done) {
        (*client)->CallAsync(kSay, bytes,
                             [done = std::move(done)](rpc::Reply reply, std::exception_ptr) {
                               EchoReply parsed;
                               done(reply.status.ok() && parsed.ParseFromString(reply.body));
                             });
      });
  return 0;
}

void PrintFigures(const Options& options, Figures& figures) {
  std::vector<double>& latencies = figures.latencies_ms;
  std::sort(latencies.begin(), latencies.end());
  auto pct = [&](double p) {
    return latencies[static_cast<std::size_t>(p * static_cast<double>(latencies.size() - 1))];
  };
  auto n = static_cast<double>(options.n);
  std::printf(
      "{\"client\":\"%s\",\"calls\":%ld,\"concurrency\":%ld,\"seconds\":%.6f,"
      "\"calls_per_second\":%.1f,\"errors\":%ld,"
      "\"latency_ms\":{\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,\"max\":%.3f},"
      "\"cpu_seconds\":%.6f,\"cpu_us_per_call\":%.3f,\"context_switches_per_call\":%.2f,"
      "\"peak_rss_kb\":%ld}\n",
      options.client.c_str(), options.n, options.concurrency, figures.seconds, n / figures.seconds,
      figures.errors, pct(0.5), pct(0.9), pct(0.99), latencies.back(), figures.cpu,
      figures.cpu * 1e6 / n, static_cast<double>(figures.switches) / n, Usage().ru_maxrss);
}

int UsageError() {
  std::fprintf(stderr,
               "usage: grpc_bench --serve [--cert CERT.pem --key KEY.pem]\n"
               "       grpc_bench stub-callback|outbound-async -n N -c C --target HOST:PORT "
               "[--ca CA.pem]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return UsageError();
  Options options{.client = argv[1]};
  std::string cert, key;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) return UsageError();
    if (a == "-n") {
      options.n = std::atol(argv[++i]);
    } else if (a == "-c") {
      options.concurrency = std::atol(argv[++i]);
    } else if (a == "--target") {
      options.target = argv[++i];
    } else if (a == "--ca") {
      options.ca = argv[++i];
    } else if (a == "--cert") {
      cert = argv[++i];
    } else if (a == "--key") {
      key = argv[++i];
    } else {
      return UsageError();
    }
  }
  if (options.client == "--serve") {
    return cert.empty() == key.empty() ? Serve(cert, key) : UsageError();
  }
  if (options.target.empty() || options.n < 1 || options.concurrency < 1) return UsageError();
  EchoRequest request;
  request.set_text(std::string(100, 'x'));  // as the HTTP rows' 100-byte body
  Figures figures;
  int failed = 0;
  if (options.client == "stub-callback") {
    failed = RunStub(options, request, figures);
  } else if (options.client == "outbound-async") {
    failed = RunOutbound(options, request, figures);
  } else {
    return UsageError();
  }
  if (failed != 0) {
    std::fprintf(stderr, "grpc_bench: %s did not reach %s\n", options.client.c_str(),
                 options.target.c_str());
    return failed;
  }
  PrintFigures(options, figures);
  return figures.errors == 0 ? 0 : 1;
}
