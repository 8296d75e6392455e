// SPDX-License-Identifier: Apache-2.0
// The HTTP/2 codec against nghttp2's own server session in memory, so "the
// server sent all it was allowed" is a fact of the exchange, not a wait.
// Read-side flow control (ReceiveWindow): while a stream's reader is
// behind, the server is sent no WINDOW_UPDATE for it and stops at the
// stream's window; once the reader catches up the rest flows whole; and a
// held stream never holds up the connection's other streams. The flood
// bound: frames that carry nothing end the connection when they come in a
// run, never when they come seconds apart for hours.
#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../../src/http/receive_window_link.h"
#include "../../src/http/transport/h2_session.h"
#include "outbound/testing/manual_clock.h"

namespace outbound::http::internal::transport {
namespace {

// The server: answers each request on "/<n>" with 200 and n bytes of
// 'a'..'z', and counts what it sent.
class MemoryServer {
 public:
  MemoryServer() {
    nghttp2_session_callbacks* callbacks = nullptr;
    nghttp2_session_callbacks_new(&callbacks);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, OnHeader);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, OnFrame);
    nghttp2_session_server_new(&session_, callbacks, this);
    nghttp2_session_callbacks_del(callbacks);
    nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100}};
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, 1);
  }
  ~MemoryServer() { nghttp2_session_del(session_); }

  void Received(const std::string& bytes) {
    ASSERT_EQ(nghttp2_session_mem_recv(
                  session_, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()),
              static_cast<ssize_t>(bytes.size()));
  }
  std::string Produce() {
    std::string out;
    for (;;) {
      const std::uint8_t* chunk = nullptr;
      ssize_t n = nghttp2_session_mem_send(session_, &chunk);
      if (n <= 0) break;
      out.append(reinterpret_cast<const char*>(chunk), static_cast<std::size_t>(n));
    }
    return out;
  }
  // Queues a PING (sent by the next Produce).
  void Ping() { ASSERT_EQ(nghttp2_submit_ping(session_, NGHTTP2_FLAG_NONE, nullptr), 0); }
  // Body bytes sent on `path`'s stream so far.
  std::size_t sent(const std::string& path) const {
    for (const auto& [id, body] : bodies_) {
      if (body.path == path) return body.offset;
    }
    return 0;
  }

 private:
  struct Body {
    std::string path;
    std::size_t size = 0;
    std::size_t offset = 0;
  };

  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                      std::size_t namelen, const std::uint8_t* value, std::size_t valuelen,
                      std::uint8_t, void* user) {
    auto& self = *static_cast<MemoryServer*>(user);
    if (std::string_view(reinterpret_cast<const char*>(name), namelen) == ":path") {
      self.bodies_[frame->hd.stream_id].path.assign(reinterpret_cast<const char*>(value), valuelen);
    }
    return 0;
  }

  static int OnFrame(nghttp2_session* session, const nghttp2_frame* frame, void* user) {
    auto& self = *static_cast<MemoryServer*>(user);
    if (frame->hd.type != NGHTTP2_HEADERS || !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) return 0;
    Body& body = self.bodies_[frame->hd.stream_id];
    body.size = std::stoul(body.path.substr(1));
    nghttp2_nv status{const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>(":status")),
                      const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>("200")), 7, 3,
                      NGHTTP2_NV_FLAG_NONE};
    nghttp2_data_provider provider{};
    provider.read_callback = Read;
    nghttp2_submit_response(session, frame->hd.stream_id, &status, 1, &provider);
    return 0;
  }

  static ssize_t Read(nghttp2_session*, std::int32_t stream_id, std::uint8_t* buf,
                      std::size_t length, std::uint32_t* flags, nghttp2_data_source*, void* user) {
    Body& body = static_cast<MemoryServer*>(user)->bodies_[stream_id];
    std::size_t n = std::min(length, body.size - body.offset);
    for (std::size_t i = 0; i < n; ++i)
      buf[i] = static_cast<std::uint8_t>('a' + (body.offset + i) % 26);
    body.offset += n;
    if (body.offset == body.size) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
  }

  nghttp2_session* session_ = nullptr;
  std::map<std::int32_t, Body> bodies_;
};

