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
//   outbound   rpc::Client::Call with the typed messages, C threads: the
//              library's own HTTP/2, call core, breaker, classify and
//              deadline
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
//   outbound-async  rpc::Client::CallAsync by name, C in flight: no thread
//              waiting
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
      "       grpc_bench CLIENT -n N -c C --target HOST:PORT [--deadline-ms D] "
      "[--no-deadline-checks]\n"
      "       grpc_bench paired CLIENT_A CLIENT_B -n N -c C --blocks K --target HOST:PORT\n"
      "CLIENT: raw|raw-deadline|raw-callback|outbound|telemetry|async|\n"
      "        stub-callback|stub-callback-deadline|outbound-async\n");
  return 2;
}

struct Options {
  long n = 10000;
  long concurrency = 64;
  std::string target;
  long deadline_ms = 0;
  bool no_deadline_checks = false;
};

// One client of the comparison, set up and connected: Run makes n calls,
// C in flight, and measures them. Holds what its calls use.
class Side {
 public:
  // Null, with a message on stderr, if `who` is unknown or does not connect.
  static std::unique_ptr<Side> Make(const std::string& who, Options options) {
    auto side = std::unique_ptr<Side>(new Side(who, std::move(options)));
    return side->Connect() ? std::move(side) : nullptr;
  }

  Figures Run(long n) { return run_(n); }
  const std::string& who() const { return who_; }

 private:
  Side(std::string who, Options options) : who_(std::move(who)), options_(std::move(options)) {
    request_.set_text(std::string(100, 'x'));  // as the HTTP rows' 100-byte body
  }

  bool Connect() {
    const auto ready_by = std::chrono::system_clock::now() + std::chrono::seconds(10);
    const long c = options_.concurrency;
    if (who_ == "raw-deadline" || who_ == "stub-callback-deadline") {
      if (options_.deadline_ms == 0) options_.deadline_ms = 10000;
    }
    if (who_ == "raw" || who_ == "raw-deadline" || who_ == "raw-callback" || who_ == "async" ||
        who_ == "stub-callback" || who_ == "stub-callback-deadline") {
      // The channel as a user of grpc++ alone would make it.
      grpc::ChannelArguments channel_args;
      if (options_.no_deadline_checks) channel_args.SetInt(GRPC_ARG_ENABLE_DEADLINE_CHECKS, 0);
      channel_ = grpc::CreateCustomChannel(options_.target, grpc::InsecureChannelCredentials(),
                                           channel_args);
      stub_ = Echo::NewStub(channel_);
      if (!channel_->WaitForConnected(ready_by)) return NotConnected();
      if (!Say()) return NotConnected();
      if (who_ == "raw" || who_ == "raw-deadline") {
        run_ = [this, c](long n) { return RunThreads(n, c, [this] { return Say(); }); };
      } else if (who_ == "raw-callback") {
        run_ = [this, c](long n) { return RunThreads(n, c, [this] { return SayCallback(); }); };
      } else if (who_ == "async") {
        run_ = [this, c](long n) {
          return RunAsync(n, c, *stub_, request_,
                          [this](grpc::ClientContext& context) { Prepare(context); });
        };
      } else {  // stub-callback, stub-callback-deadline
        contexts_.resize(static_cast<std::size_t>(c));
        replies_.resize(static_cast<std::size_t>(c));
        run_ = [this, c](long n) {
          return RunInFlight(n, c, [this](std::size_t slot, std::function<void(bool)> done) {
            // A fresh context per call, made when its slot starts the next one.
            contexts_[slot] = std::make_unique<grpc::ClientContext>();
            Prepare(*contexts_[slot]);
            stub_->async()->Say(
                contexts_[slot].get(), &request_, &replies_[slot],
                [done = std::move(done)](const grpc::Status& status) { done(status.ok()); });
          });
        };
      }
      return true;
    }
    namespace rpc = outbound::rpc;
    if (who_ != "outbound" && who_ != "telemetry" && who_ != "outbound-async") {
      std::fprintf(stderr, "grpc_bench: no client %s\n", who_.c_str());
      return false;
    }
    outbound::Runtime runtime;
    if (who_ == "telemetry") {
      tracer_ =
          std::make_unique<outbound::telemetry::RecordingTracer>(outbound::DefaultRandom(), spans_);
      runtime.telemetry = {.tracer = tracer_.get(), .meters = &metrics_};
    }
    rpc::Settings settings = rpc::DefaultSettings();
    settings.addr = options_.target;
    auto client = rpc::Client::Create(runtime, settings);
    if (!client) {
      std::fprintf(stderr, "grpc_bench: %s\n", client.error().message().c_str());
      return false;
    }
    client_ = std::move(*client);
    Call call = [this] {
      EchoReply reply;
      return client_->Call(kSay, request_, &reply).ok();
    };
    if (!call()) return NotConnected();
    if (who_ == "outbound-async") {
      request_bytes_ = request_.SerializeAsString();
      run_ = [this, c](long n) {
        return RunInFlight(n, c, [this](std::size_t, std::function<void(bool)> done) {
          client_->CallAsync(kSay, request_bytes_,
                             [done = std::move(done)](rpc::Reply reply, std::exception_ptr) {
                               EchoReply parsed;
                               done(reply.status.ok() && parsed.ParseFromString(reply.body));
                             });
        });
      };
    } else {
      run_ = [c, call = std::move(call)](long n) { return RunThreads(n, c, call); };
    }
    return true;
  }

  bool NotConnected() const {
    std::fprintf(stderr, "grpc_bench: %s did not reach %s\n", who_.c_str(),
                 options_.target.c_str());
    return false;
  }

