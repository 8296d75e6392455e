// SPDX-License-Identifier: Apache-2.0
//
// The usage examples of outbound::http's headers, compiled: each header
// quotes the region its `// example:` line names (scripts/check-doc-examples).
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <mutex>
#include <optional>

#include "outbound/http/asio.h"
#include "outbound/http/auth.h"
#include "outbound/http/body_pipe.h"
#include "outbound/http/classify.h"
#include "outbound/http/client.h"
#include "outbound/http/json.h"
#include "outbound/http/message.h"
#include "outbound/http/middleware.h"
#include "outbound/http/receive_window.h"
#include "outbound/http/sender.h"
#include "outbound/http/settings.h"

namespace outbound::examples {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using http::Response;

void Use(const std::string& body) { std::cout << body; }
int Failed(ErrorKind kind) { return kind == ErrorKind::kRejected ? 69 : 1; }

std::unique_ptr<http::Client> ClientExample(const std::string& ca_pem) {
  // [example client]
  http::Settings settings = http::DefaultSettings();
  settings.base_url = "https://payments:8443";
  settings.tls = http::TlsSettings{.root_pem = ca_pem};
  auto payments = http::Client::CreateOrThrow(Runtime{}, settings);  // names every bad field
  // [end client]
  return payments;
}

int ClientSendExample(http::Client* payments) {
  // [example client-send]
  auto resp = payments->Send(http::Request::Get("/charges/1"));
  if (!resp) return Failed(resp.error().kind());  // switch on it: outbound/error.h
  if (resp->status == 200) Use(resp->body);
  // [end client-send]
  return 0;
}

void Log(const std::string& line) { std::cerr << line << "\n"; }

void WarmExample(http::Client* payments) {
  // [example warm]
  if (auto warmed = payments->Warm().get(); !warmed) Log(warmed.error().message());
  // [end warm]
}

http::Settings SettingsExample(const std::string& ca_pem) {
  // [example settings]
  http::Settings settings = http::DefaultSettings();
  settings.base_url = "https://payments:8443";
  settings.tls = http::TlsSettings{.root_pem = ca_pem};
  settings.timeout = 3s;
  // [end settings]
  return settings;
}

void MessageExample(http::Client* payments, const std::string& key) {
  // [example message]
  using namespace std::chrono_literals;
  auto list =
      payments->Send(http::Request::Get("/charges")
                         .WithQuery(http::Query().Add("customer", "cus 7").Add("limit", 10))
                         .WithTimeout(300ms));
  auto charge = payments->Send(
      http::Request::Post("/charges", http::Body{R"({"amount":5})", "application/json"})
          .Header("Idempotency-Key", key));  // makes a POST retryable
  auto ok = http::Require2xx(payments->Send(http::Request::Delete("/charges/7")));
  // [end message]
}

std::string QueryExample() {
  // [example query]
  std::string query = http::Query().Add("q", "a&b=c").Add("limit", 10).encoded();
  // query == "q=a%26b%3Dc&limit=10"
  // [end query]
  return query;
}

void FileReaderExample(http::Client* client, const std::string& path) {
  // [example file-reader]
  auto upload = client->Send(
      http::Request::Put("/backups/today.tar")
          .StreamBodyFrom(http::FileReader(path), std::filesystem::file_size(path)));
  // [end file-reader]
}

void StreamBodyToExample(http::Client* client) {
  // [example stream-body-to]
  std::ofstream file("big.tar", std::ios::binary);
  auto got =
      client->Send(http::Request::Get("/big.tar").StreamBodyTo([&](std::string_view chunk) {
        return bool(file.write(chunk.data(), chunk.size()));
      }));
  // [end stream-body-to]
}

void BodySinkErrorExample(http::Client* client) {
  // [example body-sink-error]
  std::string line;  // the line being read
  auto events = client->Send(
      http::Request::Get("/events").StreamBodyTo([&](std::string_view chunk) -> Result<bool> {
        if (chunk.empty()) {  // the end
          if (line.empty()) return true;
          return Fail(ErrorKind::kInvalidResponse, "the events ended inside a line");
        }
        for (char c : chunk) {
          if (c != '\n') {
            line += c;
          } else {
            line.clear();  // a whole line: handed on here
          }
        }
        return true;
      }));
  // [end body-sink-error]
}

void BodyTimeoutExample(http::Client* client, const http::BodySink& write) {
  // [example body-timeout]
  auto got = client->Send(http::Request::Get("/exports/2026.csv")
                              .WithTimeout(2s)  // to the answer's headers
                              .StreamBodyTo(write)
                              .WithBodyTimeout(10min));  // the body, from its headers
  // [end body-timeout]
}

void BodyHeadExample(http::Client* client, const http::BodySink& write) {
  // [example body-head]
  std::optional<std::uint64_t> total;  // for a progress bar
  auto size_it = [&](const http::Response& head) -> Result<void> {
    std::string_view length = head.headers.Find("content-length");
    std::uint64_t n = 0;
    auto [end, error] = std::from_chars(length.data(), length.data() + length.size(), n);
    if (error == std::errc() && end != length.data()) total = n;
    return {};
  };
  auto got =
      client->Send(http::Request::Get("/big.tar").StreamBodyTo(write).OnBodyHead(size_it));
  // [end body-head]
}

void StreamBodyFromExample(http::Client* client) {
  // [example stream-body-from]
  std::string path = "/var/backups/today.tar";
  auto upload = client->Send(
      http::Request::Put("/backups/today.tar")
          .StreamBodyFrom(http::FileReader(path), std::filesystem::file_size(path)));
  // [end stream-body-from]
}

void BodyPipeExample(http::Client* client) {
  // [example body-pipe]
  auto pipe = std::make_shared<http::BodyPipe>();
  auto answer =
      client->SendAsync(http::Request::Post("/chat").StreamBodyFromPipe(pipe).StreamBodyTo(
          [](std::string_view piece) {
            std::cout << piece;  // as it comes
            return true;
          }));
  pipe->Write("hello");  // false once the exchange has ended
  pipe->Close();         // the body ends; the answer's end follows
  Result<Response> response = answer.get();
  // [end body-pipe]
}

// A hand-over from a sink to a reader thread, as an application has one.
class Inbox {
 public:
  // Queues a piece; the bytes now waiting.
  std::size_t Push(std::string_view piece) {
    std::lock_guard lock(mu_);
    waiting_ += piece;
    changed_.notify_all();
    return waiting_.size();
  }
  // No more pieces will come.
  void Close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    changed_.notify_all();
  }
  // What waits, once something does; nullopt once closed and empty.
  std::optional<std::string> Pop() {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [this] { return !waiting_.empty() || closed_; });
    if (waiting_.empty()) return std::nullopt;
    return std::exchange(waiting_, {});
  }
  std::size_t bytes() {
    std::lock_guard lock(mu_);
    return waiting_.size();
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::string waiting_;
  bool closed_ = false;
};

