// SPDX-License-Identifier: Apache-2.0
#include "resolver.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>

namespace outbound::http::internal::transport {

std::optional<SocketAddress> Literal(const std::string& text, std::uint16_t port) {
  SocketAddress a;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&a.storage);
  if (inet_pton(AF_INET, text.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    a.length = sizeof(sockaddr_in);
    return a;
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&a.storage);
  if (inet_pton(AF_INET6, text.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    a.length = sizeof(sockaddr_in6);
    return a;
  }
  return std::nullopt;
}

std::string Text(const SocketAddress& address) {
  char ip[INET6_ADDRSTRLEN] = {};
  const auto* sa = reinterpret_cast<const sockaddr*>(&address.storage);
  if (sa->sa_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address.storage);
    inet_ntop(AF_INET6, &v6->sin6_addr, ip, sizeof ip);
    return "[" + std::string(ip) + "]:" + std::to_string(ntohs(v6->sin6_port));
  }
  const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address.storage);
  inet_ntop(AF_INET, &v4->sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(v4->sin_port));
}

std::vector<SocketAddress> InterleaveFamilies(std::vector<SocketAddress> addresses) {
  auto family = [](const SocketAddress& a) {
    return reinterpret_cast<const sockaddr*>(&a.storage)->sa_family;
  };
  std::vector<SocketAddress> first;
  std::vector<SocketAddress> other;
  for (SocketAddress& a : addresses) {
    (family(a) == family(addresses.front()) ? first : other).push_back(a);
  }
  std::vector<SocketAddress> turns;
  turns.reserve(addresses.size());
  for (std::size_t i = 0; i < first.size() || i < other.size(); ++i) {
    if (i < first.size()) turns.push_back(first[i]);
    if (i < other.size()) turns.push_back(other[i]);
  }
  return turns;
}

Resolver::Resolver() : thread_([this] { Run(); }) {}

Resolver::~Resolver() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Resolver::Resolve(std::string host, std::uint16_t port, Done done) {
  {
    std::lock_guard lock(mu_);
    jobs_.push_back({std::move(host), port, std::move(done)});
  }
  wake_.notify_one();
}

void Resolver::Run() {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      if (stop_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_ADDRCONFIG | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    std::string port = std::to_string(job.port);
    int rc = getaddrinfo(job.host.c_str(), port.c_str(), &hints, &found);
    if (rc != 0 || found == nullptr) {
      job.done({}, std::string("could not resolve ") + job.host + ": " + gai_strerror(rc));
      continue;
    }
    std::vector<SocketAddress> addresses;
    for (addrinfo* at = found; at != nullptr; at = at->ai_next) {
      SocketAddress& a = addresses.emplace_back();
      std::memcpy(&a.storage, at->ai_addr, at->ai_addrlen);
      a.length = at->ai_addrlen;
    }
    freeaddrinfo(found);
    job.done(std::move(addresses), {});
  }
}

}  // namespace outbound::http::internal::transport
