// SPDX-License-Identifier: Apache-2.0
// The gRPC row of bench/run: unary calls of tests/rpc/echo.proto's Say
// through outbound's rpc::Client beside the same calls through grpc++'s
// generated stub, to one local server. One process per side (as the HTTP
// rows run raw_curl and `outbound bench`), so each one's getrusage and
// callgrind count are its own.
//
//   grpc_bench --serve                 a server on 127.0.0.1; prints its port
//   grpc_bench CLIENT -n N -c C --target 127.0.0.1:PORT
//
// CLIENT is one of
//   raw        the generated stub's blocking Say, from C threads: the baseline
//   outbound   rpc::Client::Call with the stub's callback Say
//              (stub->async()): the library's loop, breaker, classify and
//              deadline around the same RPC, C threads
//   blocking   rpc::Client::Call with the stub's blocking Say, C threads
//   by-name    rpc::Client::Call by method name with the typed messages (the
//              generic stub under it), C threads
//   telemetry  `outbound` with a span per attempt (counted, dropped) and
//              every metric recorded
//   raw-callback  the generated stub's callback Say, each of C threads
//              sleeping until gRPC's thread completes its call (a
//              diagnostic: the stub helper's mechanism without the library)
//   async      the generated stub's async API, C calls outstanding on one
//              completion queue and one thread: grpc++'s own ceiling here
//
// and, with no thread per call on either side (each completion starts the
// next call of its slot, on gRPC's thread):
//   stub-callback   the generated stub's callback Say, C in flight: the
//              baseline of the asynchronous pair
//   outbound-async  rpc::Client::CallAsync with the stub's callback Say, C
//              in flight: the library's loop, breaker, classify and
//              deadline around the same RPC, no thread waiting
//
//   raw-deadline  `raw` with a 10 s deadline on each call, as rpc::Client
//              gives each attempt (Settings::timeout): grpc++'s own price of
//              a deadline, beside the baseline, which has none
//
// --deadline-ms D gives the raw clients' calls a deadline D ms away, and
// --no-deadline-checks turns gRPC's client-side deadline checking off
// (GRPC_ARG_ENABLE_DEADLINE_CHECKS: the deadline is still sent as
// grpc-timeout, but no timer is armed for it): diagnostics, to tell gRPC's
// cost of a deadline, and of its timer, from the library's own.
//
// rpc::Client's unary calls block their thread, so C threads keep C calls in
// flight on both sides of the comparison; `async` shows what grpc++ does
// without a thread per call. Every client waits for the channel to be READY
// and makes one call before the clock starts. Prints one JSON line with the
// figures raw_curl prints.
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "echo.grpc.pb.h"
#include "outbound/random.h"
#include "outbound/rpc/client.h"
#include "outbound/telemetry/metric_store.h"
#include "outbound/telemetry/trace.h"

namespace {

using outbound::test::Echo;
using outbound::test::EchoReply;
using outbound::test::EchoRequest;
using Clock = std::chrono::steady_clock;

constexpr char kSay[] = "/outbound.test.Echo/Say";

double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// Voluntary and involuntary context switches of this process so far.
long ContextSwitches() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_nvcsw + usage.ru_nivcsw;
}

