// SPDX-License-Identifier: Apache-2.0
#include <openssl/ssl.h>

#include <algorithm>
#include <boost/beast/http/error.hpp>

#include "fake_server_internal.h"
#include "outbound/internal/ascii.h"

namespace outbound::testing {

// --- ServerRequest and Reply ---

std::string ServerRequest::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (outbound::internal::EqualsIgnoringAsciiCase(key, name)) {
      return value;
    }
  }
  return "";
}

Reply Reply::Status(int status, std::string body) {
  Reply reply;
  reply.status = status;
  reply.body = std::move(body);
  return reply;
}

Reply Reply::Hang() {
  Reply reply;
  reply.behaviour = Behaviour::kHang;
  return reply;
}

Reply Reply::Close() {
  Reply reply;
  reply.behaviour = Behaviour::kCloseBeforeHeaders;
  return reply;
}

Reply Reply::Reset(std::uint32_t rst_code) {
  Reply reply;
  reply.behaviour = Behaviour::kResetBeforeHeaders;
  reply.rst_code = rst_code;
  return reply;
}

namespace {
Reply Cut(Reply::Behaviour behaviour, std::size_t body_bytes, std::string body) {
  Reply reply = Reply::Ok(std::move(body));
  reply.behaviour = behaviour;
  reply.cut_after = std::min(body_bytes, reply.body.size());
  return reply;
}
}  // namespace

Reply Reply::ResetConnection() {
  Reply reply;
  reply.behaviour = Behaviour::kResetConnection;
  return reply;
}

Reply Reply::ResetAfter(std::size_t body_bytes, std::string body) {
  Reply reply = Cut(Behaviour::kResetMidBody, body_bytes, std::move(body));
  reply.rst_code = 2;  // INTERNAL_ERROR
  return reply;
}

Reply Reply::ResetAfterHeaders(std::string body) { return ResetAfter(0, std::move(body)); }

Reply Reply::Stall(std::size_t body_bytes, std::string body) {
  return Cut(Behaviour::kStall, body_bytes, std::move(body));
}

Reply Reply::Frames(std::vector<h2::Frame> frames) {
  Reply reply;
  reply.behaviour = Behaviour::kFrames;
  reply.frames = std::move(frames);
  return reply;
}

Reply Reply::Flood(h2::Frame frame, std::size_t count, std::vector<h2::Frame> first) {
  Reply reply = Frames(std::move(first));
  reply.flood = std::move(frame);
  reply.flood_count = count;
  return reply;
}

Reply Reply::TruncateChunked(std::size_t body_bytes, std::string body) {
  return Cut(Behaviour::kTruncateChunked, body_bytes, std::move(body));
}

Reply Reply::ShortBody(std::size_t body_bytes, std::string body) {
  return Cut(Behaviour::kShortBody, body_bytes, std::move(body));
}

Reply Reply::Trickle(std::string body, std::size_t bytes, Duration every) {
  Reply reply = Ok(std::move(body));
  reply.behaviour = Behaviour::kTrickle;
  reply.trickle_bytes = std::max<std::size_t>(1, bytes);
  reply.trickle_every = every;
  return reply;
}

// --- The server ---

void FakeServer::Impl::Received(ServerRequest request) {
  Record([&] { requests.push_back(std::move(request)); });
}

Reply FakeServer::Impl::Answer(const ServerRequest& request) {
  if (!options.handler) return Reply::Ok();
  return options.handler(request);
}

Timer FakeServer::Impl::After(Duration delay, std::shared_ptr<Session> owner,
                              std::function<void()> fn) {
  return clock->ScheduleAfter(delay, [this, owner = std::move(owner), fn = std::move(fn)] {
    asio::post(io, [owner, fn] { fn(); });
  });
}

namespace {

int SelectAlpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
               unsigned int inlen, void* arg) {
  const auto* wire = static_cast<const std::string*>(arg);
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, outlen, reinterpret_cast<const unsigned char*>(wire->data()),
                            static_cast<unsigned int>(wire->size()), in,
                            inlen) != OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_NOACK;
  }
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

