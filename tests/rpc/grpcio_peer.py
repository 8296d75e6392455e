# SPDX-License-Identifier: Apache-2.0
"""A gRPC server on Python grpcio (Debian python3-grpcio, an implementation
nobody here wrote), serving the service peer.Test with generic handlers on
raw bytes (no generated code) on 127.0.0.1, plain text or TLS.

  python3 grpcio_peer.py [--cert=chain.pem --key=key.pem] \
          [--answers=UNAVAILABLE,RESOURCE_EXHAUSTED:2000,OK]

Methods (each message is raw bytes):
  Echo    unary: answers the request; its custom metadata (names starting
          "x-", "-bin" values as bytes) comes back in the trailers, and
          the initial metadata is x-served-by: grpcio and x-served-bin:
          the bytes 00 ff.
  Fail    unary: the request is "CODE message": that status, that message.
  Flaky   unary: call n gets answers[n-1] (the last one repeats): a status
          code name, with grpc-retry-pushback-ms after a colon; OK echoes.
  Gzip    unary: the request repeated 1000 times, gzip-coded.
  Big     unary: the request is a decimal size; that many bytes of 'b'.
  Deadline unary: the milliseconds the call's deadline (grpc-timeout) left
          when it arrived, in decimal, or "none".
  Hang    unary: never answers; counts the call cancelled once the client
          leaves it.
  Count   server streaming: the request is a decimal n; messages "1".."n".
  DeadlineStream server streaming: one message, as Deadline answers.
  GzipStream server streaming: the request is a decimal n; messages "1".."n",
          each repeated 100 times, gzip-coded.
  Flood   server streaming: the request is "n:size"; n messages of `size`
          bytes, each its index in 8 digits and then '.', as fast as the
          client's flow control lets grpcio take them.
  Join    client streaming: every message, joined with '+'; the initial
          metadata is x-served-by: grpcio.
  Chat    bidirectional: each message back, prefixed "echo:"; counts the
          call cancelled when the client cancels it.
  GzipChat bidirectional: each message back, prefixed "echo:" and repeated
          100 times, gzip-coded.

Control channel, as tests/peers/peer_common.js has it: the first line on
stdout is {"port": n}; each "stats" line on stdin is answered with one line
{"calls": {method: n}, "cancelled": n, "last_metadata": {...},
"flooded": n} (Flood's messages handed to grpcio so far); the server
stops when stdin ends.
"""
import json
import sys
import threading
import time
from concurrent import futures

import grpc

SERVICE = "peer.Test"

_lock = threading.Lock()
_calls = {}
_cancelled = 0
_flooded = 0
_last_metadata = {}


def _parse_args(argv):
    args = {}
    for arg in argv:
        if arg.startswith("--") and "=" in arg:
            key, value = arg[2:].split("=", 1)
            args[key] = value
    return args


ARGS = _parse_args(sys.argv[1:])
ANSWERS = ARGS.get("answers", "OK").split(",")


def _count(method, context):
    """Records a call of `method` and its metadata; returns its number."""
    with _lock:
        _calls[method] = _calls.get(method, 0) + 1
        _last_metadata.clear()
        for key, value in context.invocation_metadata():
            if isinstance(value, bytes):
                value = value.hex()
            _last_metadata[key] = value
        return _calls[method]


def echo(request, context):
    _count("Echo", context)
    context.send_initial_metadata([("x-served-by", "grpcio"), ("x-served-bin", b"\x00\xff")])
    custom = [(k, v) for k, v in context.invocation_metadata() if k.startswith("x-")]
    context.set_trailing_metadata(custom)
    return request


def fail(request, context):
    _count("Fail", context)
    code_name, _, message = request.decode("utf-8").partition(" ")
    context.abort(grpc.StatusCode[code_name], message)


def flaky(request, context):
    n = _count("Flaky", context)
    name, _, pushback = ANSWERS[min(n, len(ANSWERS)) - 1].partition(":")
    if name == "OK":
        return request
    if pushback:
        context.set_trailing_metadata([("grpc-retry-pushback-ms", pushback)])
    context.abort(grpc.StatusCode[name], name.lower())


def gzip(request, context):
    _count("Gzip", context)
    context.set_compression(grpc.Compression.Gzip)
    return request * 1000


def big(request, context):
    _count("Big", context)
    return b"b" * int(request.decode("ascii"))


def deadline(request, context):
    _count("Deadline", context)
    left = context.time_remaining()
    return b"none" if left is None else str(int(left * 1000)).encode("ascii")


