// SPDX-License-Identifier: Apache-2.0
// A stock Node server for request bodies written while the answer streams
// (http::BodyPipe): Node's http2 (TLS and ALPN h2, or h2c with --plain) or
// https (HTTP/1.1 over TLS, with --http1). Everything on the wire is Node's.
//
//   node pipe_server.js --cert=chain.pem --key=key.pem [--plain | --http1]
//
// Paths (any method):
//   /echo    answers 200 at once, then writes back each piece of the body
//            as it arrives; at the body's end, ends the answer (HTTP/2:
//            with a trailer field, x-echoed-bytes: the body's size)
//   /hold    answers 200 at once and reads nothing of the body (HTTP/2 flow
//            control then stops the client) until "release"; then reads it
//            all and ends with its size as the answer's body
//   /reset   answers 200 at once; on the body's first piece, resets the
//            stream (RST_STREAM CANCEL; HTTP/1.1: destroys the socket)
//   /finish  answers 200 and ends the answer at once (HTTP/2: with a
//            trailer field, x-finished: yes), reading on what the client
//            sends (so Node does not reset the stream itself)
// Commands: "release" (resumes /hold streams: {"released": N}), "reset"
// (resets /hold streams: {"reset": N}), "stats": streams, received (body
// bytes read), resets (streams the client reset or that ended unfinished),
// chunked (HTTP/1.1 requests with Transfer-Encoding: chunked).
'use strict';
const fs = require('node:fs');
const http2 = require('node:http2');
const https = require('node:https');
const {parseArgs, serveControl, ignoreSocketErrors} = require('./peer_common.js');

const args = parseArgs(process.argv.slice(2));
const stats = {streams: 0, received: 0, resets: 0, chunked: 0};
const held = new Set();

function release() {
  const released = held.size;
  for (const h of held) h.resume();
  held.clear();
  return {released};
}

function resetHeld() {
  const reset = held.size;
  for (const h of held) h.reset();
  held.clear();
  return {reset};
}

function serveHttp2(stream, headers) {
  stats.streams++;
  stream.on('error', () => {});
  stream.on('close', () => {
    if (stream.rstCode !== http2.constants.NGHTTP2_NO_ERROR) stats.resets++;
  });
  const path = headers[':path'];
  let bytes = 0;
  if (path === '/finish') {
    stream.respond({':status': 200}, {waitForTrailers: true});
    stream.on('wantTrailers', () => stream.sendTrailers({'x-finished': 'yes'}));
    // Reading on: Node then leaves the stream open for the client's end
    // rather than resetting it (as a gRPC server that answered early does).
    stream.on('data', (chunk) => (stats.received += chunk.length));
    stream.end('done');
    return;
  }
  if (path === '/hold') {
    stream.pause();
    stream.respond({':status': 200}, {waitForTrailers: true});
    stream.on('wantTrailers', () => stream.sendTrailers({'x-echoed-bytes': String(bytes)}));
    held.add({
      resume: () => stream.resume(),
      reset: () => stream.close(http2.constants.NGHTTP2_CANCEL),
    });
    stream.on('data', (chunk) => {
      bytes += chunk.length;
      stats.received += chunk.length;
    });
    stream.on('end', () => stream.end(String(bytes)));
    return;
  }
  stream.respond({':status': 200}, {waitForTrailers: true});
  stream.on('wantTrailers', () => stream.sendTrailers({'x-echoed-bytes': String(bytes)}));
  stream.on('data', (chunk) => {
    bytes += chunk.length;
    stats.received += chunk.length;
    if (path === '/reset') {
      // On the next turn: a reset from inside nghttp2's reading frees the
      // stream under it (see h2_server.js).
      setImmediate(() => stream.close(http2.constants.NGHTTP2_CANCEL));
      return;
    }
    stream.write(chunk);
  });
  stream.on('end', () => stream.end());
}

function serveHttp1(req, res) {
  stats.streams++;
  if ((req.headers['transfer-encoding'] || '').includes('chunked')) stats.chunked++;
  res.on('close', () => {
    if (!res.writableFinished) stats.resets++;
  });
  let bytes = 0;
  if (req.url === '/finish') {
    res.writeHead(200, {'content-length': 4});
    res.end('done');
    return;
  }
  res.writeHead(200, {'content-type': 'application/octet-stream'});
  res.flushHeaders();
  if (req.url === '/hold') {
    req.pause();
    held.add({resume: () => req.resume(), reset: () => req.socket.destroy()});
  }
  req.on('data', (chunk) => {
    bytes += chunk.length;
    stats.received += chunk.length;
    if (req.url === '/reset') {
      setImmediate(() => req.socket.destroy());
      return;
    }
    if (req.url === '/echo') res.write(chunk);
  });
  req.on('end', () => res.end(req.url === '/hold' ? String(bytes) : undefined));
}

let server;
if (args.http1 === 'true') {
  server = https.createServer({cert: fs.readFileSync(args.cert), key: fs.readFileSync(args.key)},
                              serveHttp1);
  server.on('connection', ignoreSocketErrors);
} else {
  server = args.plain === 'true'
      ? http2.createServer()
      : http2.createSecureServer({cert: fs.readFileSync(args.cert), key: fs.readFileSync(args.key)});
  server.on('session', (session) => session.on('error', () => {}));
  server.on('connection', ignoreSocketErrors);
  server.on('stream', serveHttp2);
}

server.listen(0, '127.0.0.1',
              () => serveControl(server.address().port, () => stats, {release, reset: resetHeld}));
