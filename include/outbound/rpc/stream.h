// SPDX-License-Identifier: Apache-2.0
// outbound/rpc/stream.h
//
// A client-streaming or bidirectional gRPC call that Client::OpenStream
// started through the client's call core (breaker, failure injection,
// telemetry). The caller writes and reads it directly:
//
// example: examples/headers/rpc.cc#rpc-stream
//   rpc::Stream chat = carts->OpenStream("/chat.v1.Chat/Talk", context);
//   chat.Write(hello);  // a protobuf message, or serialised bytes
//   chat.WritesDone();
//   chat::v1::Line line;
//   while (chat.Read(&line)) Show(line);
//   rpc::Status status = chat.Finish();  // the breaker counts this status
//
// A client-streaming call is the same object used as write-many, read-one:
// Write each message, WritesDone, Read the one reply, Finish.
//
// A stream is sent again only while it opens: before the answer's first
// message, with at most 64 KiB written (http::BodyPipe::kReplayBytes), and
// within the call's Settings::timeout. The next attempt sends what was
// written again, and follows a unary call's rules: a refused stream goes
// again whatever its method; one whose status classify retries (say,
// UNAVAILABLE as no connection could be made) only if its method is not in
// Settings::non_idempotent_methods. Once open, only the Context's deadline
// and cancel bound it. Its end is counted by the breaker once:
// Finish's status through Settings::classify; nothing when the caller
// cancelled or the stream was destroyed before Finish (it is cancelled
// then).
//
// One thread may Write (and WritesDone) while another Reads; Finish and the
// destructor run once neither is. Messages that arrive before the caller
// reads them are held (each within Settings::max_receive_message_bytes),
// about 1 MiB of them: past that the server is asked for no more until the
// caller has read half (HTTP/2 flow control, http::ReceiveWindow), so a
// slow reader holds a fast server back instead of filling memory. A stream
// holds at most that 1 MiB, the 1 MiB window the server may still send,
// and one message being received, counted as they came: a gzip-coded
// message waits coded, and is decoded as it is read (one that does not
// decode, when read, ends the stream with its status, as a malformed one
// does; one never read is dropped unchecked, as grpc-go's RecvMsg leaves
// it). So read while writing: a caller that writes everything before
// reading a server that answers each message may wait forever once the
// answers fill both (the server, held, stops reading; Write then blocks on
// HTTP/2 flow control).
// A stream must end (Finish or destruction) before its Client is destroyed.
#ifndef OUTBOUND_RPC_STREAM_H_
#define OUTBOUND_RPC_STREAM_H_

#include <concepts>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "outbound/context.h"
#include "outbound/rpc/settings.h"

namespace outbound::rpc {

// A protobuf message, as far as a stream needs one.
template <typename M>
concept ProtoMessage = requires(const M& message, M* out, std::string* bytes,
                                const std::string& in) {
  { message.SerializeToString(bytes) } -> std::convertible_to<bool>;
  { out->ParseFromString(in) } -> std::convertible_to<bool>;
};

class Stream {
 public:
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  // Cancels a stream that was not finished; the breaker ignores it.
  ~Stream();

  // Attempts made, once Finish has returned (0 when nothing was sent: the
  // breaker rejected it, the caller gave up first).
  int attempts() const;

  // Sends one serialised message. Blocks while the connection cannot take
  // more (HTTP/2 flow control). False once the stream has ended, for
  // whatever reason (the breaker rejected it, nothing listening, the
  // server ended it): Finish says which.
  bool Write(std::string_view message);

  // Serialises and sends a protobuf message. A message that does not
  // serialise ends the stream, which Finish reports as INTERNAL (not the
  // dependency's failure: the breaker ignores it).
  template <ProtoMessage M>
  bool Write(const M& message) {
    std::string bytes;
    if (!message.SerializeToString(&bytes)) {
      EndLocally(Status{Code::kInternal, "a request message did not serialise"});
      return false;
    }
    return Write(std::string_view(bytes));
  }

  // Tells the server that nothing more will be written (half-close). False
  // once the stream has ended.
  bool WritesDone();

  // Receives the next serialised message into *message. Blocks until one
  // arrives; false when the server has sent its last one or the stream
  // ended: call Finish then.
  bool Read(std::string* message);

  // Read, without blocking: `done` gets the next serialised message, or
  // nullopt once the server has sent its last one or the stream ended
  // (call Finish then). It runs on the client's event-loop thread, never on
  // the caller's stack, and must be quick and must not throw; it may call
  // ReadAsync again, but never Finish, Write or the destructor (they wait
  // for that thread). One read at a time: a Read or ReadAsync while
  // another waits gets nothing (false, or nullopt at once). A read still
  // waiting when the stream is finished or destroyed gets nullopt. On a
  // moved-from stream, which has no loop to run `done` on, it does
  // nothing: `done` is never called.
  void ReadAsync(std::function<void(std::optional<std::string> message)> done);

  // Receives and parses the next protobuf message. One that does not parse
  // ends the stream, which Finish reports as INTERNAL (the breaker ignores
  // it, as a unary call's unparsable reply is not counted against the
  // dependency).
  template <ProtoMessage M>
  bool Read(M* message) {
    std::string bytes;
    if (!Read(&bytes)) return false;
    if (!message->ParseFromString(bytes)) {
      EndLocally(Status{Code::kInternal, "a response message did not parse"});
      return false;
    }
    return true;
  }

  // Ends the stream and returns its final status, and settles the breaker's
  // ticket with it (through Settings::classify; Ignored when the caller
  // cancelled). Half-closes first if WritesDone was not called, and discards
  // what the caller left unread: it blocks until the server ends the call or
  // the Context's deadline or cancel does. Later calls return the same
  // status. A Settings::classify that throws reaches the caller here; the
  // stream is ended all the same and its ticket freed.
  Status Finish();

  // The server's trailing metadata, once Finish has returned.
  const Trailers& trailers() const;
  // The server's initial metadata, once Finish has returned (Reply::headers).
  const Metadata& headers() const;

  struct Impl;
  explicit Stream(std::unique_ptr<Impl> impl);

 private:
  // Ends the stream on the client's side with `status`: cancels the call;
  // Finish returns `status`.
  void EndLocally(Status status);

  std::unique_ptr<Impl> impl_;
};

}  // namespace outbound::rpc

#endif  // OUTBOUND_RPC_STREAM_H_