// What the layers above would hear: nothing the codec needs answered.
class QuietEvents final : public ExchangeEvents {
 public:
  bool Launch() override { return true; }
  bool SetCanceller(std::function<void()>) override { return true; }
  bool Sent(TimePoint) override { return true; }
  void RequestBodySent(TimePoint) override {}
  void RequestHeadersSent(TimePoint) override {}
  void HeadersArrived(TimePoint) override {}
  void BodyStreaming(TimePoint) override {}
  bool End(AttemptOutcome&&) override { return true; }
  AttemptOutcome CancelledOutcome() const override { return {}; }
};

// One GET whose answer streams to a sink that keeps it, with its window.
struct Download {
  static constexpr std::string_view kOrigin = "https://bench.test";
  explicit Download(std::string path) {
    request.method = "GET";
    request.url = std::string(kOrigin) + path;
    exchange.events = std::make_shared<QuietEvents>();
    exchange.request = &request;
    exchange.attempt_headers = &no_headers;
    exchange.authority = &authority;
    exchange.path = std::string_view(request.url).substr(kOrigin.size());  // a view, as the pool's
    exchange.max_body = SIZE_MAX;
    exchange.max_error_body = SIZE_MAX;
    exchange.sink = &sink;
    exchange.window = &window;
  }
  CallRequest request;
  AttemptFields no_headers;
  std::string authority = "bench.test";
  std::string body;
  BodySink sink = [this](std::string_view piece) {
    body.append(piece);
    return true;
  };
  ReceiveWindow window;
  Exchange exchange;
  std::optional<AttemptOutcome> outcome;
};

class H2ReceiveWindowTest : public ::testing::Test, public CodecEvents {
 protected:
  void ExchangeEnded(Exchange& exchange, AttemptOutcome&& outcome) override {
    for (Download* d : downloads_) {
      if (&d->exchange == &exchange) d->outcome = std::move(outcome);
    }
  }
  void RoomChanged() override {}

  // Moves bytes both ways until neither end has any to send.
  void Settle() {
    for (;;) {
      std::string to_server;
      ASSERT_TRUE(client_.Produce(to_server));
      if (!to_server.empty()) server_.Received(to_server);
      std::string to_client = server_.Produce();
      if (!to_client.empty()) {
        ASSERT_TRUE(client_.Received(reinterpret_cast<const std::uint8_t*>(to_client.data()),
                                     to_client.size()));
      }
      if (to_server.empty() && to_client.empty()) return;
    }
  }

  void Start(Download& d) {
    downloads_.push_back(&d);
    ASSERT_TRUE(client_.Start(d.exchange));
  }

  // The 'a'..'z' body of `size` bytes the server sends.
  static std::string Expected(std::size_t size) {
    std::string text(size, ' ');
    for (std::size_t i = 0; i < size; ++i) text[i] = static_cast<char>('a' + i % 26);
    return text;
  }

  void SetUp() override { Settle(); }  // SETTINGS both ways: the client takes streams

  testing::ManualClock clock_;
  MemoryServer server_;
  H2Session client_{*this, 1, clock_};
  std::vector<Download*> downloads_;
};

constexpr std::size_t kBig = std::size_t{8} << 20;
const std::string kBigPath = "/" + std::to_string(kBig);

TEST_F(H2ReceiveWindowTest, AHeldStreamIsSentItsWindowAndNoMoreUntilItOpens) {
  Download d(kBigPath);
  d.window.Hold();
  Start(d);
  Settle();
  // Everything the server may send has arrived, and it may send no more.
  EXPECT_EQ(server_.sent(kBigPath), static_cast<std::size_t>(kStreamWindow));
  EXPECT_EQ(d.body.size(), static_cast<std::size_t>(kStreamWindow));
  EXPECT_FALSE(d.outcome.has_value());

  d.window.Open();
  client_.Resume(d.exchange);
  Settle();
  ASSERT_TRUE(d.outcome.has_value());
  ASSERT_TRUE(d.outcome->result.has_value()) << d.outcome->result.error().message();
  EXPECT_EQ(d.body, Expected(kBig));
}

