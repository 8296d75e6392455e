// SPDX-License-Identifier: Apache-2.0
// grpc-js (@grpc/grpc-js, an implementation nobody here wrote) serving
// peer.Test on 127.0.0.1, plain text or TLS: the service grpcio_peer.py and
// grpc_go_peer serve too, so StockGrpcServerTest runs against all three.
// Messages are raw bytes, with no generated code.
//
//   node grpc_js_test_service.js --modules=<dir holding node_modules> \
//        [--cert=chain.pem --key=key.pem] [--answers=UNAVAILABLE,OK]
//
// Methods, as grpcio_peer.py says of them:
//   Echo      unary: the request back; its "x-" metadata comes back in the
//             trailers, and the initial metadata is x-served-by: grpc-js
//             and x-served-bin: the bytes 00 ff.
//   Fail      unary: the request is "CODE message": that status and message.
//   Flaky     unary: call n gets answers[n-1] (the last one repeats): a
//             status code name, with grpc-retry-pushback-ms after a colon;
//             OK echoes.
//   Deadline  unary: the milliseconds the call's deadline (grpc-timeout) left
//             when it arrived, in decimal, or "none".
//   Hang      unary: never answers; counts the call cancelled once the
//             client leaves it.
//   Count     server streaming: the request is a decimal n; messages "1".."n".
//   Join      client streaming: every message joined with '+'; the initial
//             metadata is x-served-by: grpc-js.
//   Chat      bidirectional: each message back, prefixed "echo:"; counts the
//             call cancelled when the client cancels it.
// Control channel as in tests/peers/peer_common.js; stats: {"calls":
// {method: n}, "cancelled": n, "last_metadata": {name: value} of the last
// call, a "-bin" value in hex}.
'use strict';
const fs = require('fs');
const path = require('path');
const {parseArgs, serveControl} = require('../peers/peer_common.js');

const args = parseArgs(process.argv.slice(2));
const grpc = require(path.join(args.modules, 'node_modules', '@grpc/grpc-js'));
const answers = (args.answers || 'OK').split(',');

const calls = {};
let cancelled = 0;
let lastMetadata = {};

// Records a call of `method` and its metadata; returns its number.
function count(method, call) {
  calls[method] = (calls[method] || 0) + 1;
  lastMetadata = {};
  for (const [name, value] of Object.entries(call.metadata.getMap())) {
    lastMetadata[name] = Buffer.isBuffer(value) ? value.toString('hex') : value;
  }
  return calls[method];
}

// Counts the call cancelled if the client leaves it before `answered()`:
// grpc-js emits 'cancelled' when the stream closes, answered or not.
function countCancel(call, answered = () => false) {
  call.on('cancelled', () => {
    if (!answered()) cancelled += 1;
  });
}

function servedBy(binary) {
  const metadata = new grpc.Metadata();
  metadata.set('x-served-by', 'grpc-js');
  if (binary) metadata.set('x-served-bin', Buffer.from([0x00, 0xff]));
  return metadata;
}

function failure(name, details, trailers = new grpc.Metadata()) {
  return {code: grpc.status[name], details, metadata: trailers};
}

const handlers = {
  Echo(call, callback) {
    count('Echo', call);
    call.sendMetadata(servedBy(true));
    const trailers = new grpc.Metadata();
    for (const [name, values] of Object.entries(call.metadata.toJSON())) {
      if (!name.startsWith('x-')) continue;
      for (const value of values) trailers.add(name, value);
    }
    callback(null, call.request, trailers);
  },
  Fail(call, callback) {
    count('Fail', call);
    const text = call.request.toString('utf8');
    const space = text.indexOf(' ');
    const [name, message] = space < 0 ? [text, ''] : [text.slice(0, space), text.slice(space + 1)];
    callback(failure(name, message));
  },
  Flaky(call, callback) {
    const n = count('Flaky', call);
    const [name, pushback] = answers[Math.min(n, answers.length) - 1].split(':');
    if (name === 'OK') return callback(null, call.request);
    const trailers = new grpc.Metadata();
    if (pushback !== undefined) trailers.set('grpc-retry-pushback-ms', pushback);
    callback(failure(name, name.toLowerCase(), trailers));
  },
  Deadline(call, callback) {
    count('Deadline', call);
    const deadline = Number(call.getDeadline());
    const left = Number.isFinite(deadline) ? String(Math.floor(deadline - Date.now())) : 'none';
    callback(null, Buffer.from(left));
  },
  Hang(call) {
    count('Hang', call);
    countCancel(call);
  },
  Count(call) {
    count('Count', call);
    const n = Number(call.request.toString('ascii'));
    for (let i = 1; i <= n; ++i) call.write(Buffer.from(String(i)));
    call.end();
  },
  Join(call, callback) {
    count('Join', call);
    call.sendMetadata(servedBy(false));
    const parts = [];
    call.on('data', (message) => parts.push(message.toString('latin1')));
    call.on('end', () => callback(null, Buffer.from(parts.join('+'), 'latin1')));
  },
  Chat(call) {
    count('Chat', call);
    let answered = false;
    countCancel(call, () => answered);
    call.on('data', (message) => call.write(Buffer.concat([Buffer.from('echo:'), message])));
    // A client's RST_STREAM ends the request stream too, its 'cancelled'
    // following in the same turn of the event loop: the answer waits for
    // the next turn, so a cancel is never taken for an answered call.
    call.on('end', () => setImmediate(() => {
      answered = true;
      call.end();
    }));
  },
};

// The service as grpc-js describes one: each method's path, its kind, and
// bytes as they are both ways.
const kinds = {
  Echo: [false, false], Fail: [false, false], Flaky: [false, false], Deadline: [false, false],
  Hang: [false, false], Count: [false, true], Join: [true, false], Chat: [true, true],
};
const raw = (bytes) => bytes;
const service = {};
for (const [method, [requestStream, responseStream]] of Object.entries(kinds)) {
  service[method] = {
    path: `/peer.Test/${method}`, requestStream, responseStream,
    requestSerialize: raw, requestDeserialize: raw, responseSerialize: raw, responseDeserialize: raw,
  };
}

const server = new grpc.Server();
server.addService(service, handlers);
const credentials = args.cert === undefined
  ? grpc.ServerCredentials.createInsecure()
  : grpc.ServerCredentials.createSsl(null, [{
    private_key: fs.readFileSync(args.key), cert_chain: fs.readFileSync(args.cert),
  }], false);
server.bindAsync('127.0.0.1:0', credentials, (err, port) => {
  if (err) throw err;
  serveControl(port, () => ({calls, cancelled, last_metadata: lastMetadata}));
});
