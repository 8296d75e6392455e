// SPDX-License-Identifier: Apache-2.0
#include "nginx_peer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "outbound/clock.h"

extern char** environ;

namespace outbound::peers {
namespace {

// A port free on 127.0.0.1 now (nginx cannot listen on port 0 and say
// which it got; loopback ports are not contended here).
std::uint16_t FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    if (fd >= 0) close(fd);
    throw std::runtime_error(std::string("no free port: ") + std::strerror(errno));
  }
  close(fd);
  return ntohs(address.sin_port);
}

bool Accepts(std::uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  close(fd);
  return ok;
}

}  // namespace

std::string NginxText() {
  std::string text;
  for (int line = 1; text.size() < 64 * 1024; ++line) {
    text += "line " + std::to_string(line) + ": the quick brown fox jumps over the lazy dog\n";
  }
  return text;
}

NginxPeer::NginxPeer(const PeerFiles& files, NginxOptions options) {
  std::string pattern = (std::filesystem::temp_directory_path() / "outbound-nginx-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = pattern;
  // Zeros, in a sparse file: a test's own memory holds none of it.
  WriteFile(dir_ + "/big", "");
  std::filesystem::resize_file(dir_ + "/big", options.big_bytes);
  WriteFile(dir_ + "/text", NginxText());
  port_ = FreePort();
  std::ostringstream conf;
  // One process in the foreground, everything in dir_: a test's nginx
  // touches nothing of the machine's.
  conf << "load_module /usr/lib/nginx/modules/ngx_http_echo_module.so;\n"
       << "daemon off;\nmaster_process off;\nworker_processes 1;\n"
       << "pid " << dir_ << "/nginx.pid;\nerror_log " << dir_ << "/error.log;\n"
       << "events { worker_connections 1024; }\n"
       << "http {\n"
       << "  log_format outbound '$connection $request_method $uri \"$request_body\" $status "
          "$ssl_session_reused';\n"
       << "  access_log " << dir_ << "/access.log outbound;\n"
       << "  client_body_temp_path " << dir_ << "/body;\n"
       << "  proxy_temp_path " << dir_ << "/proxy;\n  fastcgi_temp_path " << dir_ << "/fastcgi;\n"
       << "  uwsgi_temp_path " << dir_ << "/uwsgi;\n  scgi_temp_path " << dir_ << "/scgi;\n"
       << "  keepalive_requests " << options.keepalive_requests << ";\n"
       << "  http2_max_concurrent_streams " << options.max_concurrent_streams << ";\n"
       << "  server {\n"
       << "    listen 127.0.0.1:" << port_ << " ssl" << (options.http2 ? " http2" : "") << ";\n"
       << "    ssl_certificate " << files.cert_file() << ";\n"
       << "    ssl_certificate_key " << files.key_file() << ";\n"
       << (options.tls_protocols.empty() ? ""
                                         : "    ssl_protocols " + options.tls_protocols + ";\n")
       << "    root " << dir_ << ";\n"
       << "    location = / { return 200 \"ok\"; }\n"
       << "    location = /echo { client_body_buffer_size 64k; echo_read_request_body;"
       << " echo -n $request_body; }\n"
       << "    location = /big { default_type application/octet-stream; }\n"
       << "    location = /small-upload { client_max_body_size 1k; echo_read_request_body;"
       << " echo -n stored; }\n"
       << "    location = /text { default_type text/plain; gzip on; gzip_types text/plain; }\n"
       // nginx's documented gRPC error page (its grpc module's docs), a
       // proxy's HTML page where a gRPC service should be, and a gRPC proxy
       // whose upstream refuses it (port 1: nothing listens), which answers
       // with nginx's own 502 page.
       << "    location /peer.Down/ { default_type application/grpc; add_header grpc-status 14;"
       << " add_header grpc-message unavailable; return 204; }\n"
       << "    location /peer.Html/ { default_type text/html;"
       << " return 200 \"<html>upstream down</html>\"; }\n"
       << "    location /peer.Gone/ { grpc_pass grpc://127.0.0.1:1; }\n"
       << "  }\n}\n";
  WriteFile(dir_ + "/nginx.conf", conf.str());

  std::string nginx = "/usr/sbin/nginx";
  std::vector<std::string> argv_strings = {
      nginx, "-p", dir_, "-c", dir_ + "/nginx.conf", "-e", dir_ + "/error.log"};
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
  int spawned = posix_spawn(&pid_, nginx.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    pid_ = -1;
    Stop();
    throw std::runtime_error("cannot start " + nginx +
                             " (Debian package nginx-light): " + std::strerror(spawned));
  }
  TimePoint give_up = SystemClock().Now() + std::chrono::seconds(10);
  while (!Accepts(port_)) {
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_ || SystemClock().Now() > give_up) {
      std::ifstream log(dir_ + "/error.log");
      std::string errors((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
      pid_ = -1;
      Stop();
      throw std::runtime_error("nginx did not start: " + errors);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

NginxPeer::~NginxPeer() { Stop(); }

void NginxPeer::Stop() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    int status;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  std::error_code ignored;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
}

std::vector<NginxRequest> NginxPeer::ReadLog() const {
  std::vector<NginxRequest> requests;
  std::ifstream log(dir_ + "/access.log");
  std::string line;
  while (std::getline(log, line)) {
    NginxRequest request;
    std::istringstream fields(line);
    fields >> request.connection >> request.method >> request.uri;
    std::size_t open = line.find('"'), close = line.rfind('"');
    if (open != std::string::npos && close > open) {
      request.body = line.substr(open + 1, close - open - 1);
      std::istringstream after(line.substr(close + 1));
      std::string reused;
      after >> request.status >> reused;
      request.tls_resumed = reused == "r";
    }
    requests.push_back(std::move(request));
  }
  return requests;
}

std::vector<NginxRequest> NginxPeer::WaitForRequests(std::size_t count,
                                                     std::chrono::seconds limit) {
  TimePoint give_up = SystemClock().Now() + limit;
  std::vector<NginxRequest> seen = ReadLog();
  while (SystemClock().Now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::vector<NginxRequest> now = ReadLog();
    if (now.size() >= count && now.size() == seen.size()) return now;
    seen = std::move(now);
  }
  return seen;
}

}  // namespace outbound::peers