double MillisSince(Clock::time_point began) {
  return std::chrono::duration<double, std::milli>(Clock::now() - began).count();
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

int Serve() {
  EchoService service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
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

// One unary call, made synchronously on the calling thread; true if OK.
using Call = std::function<bool()>;

struct Figures {
  double seconds = 0;
  double cpu = 0;
  long switches = 0;  // context switches while the calls ran
  long errors = 0;
  std::vector<double> latencies_ms;
};

// n calls of `call` from `threads` threads, each taking the next call as it
// finishes one.
Figures RunThreads(long n, long threads, const Call& call) {
  std::atomic<long> next{0};
  std::atomic<long> errors{0};
  std::vector<std::vector<double>> latencies(static_cast<std::size_t>(threads));
  Figures figures;
  double cpu_before = CpuSeconds();
  long switches_before = ContextSwitches();
  auto t0 = Clock::now();
  {
    std::vector<std::jthread> pool;
    for (long t = 0; t < threads; ++t) {
      pool.emplace_back([&, mine = &latencies[static_cast<std::size_t>(t)]] {
        mine->reserve(static_cast<std::size_t>(n / threads + 1));
        while (next.fetch_add(1, std::memory_order_relaxed) < n) {
          auto began = Clock::now();
          if (!call()) errors.fetch_add(1, std::memory_order_relaxed);
          mine->push_back(MillisSince(began));
        }
      });
    }
  }
  figures.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  figures.cpu = CpuSeconds() - cpu_before;
  figures.switches = ContextSwitches() - switches_before;
  figures.errors = errors.load();
  for (auto& mine : latencies) {
    figures.latencies_ms.insert(figures.latencies_ms.end(), mine.begin(), mine.end());
  }
  return figures;
}

// n calls on the stub's async API, `outstanding` at a time, on this thread.
Figures RunAsync(long n, long outstanding, Echo::Stub& stub, const EchoRequest& request,
                 const std::function<void(grpc::ClientContext&)>& prepare) {
  struct Pending {
    std::unique_ptr<grpc::ClientContext> context;
    std::unique_ptr<grpc::ClientAsyncResponseReader<EchoReply>> reader;
    EchoReply reply;
    grpc::Status status;
    Clock::time_point began;
  };
  grpc::CompletionQueue queue;
  std::vector<Pending> slots(static_cast<std::size_t>(outstanding));
  long started = 0;
  auto start = [&](Pending& slot) {
    slot.context = std::make_unique<grpc::ClientContext>();
    prepare(*slot.context);
    slot.began = Clock::now();
    slot.reader = stub.AsyncSay(slot.context.get(), request, &queue);
    slot.reader->Finish(&slot.reply, &slot.status, &slot);
    ++started;
  };
  Figures figures;
  figures.latencies_ms.reserve(static_cast<std::size_t>(n));
  double cpu_before = CpuSeconds();
  long switches_before = ContextSwitches();
  auto t0 = Clock::now();
  for (Pending& slot : slots) {
    if (started < n) start(slot);
  }
  for (long finished = 0; finished < n; ++finished) {
    void* tag = nullptr;
    bool ok = false;
    if (!queue.Next(&tag, &ok)) break;
    auto& slot = *static_cast<Pending*>(tag);
    figures.latencies_ms.push_back(MillisSince(slot.began));
    if (!ok || !slot.status.ok()) ++figures.errors;
    if (started < n) start(slot);
  }
  figures.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  figures.cpu = CpuSeconds() - cpu_before;
  figures.switches = ContextSwitches() - switches_before;
  queue.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (queue.Next(&tag, &ok)) {
  }
  return figures;
}

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
      double ms = MillisSince(began);
      // The slot's next call first: once the last call counts as finished,
      // this function may return, and nothing of it may be touched.
      launch(slot);
      std::lock_guard lock(mu);
      figures.latencies_ms.push_back(ms);
      if (!ok) ++figures.errors;
      if (++finished == n) all_done.notify_all();
    });
  };
  double cpu_before = CpuSeconds();
  long switches_before = ContextSwitches();
  auto t0 = Clock::now();
  for (long slot = 0; slot < in_flight; ++slot) launch(static_cast<std::size_t>(slot));
  {
    std::unique_lock lock(mu);
    all_done.wait(lock, [&] { return finished == n; });
  }
  figures.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  figures.cpu = CpuSeconds() - cpu_before;
  figures.switches = ContextSwitches() - switches_before;
  return figures;
}

// Spans as a tracing backend would receive them, counted and let go.
class CountingProcessor final : public outbound::telemetry::SpanProcessor {
 public:
  void OnEnd(outbound::telemetry::SpanData&&) override {
    spans.fetch_add(1, std::memory_order_relaxed);
  }
  std::atomic<long> spans{0};
};