def hang(request, context):
    global _cancelled
    _count("Hang", context)
    gone = threading.Event()
    context.add_callback(gone.set)
    # A safety net: the test ends a hang in seconds of real time.
    gone.wait(60)
    if not context.is_active():
        with _lock:
            _cancelled += 1
    return b""


def deadline_stream(request, context):
    _count("DeadlineStream", context)
    left = context.time_remaining()
    yield b"none" if left is None else str(int(left * 1000)).encode("ascii")


def count(request, context):
    _count("Count", context)
    for i in range(1, int(request.decode("ascii")) + 1):
        yield str(i).encode("ascii")


def gzip_stream(request, context):
    _count("GzipStream", context)
    context.set_compression(grpc.Compression.Gzip)
    for i in range(1, int(request.decode("ascii")) + 1):
        yield str(i).encode("ascii") * 100


def flood(request, context):
    global _flooded
    _count("Flood", context)
    n, size = (int(part) for part in request.decode("ascii").split(":"))
    for i in range(n):
        yield b"%08d" % i + b"." * (size - 8)
        with _lock:
            _flooded += 1


def join(request_iterator, context):
    _count("Join", context)
    context.send_initial_metadata([("x-served-by", "grpcio")])
    return b"+".join(request_iterator)


def flaky_join(request_iterator, context):
    """Join, answering each call as --answers says, after reading it all."""
    n = _count("FlakyJoin", context)
    joined = b"+".join(request_iterator)
    name, _, _ = ANSWERS[min(n, len(ANSWERS)) - 1].partition(":")
    if name == "OK":
        return joined
    context.abort(grpc.StatusCode[name], name.lower())


def chat(request_iterator, context):
    _count("Chat", context)
    terminated = threading.Event()
    settled = []

    def settle(cancelled):
        global _cancelled
        with _lock:
            if settled:
                return
            settled.append(True)
            if cancelled:
                _cancelled += 1

    def on_termination():
        terminated.set()
        settle(True)  # ended before this handler did: the client cancelled

    context.add_callback(on_termination)
    for message in request_iterator:
        yield b"echo:" + message
    # grpcio may end the request iterator on a client's RST_STREAM as on a
    # half-close, the call's termination following a moment later; a
    # half-closed call stays open until this handler returns, so a
    # termination within the bound below is the cancel's.
    if not terminated.wait(0.5):
        settle(False)


def gzip_chat(request_iterator, context):
    _count("GzipChat", context)
    context.set_compression(grpc.Compression.Gzip)
    for message in request_iterator:
        yield b"echo:" + message * 100


def main():
    handlers = {
        "Echo": grpc.unary_unary_rpc_method_handler(echo),
        "Fail": grpc.unary_unary_rpc_method_handler(fail),
        "Flaky": grpc.unary_unary_rpc_method_handler(flaky),
        "Gzip": grpc.unary_unary_rpc_method_handler(gzip),
        "Big": grpc.unary_unary_rpc_method_handler(big),
        "Deadline": grpc.unary_unary_rpc_method_handler(deadline),
        "Hang": grpc.unary_unary_rpc_method_handler(hang),
        "Count": grpc.unary_stream_rpc_method_handler(count),
        "DeadlineStream": grpc.unary_stream_rpc_method_handler(deadline_stream),
        "GzipStream": grpc.unary_stream_rpc_method_handler(gzip_stream),
        "Flood": grpc.unary_stream_rpc_method_handler(flood),
        "Join": grpc.stream_unary_rpc_method_handler(join),
        "FlakyJoin": grpc.stream_unary_rpc_method_handler(flaky_join),
        "Chat": grpc.stream_stream_rpc_method_handler(chat),
        "GzipChat": grpc.stream_stream_rpc_method_handler(gzip_chat),
    }
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=16),
        handlers=[grpc.method_handlers_generic_handler(SERVICE, handlers)],
        options=[("grpc.max_send_message_length", -1)],
    )
    if "cert" in ARGS:
        with open(ARGS["key"], "rb") as key, open(ARGS["cert"], "rb") as chain:
            credentials = grpc.ssl_server_credentials([(key.read(), chain.read())])
        port = server.add_secure_port("127.0.0.1:0", credentials)
    else:
        port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(json.dumps({"port": port}), flush=True)
    for line in sys.stdin:
        command = line.strip()
        if command == "stats":
            with _lock:
                answer = {
                    "calls": dict(_calls),
                    "cancelled": _cancelled,
                    "last_metadata": dict(_last_metadata),
                    "flooded": _flooded,
                }
        else:
            answer = {"error": "unknown command " + command}
        print(json.dumps(answer), flush=True)
    server.stop(0)


if __name__ == "__main__":
    main()
