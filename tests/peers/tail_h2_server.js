// SPDX-License-Identifier: Apache-2.0
// A stock Node http2 server (http2.createSecureServer: TLS, ALPN h2) with a
// slow tail on a script: a request for a path under /slow/ that the server
// has not seen before is answered after --slow-ms; every other request
// (any other path, or a /slow/ path seen before: a second attempt) after
// --fast-ms. The HTTP/2 on the wire is Node's and nghttp2's own.
//
//   node tail_h2_server.js --cert=chain.pem --key=key.pem --fast-ms=10 --slow-ms=2000
//
// "stats" on stdin prints: streams (requests arrived), slow (those given
// the slow delay), answered, and closed_unanswered (streams the client
// cancelled, RST_STREAM, before their answer).
'use strict';
const fs = require('node:fs');
const http2 = require('node:http2');
const {parseArgs, numberArg, serveControl, ignoreSocketErrors} = require('./peer_common.js');

const args = parseArgs(process.argv.slice(2));
const fastMs = numberArg(args, 'fast-ms', 10);
const slowMs = numberArg(args, 'slow-ms', 2000);

const stats = {streams: 0, slow: 0, answered: 0, closed_unanswered: 0};
const seen = new Set();

const server = http2.createSecureServer(
    {cert: fs.readFileSync(args.cert), key: fs.readFileSync(args.key)});
server.on('session', (session) => ignoreSocketErrors(session));
server.on('stream', (stream, headers) => {
  ignoreSocketErrors(stream);
  stats.streams++;
  const path = headers[':path'];
  const slow = path.startsWith('/slow/') && !seen.has(path);
  seen.add(path);
  if (slow) stats.slow++;
  let answered = false;
  const timer = setTimeout(() => {
    if (stream.destroyed || stream.closed) return;
    answered = true;
    stream.respond({':status': 200, 'content-type': 'text/plain'});
    stream.end(path);
    stats.answered++;
  }, slow ? slowMs : fastMs);
  stream.on('close', () => {
    if (answered) return;
    clearTimeout(timer);
    stats.closed_unanswered++;
  });
  stream.resume();
});

server.listen(0, '127.0.0.1', () => serveControl(server.address().port, () => stats));