TEST_F(H2ReceiveWindowTest, AStreamHeldAgainAfterOpeningStopsAgain) {
  Download d(kBigPath);
  d.window.Hold();
  Start(d);
  Settle();
  d.window.Open();
  client_.Resume(d.exchange);
  d.window.Hold();  // at once: the WINDOW_UPDATE for the first window still goes
  Settle();
  EXPECT_EQ(server_.sent(kBigPath), 2 * static_cast<std::size_t>(kStreamWindow));
  EXPECT_FALSE(d.outcome.has_value());

  d.window.Open();
  client_.Resume(d.exchange);
  Settle();
  ASSERT_TRUE(d.outcome.has_value());
  EXPECT_EQ(d.body, Expected(kBig));
}

TEST_F(H2ReceiveWindowTest, AResumeWhileStillHeldAcknowledgesNothing) {
  Download d(kBigPath);
  d.window.Hold();
  Start(d);
  Settle();
  client_.Resume(d.exchange);  // a wake from an earlier Open, arriving late
  Settle();
  EXPECT_EQ(server_.sent(kBigPath), static_cast<std::size_t>(kStreamWindow));
}

TEST_F(H2ReceiveWindowTest, HeldStreamsDoNotHoldUpTheConnectionsOtherStreams) {
  // Ten held streams hold 10 MiB back, more than half the connection's
  // window (nghttp2 acknowledges the connection at half), and more than
  // the connection's window goes to the open stream: it finishes only if
  // the held streams' bytes were acknowledged for the connection, and its
  // own were.
  constexpr int kHeld = 10;
  std::vector<std::unique_ptr<Download>> held;
  for (int i = 0; i < kHeld; ++i) {
    held.push_back(std::make_unique<Download>("/" + std::to_string(kBig + i)));
    held.back()->window.Hold();
    Start(*held.back());
  }
  const std::size_t more_than_the_connection = 2 * static_cast<std::size_t>(kConnectionWindow);
  const std::string open_path = "/" + std::to_string(more_than_the_connection);
  Download flowing(open_path);
  Start(flowing);
  Settle();
  ASSERT_TRUE(flowing.outcome.has_value());
  ASSERT_TRUE(flowing.outcome->result.has_value()) << flowing.outcome->result.error().message();
  EXPECT_EQ(flowing.body, Expected(more_than_the_connection));
  for (int i = 0; i < kHeld; ++i) {
    EXPECT_EQ(server_.sent("/" + std::to_string(kBig + i)),
              static_cast<std::size_t>(kStreamWindow));
    EXPECT_FALSE(held[i]->outcome.has_value());
  }
}

// Each answer's last DATA frame (END_STREAM) is acknowledged on the
// connection alone: answers whose bodies add up to more than the
// connection's window, each in one frame, all arrive.
TEST_F(H2ReceiveWindowTest, LastFramesAddUpPastTheConnectionsWindowAndStillFlow) {
  constexpr std::size_t kFrame = 16 * 1024;  // one DATA frame: nghttp2's default largest
  const std::size_t answers = 2 * static_cast<std::size_t>(kConnectionWindow) / kFrame;
  for (std::size_t i = 0; i < answers; ++i) {
    Download d("/" + std::to_string(kFrame));
    Start(d);
    Settle();
    ASSERT_TRUE(d.outcome.has_value()) << "answer " << i << " never ended";
    ASSERT_EQ(d.body.size(), kFrame);
    downloads_.clear();
  }
}

// Body bytes in flight for a stream the client has cancelled count as read
// (nghttp2 drops them once the reset is queued; the session acknowledges
// any it is handed): streams cancelled with more than the connection's
// window in flight leave the connection open to the next one.
TEST_F(H2ReceiveWindowTest, BytesOfCancelledStreamsAreAcknowledgedForTheConnection) {
  const int cancelled = 2 * kConnectionWindow / kStreamWindow;
  for (int i = 0; i < cancelled; ++i) {
    Download d(kBigPath);
    Start(d);
    std::string to_server;
    ASSERT_TRUE(client_.Produce(to_server));
    server_.Received(to_server);
    std::string in_flight = server_.Produce();  // the stream's window of body
    ASSERT_TRUE(client_.Cancel(d.exchange));
    // Read before the reset goes out: the stream is still open, its bytes
    // no longer the exchange's.
    ASSERT_TRUE(client_.Received(reinterpret_cast<const std::uint8_t*>(in_flight.data()),
                                 in_flight.size()));
    Settle();
    downloads_.clear();
  }
  Download next("/1000");
  Start(next);
  Settle();
  ASSERT_TRUE(next.outcome.has_value());
  EXPECT_EQ(next.body, Expected(1000));
}