int Usage() {
  std::fprintf(
      stderr,
      "usage: grpc_bench --serve\n"
      "       grpc_bench raw|raw-deadline|raw-callback|outbound|blocking|by-name|telemetry|async|\n"
      "                  stub-callback|outbound-async\n"
      "                  -n N -c C --target HOST:PORT [--deadline-ms D] "
      "[--no-deadline-checks]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--serve") return Serve();
  if (argc < 2) return Usage();
  const std::string who = argv[1];
  long n = 10000;
  long concurrency = 64;
  std::string target;
  long deadline_ms = 0;
  bool no_deadline_checks = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    bool has = i + 1 < argc;
    if (a == "-n" && has) {
      n = std::atol(argv[++i]);
    } else if (a == "-c" && has) {
      concurrency = std::atol(argv[++i]);
    } else if (a == "--target" && has) {
      target = argv[++i];
    } else if (a == "--deadline-ms" && has) {
      deadline_ms = std::atol(argv[++i]);
    } else if (a == "--no-deadline-checks") {
      no_deadline_checks = true;
    } else {
      return Usage();
    }
  }
  if (target.empty() || n < 1 || concurrency < 1) return Usage();

  EchoRequest request;
  request.set_text(std::string(100, 'x'));  // as the HTTP rows' 100-byte body
  const auto ready_by = std::chrono::system_clock::now() + std::chrono::seconds(10);
  Figures figures;

  if (who == "raw-deadline" && deadline_ms == 0) deadline_ms = 10000;
  if (who == "raw" || who == "raw-deadline" || who == "raw-callback" || who == "async" ||
      who == "stub-callback") {
    // The channel as a user of grpc++ alone would make it.
    grpc::ChannelArguments channel_args;
    if (no_deadline_checks) channel_args.SetInt(GRPC_ARG_ENABLE_DEADLINE_CHECKS, 0);
    auto channel =
        grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), channel_args);
    auto stub = Echo::NewStub(channel);
    if (!channel->WaitForConnected(ready_by)) {
      std::fprintf(stderr, "grpc_bench: %s did not connect\n", target.c_str());
      return 1;
    }
    auto prepare = [deadline_ms](grpc::ClientContext& context) {
      if (deadline_ms > 0) {
        context.set_deadline(std::chrono::system_clock::now() +
                             std::chrono::milliseconds(deadline_ms));
      }
    };
    auto say = [&] {
      grpc::ClientContext context;
      prepare(context);
      EchoReply reply;
      return stub->Say(&context, request, &reply).ok();
    };
    // The stub's callback Say, the calling thread sleeping until gRPC's
    // thread completes it: what the stub helper does, without the library.
    auto say_callback = [&] {
      grpc::ClientContext context;
      prepare(context);
      EchoReply reply;
      outbound::rpc::AttemptWait wait;
      stub->async()->Say(&context, &request, &reply, [&wait](const grpc::Status& status) {
        wait.Done(outbound::rpc::Status{static_cast<outbound::rpc::Code>(status.error_code()), ""});
      });
      return wait.Wait().ok();
    };
    if (!say()) return 1;
    if (who == "raw" || who == "raw-deadline") {
      figures = RunThreads(n, concurrency, say);
    } else if (who == "raw-callback") {
      figures = RunThreads(n, concurrency, say_callback);
    } else if (who == "stub-callback") {
      // A fresh context per call, made when its slot starts the next one.
      std::vector<std::unique_ptr<grpc::ClientContext>> contexts(
          static_cast<std::size_t>(concurrency));
      std::vector<EchoReply> replies(static_cast<std::size_t>(concurrency));
      figures = RunInFlight(n, concurrency, [&](std::size_t slot, std::function<void(bool)> done) {
        contexts[slot] = std::make_unique<grpc::ClientContext>();
        prepare(*contexts[slot]);
        stub->async()->Say(
            contexts[slot].get(), &request, &replies[slot],
            [done = std::move(done)](const grpc::Status& status) { done(status.ok()); });
      });
    } else {
      figures = RunAsync(n, concurrency, *stub, request, prepare);
    }
  } else if (who == "outbound" || who == "blocking" || who == "by-name" || who == "telemetry" ||
             who == "outbound-async") {
    namespace rpc = outbound::rpc;
    CountingProcessor spans;
    outbound::telemetry::RecordingTracer tracer(outbound::DefaultRandom(), spans);
    outbound::telemetry::MetricStore metrics;
    outbound::Runtime runtime;
    if (who == "telemetry") runtime.telemetry = {.tracer = &tracer, .meters = &metrics};
    rpc::Settings settings = rpc::DefaultSettings();
    settings.addr = target;
    auto client = rpc::Client::Create(runtime, settings);
    if (!client) {
      std::fprintf(stderr, "grpc_bench: %s\n", client.error().message().c_str());
      return 2;
    }
    rpc::Client& echo = **client;
    if (!echo.Connected(std::chrono::seconds(10))) {
      std::fprintf(stderr, "grpc_bench: %s did not connect\n", target.c_str());
      return 1;
    }
    auto stub = Echo::NewStub(echo.channel());
    Call call;
    if (who == "by-name") {
      call = [&] {
        EchoReply reply;
        return echo.Call(kSay, request, &reply).ok();
      };
    } else if (who == "blocking") {
      call = [&] {
        EchoReply reply;
        return echo.Call(kSay, &Echo::Stub::Say, *stub, request, &reply).ok();
      };
    } else {
      call = [&] {
        EchoReply reply;
        return echo.Call(kSay, &Echo::Stub::async::Say, stub->async(), request, &reply).ok();
      };
    }
    if (!call()) return 1;
    if (who == "outbound-async") {
      std::vector<EchoReply> replies(static_cast<std::size_t>(concurrency));
      figures = RunInFlight(n, concurrency, [&](std::size_t slot, std::function<void(bool)> done) {
        echo.CallAsync(kSay, &Echo::Stub::async::Say, stub->async(), &request, &replies[slot],
                       [done = std::move(done)](const rpc::Status& status, std::exception_ptr) {
                         done(status.ok());
                       });
      });
    } else {
      figures = RunThreads(n, concurrency, call);
    }
  } else {
    return Usage();
  }

  std::vector<double>& latencies = figures.latencies_ms;
  std::sort(latencies.begin(), latencies.end());
  auto pct = [&](double p) {
    return latencies[static_cast<std::size_t>(p * static_cast<double>(latencies.size() - 1))];
  };
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf(
      "{\"client\":\"%s\",\"calls\":%ld,\"concurrency\":%ld,\"seconds\":%.6f,"
      "\"calls_per_second\":%.1f,\"errors\":%ld,"
      "\"latency_ms\":{\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,\"max\":%.3f},"
      "\"cpu_seconds\":%.6f,\"cpu_us_per_call\":%.3f,\"context_switches_per_call\":%.2f,"
      "\"peak_rss_kb\":%ld}\n",
      who.c_str(), n, concurrency, figures.seconds, static_cast<double>(n) / figures.seconds,
      figures.errors, pct(0.5), pct(0.9), pct(0.99), latencies.back(), figures.cpu,
      figures.cpu * 1e6 / static_cast<double>(n),
      static_cast<double>(figures.switches) / static_cast<double>(n), usage.ru_maxrss);
  return figures.errors == 0 ? 0 : 1;
}