Result<std::unique_ptr<asio::ssl::context>> MakeTlsContext(const ServerTls& tls,
                                                           std::string& alpn_wire) {
  auto context = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
  boost::system::error_code ec;
  context->use_certificate_chain(asio::buffer(tls.certificate.chain_pem), ec);
  if (!ec) {
    context->use_private_key(asio::buffer(tls.certificate.key_pem), asio::ssl::context::pem, ec);
  }
  if (ec) return Fail(ErrorKind::kInvalidSettings, "FakeServer: bad certificate: " + ec.message());
  SSL_CTX* native = context->native_handle();
  if (tls.min_version != 0 && tls.min_version < TLS1_2_VERSION) {
    SSL_CTX_set_security_level(native, 0);  // OpenSSL 3 refuses TLS < 1.2 above level 0
  }
  if (!tls.ciphers.empty() && SSL_CTX_set_cipher_list(native, tls.ciphers.c_str()) != 1) {
    return Fail(ErrorKind::kInvalidSettings, "FakeServer: no cipher in \"" + tls.ciphers + "\"");
  }
  if (tls.min_version != 0) SSL_CTX_set_min_proto_version(native, tls.min_version);
  if (tls.max_version != 0) SSL_CTX_set_max_proto_version(native, tls.max_version);
  // Resumption with client certificates needs a context for the sessions
  // (OpenSSL fails the handshake of one offered without it).
  constexpr unsigned char kSessionContext[] = "outbound-fake-server";
  SSL_CTX_set_session_id_context(native, kSessionContext, sizeof kSessionContext - 1);
  if (tls.client_ca_pem) {
    context->add_certificate_authority(asio::buffer(*tls.client_ca_pem), ec);
    if (ec) return Fail(ErrorKind::kInvalidSettings, "FakeServer: bad client CA: " + ec.message());
    context->set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert);
  }
  for (const std::string& protocol : tls.alpn) {
    alpn_wire.push_back(static_cast<char>(protocol.size()));
    alpn_wire += protocol;
  }
  SSL_CTX_set_alpn_select_cb(native, SelectAlpn, &alpn_wire);
  return context;
}

}  // namespace

void FakeServer::Impl::Accept() {
  acceptor.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
    if (ec) return;  // the acceptor was closed
    int id = next_connection_id++;
    Record([&] {
      ++opened;
      ++open;
    });
    socket.set_option(tcp::no_delay(true));
    if (!tls_context) {
      Serve(std::make_unique<ByteStream>(std::move(socket)), options.h2c, id);
    } else {
      auto tls = std::make_shared<std::unique_ptr<asio::ssl::stream<tcp::socket>>>(
          std::make_unique<asio::ssl::stream<tcp::socket>>(std::move(socket), *tls_context));
      (*tls)->async_handshake(asio::ssl::stream_base::server,
                              [this, tls, id](boost::system::error_code handshake_error) {
                                if (handshake_error) {
                                  boost::system::error_code ignored;
                                  (*tls)->next_layer().close(ignored);
                                  Record([&] { --open; });
                                  return;
                                }
                                if (SSL_session_reused((*tls)->native_handle()) == 1) {
                                  Record([&] { ++tls_resumed; });
                                }
                                const unsigned char* proto = nullptr;
                                unsigned int len = 0;
                                SSL_get0_alpn_selected((*tls)->native_handle(), &proto, &len);
                                bool h2 = std::string_view(reinterpret_cast<const char*>(proto),
                                                           len) == "h2";
                                Serve(std::make_unique<ByteStream>(std::move(*tls)), h2, id);
                              });
    }
    Accept();
  });
}

