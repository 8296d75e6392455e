// SPDX-License-Identifier: Apache-2.0
// Read-side flow control through the client (Request::StreamBodyTo(sink,
// window)), over HTTP/2 and HTTP/1.1 on a real FakeServer: a sink that
// hands the body to a reader on another thread, holding the window while
// the reader is behind, gets the whole body in order, and while held is
// given no more than the protocol had already let the server send (the
// stream's window on HTTP/2, the read in hand on HTTP/1.1). The exact
// HTTP/2 bound is shown in memory (h2_receive_window_test.cc).
#include "outbound/http/receive_window.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "../../src/http/transport/h2_session.h"
#include "client_test_support.h"

namespace outbound::http {
namespace {

using testing::Reply;
using testing::ServerRequest;

// Bytes the sink lets wait for the reader before it holds the window.
constexpr std::size_t kReadAhead = 256 * 1024;

// The hand-over between the client's loop (the sink) and the test's
// thread (the reader).
class Inbox {
 public:
  explicit Inbox(std::shared_ptr<ReceiveWindow> window) : window_(std::move(window)) {}

  BodySink Sink() {
    return [this](std::string_view piece) {
      std::lock_guard lock(mu_);
      if (piece.empty()) return true;  // the end: the call's future says so
      if (window_->held()) {
        given_while_held_ += piece.size();
        most_given_while_held_ = std::max(most_given_while_held_, given_while_held_);
      } else {
        given_while_held_ = 0;
      }
      waiting_ += piece;
      if (waiting_.size() > kReadAhead) {
        window_->Hold();
        ++holds_;
      }
      changed_.notify_all();
      return true;
    };
  }

  // Takes what waits (none: the call has ended), opening the window.
  template <typename Call>
  bool Read(std::string& into, const Call& call) {
    std::unique_lock lock(mu_);
    while (waiting_.empty()) {
      if (call.wait_for(std::chrono::seconds(0)) == std::future_status::ready) return false;
      changed_.wait_for(lock, std::chrono::milliseconds(1));
    }
    into += waiting_;
    waiting_.clear();
    lock.unlock();
    window_->Open();
    return true;
  }

  // Until the sink has held the window once (a safety net of 10 s real
  // time), so the reader starts behind.
  void WaitForHold() {
    std::unique_lock lock(mu_);
    changed_.wait_for(lock, std::chrono::seconds(10), [this] { return holds_ > 0; });
  }

  std::size_t most_given_while_held() const {
    std::lock_guard lock(mu_);
    return most_given_while_held_;
  }
  int holds() const {
    std::lock_guard lock(mu_);
    return holds_;
  }

 private:
  std::shared_ptr<ReceiveWindow> window_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::string waiting_;
  std::size_t given_while_held_ = 0;
  std::size_t most_given_while_held_ = 0;
  int holds_ = 0;
};

std::string Pattern(std::size_t size) {
  std::string text(size, ' ');
  for (std::size_t i = 0; i < size; ++i) text[i] = static_cast<char>('a' + i % 26);
  return text;
}

class ReceiveWindowTest : public ClientTestBase, public ::testing::TestWithParam<Protocol> {};

TEST_P(ReceiveWindowTest, AReaderBehindGetsTheWholeBodyAndIsGivenNoMoreThanTheProtocolAllowed) {
  const std::string body = Pattern(std::size_t{8} << 20);
  Serve([&](const ServerRequest&) { return Reply::Ok(body); }, GetParam());
  auto client = MakeClient();
  auto window = std::make_shared<ReceiveWindow>();
  Inbox inbox(window);
  auto call = client->SendAsync(Request::Get("/feed").StreamBodyTo(inbox.Sink(), window));
  inbox.WaitForHold();
  std::string read;
  while (inbox.Read(read, call)) {
  }
  EXPECT_GT(inbox.holds(), 0) << "the reader was never behind: nothing was held";
  auto result = call.get();
  ASSERT_TRUE(result) << result.error().message();
  EXPECT_EQ(read.size(), body.size());
  EXPECT_TRUE(read == body) << "the body came out of order";
  // HTTP/2: what the server may send past the last acknowledgement; HTTP/1.1:
  // what one read takes (16 KiB), and one read more from TLS's buffer.
  std::size_t allowed = GetParam() == Protocol::kHttp2
                            ? static_cast<std::size_t>(internal::transport::kStreamWindow)
                            : std::size_t{32} * 1024;
  EXPECT_LE(inbox.most_given_while_held(), allowed);
  EXPECT_EQ(window->held(), false);
}

TEST_P(ReceiveWindowTest, AHeldWindowDoesNotStopTheCallsDeadline) {
  const std::string body = Pattern(std::size_t{8} << 20);
  Serve([&](const ServerRequest&) { return Reply::Ok(body); }, GetParam());
  auto client = MakeClient();
  auto window = std::make_shared<ReceiveWindow>();
  std::atomic<std::size_t> given{0};
  auto call = client->SendAsync(Request::Get("/feed").StreamBodyTo(
      [&](std::string_view piece) {
        given += piece.size();
        window->Hold();  // a reader that never catches up
        return true;
      },
      window));
  // Until the sink has held the window (a safety net of 10 s real time).
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (given.load() == 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  clock.Advance(std::chrono::seconds(10));  // the call's Timeout
  auto result = call.get();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind(), ErrorKind::kDeadline) << result.error().message();
  EXPECT_LT(given.load(), body.size());
}

// A window paces a sink: without one it is a mistake, said before anything
// is sent; and a sink given again without a window drops the old one.
TEST_P(ReceiveWindowTest, AWindowWithoutASinkIsRefusedBeforeAnythingIsSent) {
  Serve([](const ServerRequest&) { return Reply::Ok("body"); }, GetParam());
  auto client = MakeClient();
  Request request = Request::Get("/feed");
  request.receive_window = std::make_shared<ReceiveWindow>();
  auto refused = client->Send(request);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind(), ErrorKind::kInvalidRequest);
  EXPECT_NE(refused.error().message().find("ReceiveWindow"), std::string::npos)
      << refused.error().message();
  EXPECT_EQ(server->request_count(), 0u);
  auto window = std::make_shared<ReceiveWindow>();
  auto sink = [](std::string_view) { return true; };
  Request again = Request::Get("/feed").StreamBodyTo(sink, window).StreamBodyTo(sink);
  EXPECT_EQ(again.receive_window, nullptr);
  EXPECT_TRUE(client->Send(again));
}

INSTANTIATE_TEST_SUITE_P(Protocols, ReceiveWindowTest,
                         ::testing::Values(Protocol::kHttp2, Protocol::kHttp11), ProtocolName);

}  // namespace
}  // namespace outbound::http