void ReceiveWindowExample(http::Client* client, Inbox& inbox) {
  constexpr std::size_t kReadAhead = 1 << 20;
  // [example receive-window]
  auto window = std::make_shared<http::ReceiveWindow>();
  client->SendAsync(http::Request::Get("/feed").StreamBodyTo(
                        [&](std::string_view piece) {
                          if (inbox.Push(piece) > kReadAhead) window->Hold();  // reader behind
                          return true;
                        },
                        window),
                    [&](Result<Response>, std::exception_ptr) { inbox.Close(); });
  while (std::optional<std::string> piece = inbox.Pop()) {  // the reader's thread
    if (inbox.bytes() < kReadAhead / 2) window->Open();
    Use(*piece);
  }
  // [end receive-window]
}

void ResponseHeadersExample(const Response& response) {
  // [example response-headers]
  std::string_view type = response.headers.Find("Content-Type");
  for (const auto& [name, value] : response.headers) std::cout << name << ": " << value << "\n";
  // [end response-headers]
  std::cout << type;
}

Result<Response> Require2xxExample(http::Client* payments, const http::Request& request) {
  // [example require-2xx]
  Result<Response> charge = http::Require2xx(payments->Send(request));
  // [end require-2xx]
  return charge;
}

void ClassifyExample(http::Settings& settings) {
  // [example classify]
  settings.classify = [](const Result<http::Response>& result) {
    if (result && result->status == 409) {  // another write is in flight
      return http::Classification{retry::Outcome::kRetry, {}, circuit::Outcome::kSuccess};
    }
    return http::DefaultClassify(result);
  };
  // [end classify]
}

void RoutesExample(http::Settings& settings) {
  // [example routes]
  settings.routes = {
      {.path_prefix = "/v1/reports", .timeout = 30s, .max_attempts = 1},
      {.path_prefix = "/v1/search", .attempt_timeout = 200ms},
  };
  // [end routes]
}

void ClassifySentExample(http::Settings& settings) {
  // [example classify-sent]
  settings.classify = [](const http::SentRequest& sent, const Result<http::Response>& result) {
    if (sent.method == "DELETE" && result && result->status == 404) {
      return http::Classification{};  // gone already: a success
    }
    return http::DefaultClassify(result);
  };
  // [end classify-sent]
}

std::string Sign(std::string_view method, std::string_view url, std::string_view body) {
  return std::to_string(method.size() + url.size() + body.size());
}

void MiddlewareExample(http::Settings& settings) {
  // [example middleware]
  class Signer final : public http::AttemptMiddleware {
    std::optional<Result<Response>> OnRequest(http::OutgoingRequest& r,
                                              const http::AttemptInfo&) override {
      r.SetHeader("X-Signature", Sign(r.method(), r.url(), r.body()));
      return std::nullopt;
    }
  };
  settings.attempt_middleware.push_back(std::make_shared<Signer>());
  // [end middleware]
}

struct Vault {
  std::string Current() { return "token"; }
  std::string Renew() { return "token2"; }
};

void AuthExample(http::Settings& settings, Vault& vault) {
  // [example auth]
  settings.attempt_middleware.push_back(http::WithBearerToken(
      [&vault](bool refresh) { return refresh ? vault.Renew() : vault.Current(); }));
  // [end auth]
}

// [example sender]
class Checkout {
 public:
  explicit Checkout(std::unique_ptr<http::Sender> payments);  // a Client in main
};
// [end sender]

Checkout::Checkout(std::unique_ptr<http::Sender> payments) { payments.reset(); }

Result<nlohmann::json> JsonExample(http::Client* payments, const std::string& key) {
  // [example json]
  auto created = payments->Send(
      http::Request::Post("/charges", http::Json({{"amount", 500}, {"currency", "eur"}}))
          .Header("Idempotency-Key", key));
  Result<nlohmann::json> charge = http::ReadJson(http::Require2xx(std::move(created)));
  // [end json]
  return charge;
}

// [example asio]
asio::awaitable<void> Charge(http::Sender& payments) {
  http::Request request = http::Request::Get("/charges/1");
  outbound::Result<http::Response> sent =
      co_await http::AsyncSend(payments, std::move(request), asio::use_awaitable);
  // ...
}
// [end asio]

}  // namespace outbound::examples
