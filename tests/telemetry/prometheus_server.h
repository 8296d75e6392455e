// SPDX-License-Identifier: Apache-2.0
// A real Prometheus (Debian's `prometheus`) for the tests that prove what an
// operator sees: started on loopback scraping one target every second, and
// asked through its HTTP API. Header-only, test support.
#ifndef OUTBOUND_TESTS_TELEMETRY_PROMETHEUS_SERVER_H_
#define OUTBOUND_TESTS_TELEMETRY_PROMETHEUS_SERVER_H_

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "outbound/http/client.h"

extern char** environ;

namespace outbound::testing {

// A free loopback port, for a server that must be told its port.
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

// Prometheus scraping `target` every second, with its configuration and
// data in a temporary directory; stopped and removed with the object.
class Prometheus {
 public:
  explicit Prometheus(int target_port) : port_(FreePort()) {
    char dir_template[] = "/tmp/outbound-prometheus-XXXXXX";
    dir_ = mkdtemp(dir_template);
    std::ofstream(dir_ / "prometheus.yml")
        << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        << "scrape_configs:\n  - job_name: outbound\n    static_configs:\n"
        << "      - targets: ['127.0.0.1:" << target_port << "']\n";
    std::vector<std::string> args = {
        "/usr/bin/prometheus", "--config.file=" + (dir_ / "prometheus.yml").string(),
        "--storage.tsdb.path=" + (dir_ / "data").string(),
        "--web.listen-address=127.0.0.1:" + std::to_string(port_), "--log.level=warn"};
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    std::string log = (dir_ / "log").string();
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT,
                                     0600);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    int spawned = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0) pid_ = -1;
  }
  ~Prometheus() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    std::filesystem::remove_all(dir_);
  }
  bool started() const { return pid_ > 0; }
  int port() const { return port_; }
  std::string Log() const {
    std::ifstream in(dir_ / "log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  int port_;
  std::filesystem::path dir_;
  pid_t pid_ = -1;
};

std::string UrlEncode(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

// Prometheus's HTTP API, through an HTTP client of our own on real time.
class PrometheusApi {
 public:
  explicit PrometheusApi(int port) {
    http::Settings settings = http::DefaultSettings();
    settings.base_url = "http://127.0.0.1:" + std::to_string(port);
    settings.breaker_policy.trip = [](const circuit::Counts&) { return false; };
    auto client = http::Client::Create(Runtime{}, settings);
    if (client) client_ = std::move(*client);
  }
  bool ready() const { return client_ != nullptr; }

  // The series `promql` selects now, as Prometheus's API returns them.
  nlohmann::json Query(const std::string& promql) {
    auto response = client_->Send(http::Request::Get("/api/v1/query?query=" + UrlEncode(promql)));
    if (!response || response->status != 200) return nlohmann::json::array();
    auto body = nlohmann::json::parse(response->body, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded() || body["status"] != "success") return nlohmann::json::array();
    return body["data"]["result"];
  }

  // Polls until `promql` selects a series (true) or a minute passes.
  bool Eventually(const std::string& promql, nlohmann::json* found = nullptr) {
    for (int i = 0; i < 120; ++i) {
      nlohmann::json result = Query(promql);
      if (!result.empty()) {
        if (found != nullptr) *found = result;
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    return false;
  }

 private:
  std::unique_ptr<http::Client> client_;
};

// What Prometheus's strict reader of a page, `promtool check metrics`, says
// of the one the exposer on `exposer_port` serves: empty when it finds
// nothing wrong.
inline std::string PromtoolProblems(int exposer_port) {
  std::string command =
      "bash -o pipefail -c 'curl -sS --fail http://127.0.0.1:" + std::to_string(exposer_port) +
      "/metrics | promtool check metrics' 2>&1";
  std::string said;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return "cannot run: " + command;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) said.append(buffer, n);
  int status = pclose(pipe);
  if (status != 0 && said.empty()) said = command + ": exit status " + std::to_string(status);
  return said;
}

}  // namespace outbound::testing

#endif  // OUTBOUND_TESTS_TELEMETRY_PROMETHEUS_SERVER_H_
