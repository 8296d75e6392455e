// SPDX-License-Identifier: Apache-2.0
// The FakeServer's pieces, shared by its three files: the server (accept,
// TLS, records), an HTTP/1.1 session on Beast and an HTTP/2 session on
// nghttp2. Not public API.
#ifndef OUTBOUND_SRC_TESTING_FAKE_SERVER_INTERNAL_H_
#define OUTBOUND_SRC_TESTING_FAKE_SERVER_INTERNAL_H_

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "outbound/testing/fake_server.h"

namespace outbound::testing {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

// A connection's byte stream, plain or TLS, with the AsyncReadStream and
// AsyncWriteStream members Beast and asio::async_write expect.
class ByteStream {
 public:
  using executor_type = asio::any_io_executor;

  explicit ByteStream(tcp::socket socket) : plain_(std::move(socket)) {}
  explicit ByteStream(std::unique_ptr<asio::ssl::stream<tcp::socket>> tls)
      : plain_(tls->get_executor()), tls_(std::move(tls)) {}

  executor_type get_executor() { return lowest().get_executor(); }

  template <class Buffers, class Handler>
  void async_read_some(const Buffers& buffers, Handler&& handler) {
    if (tls_) {
      tls_->async_read_some(buffers, std::forward<Handler>(handler));
    } else {
      plain_.async_read_some(buffers, std::forward<Handler>(handler));
    }
  }

  template <class Buffers, class Handler>
  void async_write_some(const Buffers& buffers, Handler&& handler) {
    if (tls_) {
      tls_->async_write_some(buffers, std::forward<Handler>(handler));
    } else {
      plain_.async_write_some(buffers, std::forward<Handler>(handler));
    }
  }

  tcp::socket& lowest() { return tls_ ? tls_->next_layer() : plain_; }
  bool tls() const { return tls_ != nullptr; }

  // Closes at once: a FIN, with no TLS close_notify.
  void Close() {
    boost::system::error_code ignored;
    lowest().shutdown(tcp::socket::shutdown_both, ignored);
    lowest().close(ignored);
  }
  // Closes with a TCP RST.
  void Reset() {
    boost::system::error_code ignored;
    lowest().set_option(asio::socket_base::linger(true, 0), ignored);
    lowest().close(ignored);
  }

 private:
  tcp::socket plain_;
  std::unique_ptr<asio::ssl::stream<tcp::socket>> tls_;
};

// A connection being served. Lives on the server's I/O thread.
class Session {
 public:
  virtual ~Session() = default;
  virtual void Start() = 0;
  // Stop serving: HTTP/2 says GOAWAY first; HTTP/1.1 closes.
  virtual void Shutdown() = 0;
};

struct FakeServer::Impl {
  Options options;
  Clock* clock = nullptr;
  // Declared before the I/O objects: destroying io_context destroys the
  // sessions its handlers still hold, and they use these on the way out.
  std::unique_ptr<asio::ssl::context> tls_context;
  std::string alpn_wire;  // the ALPN list in wire format

  // Touched only on the I/O thread.
  std::vector<std::weak_ptr<Session>> sessions;
  int next_connection_id = 1;

  // Records, for the test thread.
  mutable std::mutex mu;
  mutable std::condition_variable changed;
  std::vector<ServerRequest> requests;
  int cancelled = 0;
  int opened = 0;
  int tls_resumed = 0;
  int open = 0;
  int client_resets = 0;
  int client_pings = 0;
  int client_goaways = 0;
  int client_goaway_errors = 0;
  int close_notifies = 0;
  std::uint64_t raw_frames = 0;
  std::uint64_t raw_bytes_read = 0;
  std::uint64_t events = 0;  // moves on with every record, for WaitFor

  asio::io_context io;
  tcp::acceptor acceptor{io};
  std::thread thread;
  bool stopped = false;

  // A read on `stream` failed with `ec`: a TLS connection the client ended
  // with its close_notify is counted (OpenSSL's clean end reads as eof;
  // a bare close as stream_truncated).
  void ReadFailed(const ByteStream& stream, const boost::system::error_code& ec);
  // Records `request` as received.
  void Received(ServerRequest request);
  // Asks the handler how to answer `request`. The session records it
  // (Received) once a delayed answer's timer is armed, so a test that sees
  // the request may Advance the clock past that delay.
  Reply Answer(const ServerRequest& request);
  // Reads one record under the lock.
  int Read(int Impl::*field) const {
    std::lock_guard lock(mu);
    return this->*field;
  }
  // Changes a record under the lock and wakes WaitFor.
  template <typename F>
  void Record(F change) {
    {
      std::lock_guard lock(mu);
      change();
      ++events;
    }
    changed.notify_all();
  }
  // Runs `fn` on the I/O thread at `delay` from now on the server's clock.
  // The timer holds `owner` alive until it fires or is cancelled (a session
  // cancels its timers when it ends), since a session waiting on the clock
  // may have no I/O pending to hold it.
  Timer After(Duration delay, std::shared_ptr<Session> owner, std::function<void()> fn);

  void Accept();
  void Serve(std::unique_ptr<ByteStream> stream, bool h2, int connection_id);
};

std::shared_ptr<Session> MakeHttp1Session(FakeServer::Impl& server,
                                          std::unique_ptr<ByteStream> stream, int connection_id);
std::shared_ptr<Session> MakeHttp2Session(FakeServer::Impl& server,
                                          std::unique_ptr<ByteStream> stream, int connection_id);

}  // namespace outbound::testing

#endif  // OUTBOUND_SRC_TESTING_FAKE_SERVER_INTERNAL_H_
