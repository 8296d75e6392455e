// SPDX-License-Identifier: Apache-2.0
// A real Prometheus (Debian's `prometheus`) scrapes a client's metrics while
// the test drives an outage, and the test asks Prometheus's HTTP API the
// questions an operator's alerts ask. This proves the names, the labels and
// the exposition format, not only our reading of them.
//
// The payments client runs on a ManualClock; Prometheus runs in real time,
// so the test polls Prometheus (for a minute at most) until a scrape has
// seen each state. Nothing is asserted about how long that takes.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "../http/client_test_support.h"
#include "outbound/telemetry/metric_store.h"
#include "outbound/telemetry/prometheus.h"

extern char** environ;

namespace outbound::telemetry {
namespace {

using http::Request;
using outbound::testing::Reply;
using std::chrono::seconds;

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

class PrometheusScrapeTest : public http::ClientTestBase, public ::testing::Test {
 protected:
  PrometheusScrapeTest() { runtime.telemetry.meters = &metrics; }

  // The series `promql` selects now, as Prometheus's API returns them.
  nlohmann::json Query(http::Client& api, const std::string& promql) {
    auto response = api.Send(Request::Get("/api/v1/query?query=" + UrlEncode(promql)));
    if (!response || response->status != 200) return nlohmann::json::array();
    auto body = nlohmann::json::parse(response->body, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded() || body["status"] != "success") return nlohmann::json::array();
    return body["data"]["result"];
  }

  // Polls until `promql` selects a series (true) or a minute passes.
  bool Eventually(http::Client& api, const std::string& promql, nlohmann::json* found = nullptr) {
    for (int i = 0; i < 120; ++i) {
      nlohmann::json result = Query(api, promql);
      if (!result.empty()) {
        if (found != nullptr) *found = result;
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    return false;
  }

  MetricStore metrics;
};

TEST_F(PrometheusScrapeTest, PrometheusSeesTheBreakerOpenAndTheOpeningAfterItClosed) {
  std::atomic<bool> healthy{false};
  Serve([&](const outbound::testing::ServerRequest&) {
    return healthy ? Reply::Ok() : Reply::Status(500);
  });
  auto exposer = PrometheusExposer::Start(metrics, "127.0.0.1:0");
  ASSERT_TRUE(exposer) << exposer.error().message();
  Prometheus prometheus((*exposer)->port());
  ASSERT_TRUE(prometheus.started()) << "cannot start /usr/bin/prometheus";
  auto payments = MakeClient();

  // Prometheus's API, through a client of our own on real time.
  http::Settings api_settings = http::DefaultSettings();
  api_settings.base_url = "http://127.0.0.1:" + std::to_string(prometheus.port());
  api_settings.breaker_policy.trip = [](const circuit::Counts&) { return false; };
  auto api = http::Client::Create(Runtime{}, api_settings);
  ASSERT_TRUE(api);

  // A scrape before the outage: the transitions counter is there, at 0.
  ASSERT_TRUE(Eventually(**api, R"(outbound_circuit_transitions_total{state="open"} == 0)"))
      << prometheus.Log();

  for (int i = 0; i < 5; ++i) ASSERT_TRUE(payments->Send(Request::Get("/")));
  ASSERT_EQ(payments->breaker_state(), circuit::State::kOpen);
  nlohmann::json open;
  ASSERT_TRUE(Eventually(**api, R"(outbound_circuit_state{state="open"} > 0)", &open))
      << prometheus.Log();
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0]["metric"]["server_address"], "payments");
  EXPECT_EQ(open[0]["metric"]["server_port"], "8443");
  EXPECT_EQ(open[0]["metric"]["job"], "outbound");

  healthy = true;
  clock.Advance(seconds(10));  // OpenFor
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(payments->Send(Request::Get("/")));
  ASSERT_EQ(payments->breaker_state(), circuit::State::kClosed);
  ASSERT_TRUE(Eventually(**api, R"(outbound_circuit_state{state="closed"} > 0)"));
  EXPECT_TRUE(Query(**api, R"(outbound_circuit_state{state="open"} > 0)").empty());
  // The alert on breakers that opened, however briefly, still fires.
  EXPECT_TRUE(
      Eventually(**api, R"(increase(outbound_circuit_transitions_total{state="open"}[5m]) > 0)"));
  EXPECT_FALSE(Query(**api, R"(outbound_circuit_calls_total{outcome="failure"} == 5)").empty());
  EXPECT_FALSE(
      Query(**api,
            R"(http_client_request_duration_seconds_count{http_response_status_code="500"} == 5)")
          .empty());
}

}  // namespace
}  // namespace outbound::telemetry
