// SPDX-License-Identifier: Apache-2.0
// A hostile HTTP/2 server written on raw TLS (tls.createServer, ALPN h2):
// it speaks just enough HTTP/2 to be accepted — its SETTINGS, the ACK of the
// client's — and then misbehaves on the first request's stream:
//
//   node hostile_h2.js --cert=chain.pem --key=key.pem --mode=MODE [--flood-ms=D]
//
//   --mode=window-update  floods WINDOW_UPDATE frames (increment 1, on the
//                         connection and on the stream), as fast as TCP takes them
//   --mode=empty-data     answers :status 200, then floods empty DATA frames
//                         that never end the stream
//   --mode=hang           never answers
//   --mode=silent         sends nothing at all after the handshake, not even
//                         its SETTINGS
//   --flood-ms=D          a flood stops after D ms (10000) and the connection is
//                         closed, so a client stuck in it cannot hang a test forever
//
// "stats" on stdin prints: connections, streams (HEADERS frames received),
// frames_sent (flood frames written).
'use strict';
const fs = require('node:fs');
const tls = require('node:tls');
const {parseArgs, numberArg, serveControl, ignoreSocketErrors} = require('./peer_common.js');

const args = parseArgs(process.argv.slice(2));
const mode = args.mode || 'hang';
const floodMs = numberArg(args, 'flood-ms', 10000);
if (!['window-update', 'empty-data', 'hang', 'silent'].includes(mode)) {
  throw new Error(`bad --mode ${mode}`);
}

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
const DATA = 0, HEADERS = 1, SETTINGS = 4, WINDOW_UPDATE = 8;
const END_HEADERS = 0x4, ACK = 0x1;

// One frame: the 9-byte header (RFC 9113 §4.1), then the payload.
function frame(type, flags, streamId, payload = Buffer.alloc(0)) {
  const header = Buffer.alloc(9);
  header.writeUIntBE(payload.length, 0, 3);
  header.writeUInt8(type, 3);
  header.writeUInt8(flags, 4);
  header.writeUInt32BE(streamId & 0x7fffffff, 5);
  return Buffer.concat([header, payload]);
}
function windowUpdate(streamId) {
  const increment = Buffer.alloc(4);
  increment.writeUInt32BE(1);
  return frame(WINDOW_UPDATE, 0, streamId, increment);
}

const stats = {connections: 0, streams: 0, frames_sent: 0};

// Writes `chunk` (made of `frames` frames) again and again, as fast as the
// socket drains, until the flood's time is up; then closes.
function flood(socket, chunk, frames) {
  const stopAt = Date.now() + floodMs;
  const pump = () => {
    while (!socket.destroyed) {
      if (Date.now() >= stopAt) return socket.destroy();
      stats.frames_sent += frames;
      if (!socket.write(chunk)) return socket.once('drain', () => setImmediate(pump));
    }
  };
  pump();
}

function startMisbehaving(socket, streamId) {
  if (mode === 'hang') return;
  const frames = 4096;
  const pieces = [];
  if (mode === 'window-update') {
    for (let i = 0; i < frames; i++) pieces.push(windowUpdate(i % 2 ? streamId : 0));
  } else {
    // :status 200 as one HPACK indexed field (static table index 8).
    socket.write(frame(HEADERS, END_HEADERS, streamId, Buffer.from([0x88])));
    for (let i = 0; i < frames; i++) pieces.push(frame(DATA, 0, streamId));
  }
  flood(socket, Buffer.concat(pieces), frames);
}

const server = tls.createServer({
  cert: fs.readFileSync(args.cert),
  key: fs.readFileSync(args.key),
  ALPNProtocols: ['h2'],
});
server.on('tlsClientError', () => {});

server.on('secureConnection', (socket) => {
  stats.connections++;
  ignoreSocketErrors(socket);
  if (mode === 'silent') return;
  socket.write(frame(SETTINGS, 0, 0));  // the server's preface: empty SETTINGS
  let input = Buffer.alloc(0);
  let prefaceSeen = false;
  let misbehaving = false;
  socket.on('data', (chunk) => {
    input = Buffer.concat([input, chunk]);
    if (!prefaceSeen) {
      if (input.length < PREFACE.length) return;
      prefaceSeen = true;
      input = input.subarray(PREFACE.length);
    }
    while (input.length >= 9) {
      const length = input.readUIntBE(0, 3);
      if (input.length < 9 + length) break;
      const type = input.readUInt8(3);
      const flags = input.readUInt8(4);
      const streamId = input.readUInt32BE(5) & 0x7fffffff;
      input = input.subarray(9 + length);
      if (type === SETTINGS && !(flags & ACK)) socket.write(frame(SETTINGS, ACK, 0));
      if (type === HEADERS) {
        stats.streams++;
        if (!misbehaving) {
          misbehaving = true;
          startMisbehaving(socket, streamId);
        }
      }
    }
  });
});

server.listen(0, '127.0.0.1', () => serveControl(server.address().port, () => stats));