void FakeServer::Impl::Serve(std::unique_ptr<ByteStream> stream, bool h2, int connection_id) {
  std::shared_ptr<Session> session = h2 ? MakeHttp2Session(*this, std::move(stream), connection_id)
                                        : MakeHttp1Session(*this, std::move(stream), connection_id);
  std::erase_if(sessions, [](const std::weak_ptr<Session>& s) { return s.expired(); });
  sessions.push_back(session);
  session->Start();
}

Result<std::unique_ptr<FakeServer>> FakeServer::Start(Options options) {
  auto impl = std::make_unique<Impl>();
  impl->clock = options.clock ? options.clock : &SystemClock();
  if (options.tls) {
    auto context = MakeTlsContext(*options.tls, impl->alpn_wire);
    if (!context) return tl::unexpected(context.error());
    impl->tls_context = std::move(*context);
  }
  impl->options = std::move(options);
  boost::system::error_code ec;
  tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), 0);
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Fail(ErrorKind::kTransport, "FakeServer: cannot listen: " + ec.message());
  impl->Accept();
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->io.run(); });
  return std::unique_ptr<FakeServer>(new FakeServer(std::move(impl)));
}

FakeServer::FakeServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

FakeServer::~FakeServer() { Stop(); }

void FakeServer::Stop() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  asio::post(impl_->io, [impl = impl_.get()] {
    boost::system::error_code ignored;
    impl->acceptor.close(ignored);
    for (auto& weak : impl->sessions) {
      if (auto session = weak.lock()) session->Shutdown();
    }
  });
  impl_->thread.join();  // run() returns once every connection has closed
}

std::uint16_t FakeServer::port() const { return impl_->acceptor.local_endpoint().port(); }

std::string FakeServer::url() const {
  return std::string(impl_->tls_context ? "https" : "http") +
         "://127.0.0.1:" + std::to_string(port());
}

std::vector<ServerRequest> FakeServer::requests() const {
  std::lock_guard lock(impl_->mu);
  return impl_->requests;
}

std::size_t FakeServer::request_count() const {
  std::lock_guard lock(impl_->mu);
  return impl_->requests.size();
}

int FakeServer::cancelled_requests() const { return impl_->Read(&Impl::cancelled); }

int FakeServer::connections_opened() const { return impl_->Read(&Impl::opened); }
int FakeServer::tls_sessions_resumed() const { return impl_->Read(&Impl::tls_resumed); }

int FakeServer::connections_open() const { return impl_->Read(&Impl::open); }

int FakeServer::streams_reset_by_client() const { return impl_->Read(&Impl::client_resets); }
int FakeServer::pings_from_client() const { return impl_->Read(&Impl::client_pings); }
int FakeServer::goaways_from_client() const { return impl_->Read(&Impl::client_goaways); }
int FakeServer::goaway_errors_from_client() const {
  return impl_->Read(&Impl::client_goaway_errors);
}
int FakeServer::close_notifies() const { return impl_->Read(&Impl::close_notifies); }

void FakeServer::Impl::ReadFailed(const ByteStream& stream, const boost::system::error_code& ec) {
  if (stream.tls() && (ec == asio::error::eof || ec == boost::beast::http::error::end_of_stream)) {
    Record([&] { ++close_notifies; });
  }
}

std::uint64_t FakeServer::raw_frames_written() const {
  std::lock_guard lock(impl_->mu);
  return impl_->raw_frames;
}

std::uint64_t FakeServer::raw_bytes_read() const {
  std::lock_guard lock(impl_->mu);
  return impl_->raw_bytes_read;
}

bool FakeServer::WaitFor(const std::function<bool(const FakeServer&)>& done,
                         std::chrono::milliseconds real_limit) const {
  std::unique_lock lock(impl_->mu);
  for (;;) {
    std::uint64_t seen = impl_->events;
    lock.unlock();  // done() reads through the locking accessors
    bool ok = done(*this);
    lock.lock();
    if (ok) return true;
    // Returns at once if something was recorded while done() ran.
    if (!impl_->changed.wait_for(lock, real_limit, [&] { return impl_->events != seen; })) {
      return false;
    }
  }
}

}  // namespace outbound::testing
