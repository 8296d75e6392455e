// SPDX-License-Identifier: Apache-2.0
// The floor of outbound's transport: libcurl's multi interface used
// directly, as a careful hand-written client would, with nothing on top.
// N GETs, C in flight, HTTP/2 over TLS multiplexed on one connection (or
// HTTP/1.1 for http URLs). Prints one JSON line with the same figures
// `outbound bench --json -` prints, so bench/run compares like with like.
//
//   raw_curl -n 100000 -c 64 [--http1.1] --cacert ca.pem --connect-to h:443:127.0.0.1:8443 URL
#include <curl/curl.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Transfer {
  CURL* easy = nullptr;
  std::chrono::steady_clock::time_point began;
};

size_t Discard(char*, size_t size, size_t n, void*) { return size * n; }

double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  long n = 10000;
  long concurrency = 64;
  std::string cacert, connect_to, url;
  bool http11 = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool has = i + 1 < argc;
    if (a == "-n" && has) {
      n = std::atol(argv[++i]);
    } else if (a == "-c" && has) {
      concurrency = std::atol(argv[++i]);
    } else if (a == "--cacert" && has) {
      cacert = argv[++i];
    } else if (a == "--http1.1") {
      http11 = true;
    } else if (a == "--connect-to" && has) {
      connect_to = argv[++i];
    } else {
      url = a;
    }
  }
  if (url.empty() || n < 1 || concurrency < 1) {
    std::fprintf(stderr,
                 "usage: raw_curl [-n N] [-c C] [--http1.1] [--cacert F] [--connect-to S] URL\n");
    return 2;
  }
  bool https = url.rfind("https:", 0) == 0;
  bool h2 = https && !http11;
  curl_global_init(CURL_GLOBAL_DEFAULT);
  CURLM* multi = curl_multi_init();
  curl_multi_setopt(multi, CURLMOPT_PIPELINING, static_cast<long>(CURLPIPE_MULTIPLEX));
  curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, 100L);
  curl_slist* connect =
      connect_to.empty() ? nullptr : curl_slist_append(nullptr, connect_to.c_str());

  std::vector<Transfer> transfers(static_cast<size_t>(concurrency));
  std::vector<double> latencies;
  latencies.reserve(static_cast<size_t>(n));
  long started = 0, errors = 0;
  auto start = [&](Transfer& t) {
    if (t.easy == nullptr) {
      t.easy = curl_easy_init();
      curl_easy_setopt(t.easy, CURLOPT_URL, url.c_str());
      curl_easy_setopt(t.easy, CURLOPT_WRITEFUNCTION, Discard);
      curl_easy_setopt(t.easy, CURLOPT_NOSIGNAL, 1L);
      curl_easy_setopt(t.easy, CURLOPT_PROXY, "");
      curl_easy_setopt(t.easy, CURLOPT_PRIVATE, &t);
      curl_easy_setopt(t.easy, CURLOPT_HTTP_VERSION,
                       h2 ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1);
      if (h2) curl_easy_setopt(t.easy, CURLOPT_PIPEWAIT, 1L);
      if (!cacert.empty()) curl_easy_setopt(t.easy, CURLOPT_CAINFO, cacert.c_str());
      if (connect) curl_easy_setopt(t.easy, CURLOPT_CONNECT_TO, connect);
    }
    t.began = std::chrono::steady_clock::now();
    curl_multi_add_handle(multi, t.easy);
    ++started;
  };

  double cpu_before = CpuSeconds();
  auto t0 = std::chrono::steady_clock::now();
  // The first transfer alone, so the others find the HTTP/2 connection.
  start(transfers[0]);
  bool warmed = false;
  long finished = 0;
  while (finished < n) {
    int running = 0;
    curl_multi_perform(multi, &running);
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      Transfer* t = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
      long status = 0;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &status);
      if (msg->data.result != CURLE_OK || status >= 400) ++errors;
      latencies.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t->began)
              .count());
      curl_multi_remove_handle(multi, t->easy);
      ++finished;
      if (!warmed) {
        warmed = true;
        for (long i = 1; i < concurrency && started < n; ++i)
          start(transfers[static_cast<size_t>(i)]);
      }
      if (started < n) start(*t);
    }
    if (finished < n) curl_multi_poll(multi, nullptr, 0, 1000, nullptr);
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double cpu = CpuSeconds() - cpu_before;
  std::sort(latencies.begin(), latencies.end());
  auto pct = [&](double p) {
    return latencies[static_cast<size_t>(p * static_cast<double>(latencies.size() - 1))];
  };
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf(
      "{\"calls\":%ld,\"concurrency\":%ld,\"seconds\":%.6f,\"calls_per_second\":%.1f,"
      "\"errors\":%ld,\"latency_ms\":{\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,\"max\":%.3f},"
      "\"cpu_seconds\":%.6f,\"cpu_us_per_call\":%.3f,\"peak_rss_kb\":%ld}\n",
      n, concurrency, seconds, static_cast<double>(n) / seconds, errors, pct(0.5), pct(0.9),
      pct(0.99), latencies.back(), cpu, cpu * 1e6 / static_cast<double>(n), usage.ru_maxrss);
  for (Transfer& t : transfers) {
    if (t.easy) curl_easy_cleanup(t.easy);
  }
  curl_slist_free_all(connect);
  curl_multi_cleanup(multi);
  curl_global_cleanup();
  return errors == 0 ? 0 : 1;
}