  void Prepare(grpc::ClientContext& context) const {
    if (options_.deadline_ms > 0) {
      context.set_deadline(std::chrono::system_clock::now() +
                           std::chrono::milliseconds(options_.deadline_ms));
    }
  }

  bool Say() {
    grpc::ClientContext context;
    Prepare(context);
    EchoReply reply;
    return stub_->Say(&context, request_, &reply).ok();
  }

  // The stub's callback Say, the calling thread sleeping until gRPC's
  // thread completes it: what the stub helper does, without the library.
  bool SayCallback() {
    grpc::ClientContext context;
    Prepare(context);
    EchoReply reply;
    std::mutex mu;
    std::condition_variable cv;
    std::optional<bool> ok;
    stub_->async()->Say(&context, &request_, &reply, [&](const grpc::Status& status) {
      std::lock_guard lock(mu);
      ok = status.ok();
      cv.notify_one();  // under the lock: once the caller wakes, nothing here is touched
    });
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return ok.has_value(); });
    return *ok;
  }

  const std::string who_;
  Options options_;
  EchoRequest request_;
  std::string request_bytes_;
  std::shared_ptr<grpc::Channel> channel_;
  CountingProcessor spans_;
  outbound::telemetry::MetricStore metrics_;
  std::unique_ptr<outbound::telemetry::RecordingTracer> tracer_;
  std::unique_ptr<outbound::rpc::Client> client_;  // after what its Runtime points to
  std::unique_ptr<Echo::Stub> stub_;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts_;
  std::vector<EchoReply> replies_;
  std::function<Figures(long)> run_;
};

void PrintFigures(const std::string& who, long n, long concurrency, Figures& figures) {
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
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  std::size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

// Two clients in one process, in alternating blocks of n calls (A B, then
// B A, ...), so that the machine's drift, which moves whole runs by tens
// of percent on a shared VM, moves both sides of each pair alike. Prints
// B's throughput and CPU per call over A's, the median of the blocks'
// ratios, with each side's figures per block.
int RunPaired(Side& a, Side& b, long n, long concurrency, long blocks) {
  std::vector<double> throughput_ratio, cpu_ratio, a_rate, b_rate, a_cpu, b_cpu;
  long errors = 0;
  for (long block = 0; block < blocks; ++block) {
    Figures fa, fb;
    if (block % 2 == 0) {
      fa = a.Run(n);
      fb = b.Run(n);
    } else {
      fb = b.Run(n);
      fa = a.Run(n);
    }
    errors += fa.errors + fb.errors;
    a_rate.push_back(static_cast<double>(n) / fa.seconds);
    b_rate.push_back(static_cast<double>(n) / fb.seconds);
    a_cpu.push_back(fa.cpu * 1e6 / static_cast<double>(n));
    b_cpu.push_back(fb.cpu * 1e6 / static_cast<double>(n));
    throughput_ratio.push_back(b_rate.back() / a_rate.back());
    cpu_ratio.push_back(b_cpu.back() / a_cpu.back());
  }
  auto list = [](const std::vector<double>& values) {
    std::string out = "[";
    for (double v : values) out.append(out.size() > 1 ? "," : "").append(std::to_string(v));
    return out + "]";
  };
  std::printf(
      "{\"client\":\"paired\",\"a\":\"%s\",\"b\":\"%s\",\"calls_per_block\":%ld,"
      "\"concurrency\":%ld,\"blocks\":%ld,\"errors\":%ld,"
      "\"throughput_ratio\":%.4f,\"cpu_ratio\":%.4f,"
      "\"a_calls_per_second\":%.1f,\"b_calls_per_second\":%.1f,"
      "\"a_cpu_us_per_call\":%.3f,\"b_cpu_us_per_call\":%.3f,"
      "\"throughput_ratio_each_block\":%s,\"cpu_ratio_each_block\":%s}\n",
      a.who().c_str(), b.who().c_str(), n, concurrency, blocks, errors, Median(throughput_ratio),
      Median(cpu_ratio), Median(a_rate), Median(b_rate), Median(a_cpu), Median(b_cpu),
      list(throughput_ratio).c_str(), list(cpu_ratio).c_str());
  return errors == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--serve") return Serve();
  if (argc < 2) return Usage();
  std::vector<std::string> clients{argv[1]};
  int i = 2;
  if (clients[0] == "paired") {
    if (argc < 4) return Usage();
    clients = {argv[2], argv[3]};
    i = 4;
  }
  Options options;
  long blocks = 0;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    bool has = i + 1 < argc;
    if (a == "-n" && has) {
      options.n = std::atol(argv[++i]);
    } else if (a == "-c" && has) {
      options.concurrency = std::atol(argv[++i]);
    } else if (a == "--target" && has) {
      options.target = argv[++i];
    } else if (a == "--deadline-ms" && has) {
      options.deadline_ms = std::atol(argv[++i]);
    } else if (a == "--no-deadline-checks") {
      options.no_deadline_checks = true;
    } else if (a == "--blocks" && has) {
      blocks = std::atol(argv[++i]);
    } else {
      return Usage();
    }
  }
  if (options.target.empty() || options.n < 1 || options.concurrency < 1) return Usage();
  if (clients.size() == 2) {
    if (blocks < 1) return Usage();
    auto a = Side::Make(clients[0], options);
    auto b = Side::Make(clients[1], options);
    if (!a || !b) return 1;
    return RunPaired(*a, *b, options.n, options.concurrency, blocks);
  }
  auto side = Side::Make(clients[0], options);
  if (!side) return 1;
  Figures figures = side->Run(options.n);
  PrintFigures(clients[0], options.n, options.concurrency, figures);
  return figures.errors == 0 ? 0 : 1;
}