TEST_F(H2ReceiveWindowTest, AStreamWithNoWindowIsAcknowledgedAsItArrives) {
  Download d(kBigPath);
  d.exchange.window = nullptr;
  Start(d);
  Settle();
  ASSERT_TRUE(d.outcome.has_value());
  EXPECT_EQ(d.body, Expected(kBig));
}

// The window wakes the exchange carrying its call's latest attempt: an
// earlier attempt that ends after the next one began (its cancel still on
// the loop's queue) leaves the next one's wake alone.
TEST(WindowLinkTest, AnEarlierAttemptsEndLeavesTheNextAttemptsWake) {
  ReceiveWindow window;
  int first = 0;
  int second = 0;
  WindowLink::Attach(window, 1, [&] { ++first; });
  WindowLink::Attach(window, 2, [&] { ++second; });
  WindowLink::Detach(window, 1);
  window.Hold();
  window.Open();
  EXPECT_EQ(first, 0);
  EXPECT_EQ(second, 1);
  window.Open();  // open already: no wake
  EXPECT_EQ(second, 1);
  WindowLink::Detach(window, 2);
  window.Hold();
  window.Open();
  EXPECT_EQ(second, 1);
}

// --- The flood bound ---

class H2FloodBoundTest : public H2ReceiveWindowTest {
 protected:
  // `pings` PINGs, each read on its own, `apart` after the one before it on
  // the client's clock. False once the client has ended the connection.
  bool PingsApart(int pings, Duration apart) {
    for (int i = 0; i < pings; ++i) {
      clock_.Advance(apart);
      server_.Ping();
      std::string to_client = server_.Produce();
      if (!client_.Received(reinterpret_cast<const std::uint8_t*>(to_client.data()),
                            to_client.size())) {
        return false;
      }
      std::string acks;
      if (!client_.Produce(acks)) return false;
      server_.Received(acks);
    }
    return true;
  }
};

// A server's keepalive PINGs every 30 s, on a connection that carries no
// answer for longer than a thousand of them (a quiet watch stream, say).
TEST_F(H2FloodBoundTest, KeepalivePingsSecondsApartAreNeverAFlood) {
  ASSERT_TRUE(
      PingsApart(2 * static_cast<int>(kMaxFramesWithoutProgress), std::chrono::seconds(30)));
  Download d("/1000");
  Start(d);
  Settle();
  ASSERT_TRUE(d.outcome.has_value());
  EXPECT_EQ(d.body, Expected(1000));
}

TEST_F(H2FloodBoundTest, AThousandPingsWithinTheWindowAreAFlood) {
  EXPECT_FALSE(
      PingsApart(2 * static_cast<int>(kMaxFramesWithoutProgress), std::chrono::microseconds(500)));
}

// More than the bound within one window: 1 001 PINGs 900 us apart, all in
// the first second, are a flood.
TEST_F(H2FloodBoundTest, MoreThanTheBoundWithinOneWindowIsAFlood) {
  EXPECT_FALSE(
      PingsApart(static_cast<int>(kMaxFramesWithoutProgress) + 1, std::chrono::microseconds(900)));
}

// grpc-js with grpc.keepalive_time_ms 20 pings a quiet stream every 20 ms:
// 50 a second, never a thousand in one, however long the stream stays
// quiet (the count used to run on until a one-second pause, so a call
// waiting 21 s for its answer lost its connection).
TEST_F(H2FloodBoundTest, KeepalivePingsMillisecondsApartAreNoFlood) {
  ASSERT_TRUE(
      PingsApart(3 * static_cast<int>(kMaxFramesWithoutProgress), std::chrono::milliseconds(20)));
  Download d("/1000");
  Start(d);
  Settle();
  ASSERT_TRUE(d.outcome.has_value());
  EXPECT_EQ(d.body, Expected(1000));
}

}  // namespace
}  // namespace outbound::http::internal::transport
