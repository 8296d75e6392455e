// SPDX-License-Identifier: Apache-2.0
// A stock Node http2 server (http2.createSecureServer: TLS, ALPN h2) whose
// latency grows with the requests it holds, as a dependency with a fixed
// pool of workers does: up to --workers requests in flight are answered
// after --base-ms; past that each waits its turn, so a request that
// arrives as the n-th in flight is answered after base * n / workers ms.
// Its capacity is workers / base requests a millisecond, reached at
// --workers in flight; its answers take more than twice the unloaded
// latency from 2 * workers in flight on. The HTTP/2 on the wire is Node's
// and nghttp2's own.
//
//   node loaded_h2_server.js --cert=chain.pem --key=key.pem --base-ms=50 --workers=8
//
// "stats" on stdin prints: streams (requests arrived), answered,
// in_flight (held now), max_in_flight (most held at once since the last
// "reset"); "reset" sets max_in_flight to in_flight and answers the stats.
'use strict';
const fs = require('node:fs');
const http2 = require('node:http2');
const {parseArgs, numberArg, serveControl, ignoreSocketErrors} = require('./peer_common.js');

const args = parseArgs(process.argv.slice(2));
const baseMs = numberArg(args, 'base-ms', 50);
const workers = numberArg(args, 'workers', 8);

const stats = {streams: 0, answered: 0, in_flight: 0, max_in_flight: 0};

const server = http2.createSecureServer(
    {cert: fs.readFileSync(args.cert), key: fs.readFileSync(args.key)});
server.on('session', (session) => ignoreSocketErrors(session));
server.on('stream', (stream) => {
  ignoreSocketErrors(stream);
  stats.streams++;
  stats.in_flight++;
  stats.max_in_flight = Math.max(stats.max_in_flight, stats.in_flight);
  const delay = baseMs * Math.max(1, stats.in_flight / workers);
  let held = true;
  const release = () => {
    if (!held) return;
    held = false;
    stats.in_flight--;
  };
  // A request the client gave up on still holds its worker until its time.
  setTimeout(() => {
    release();
    if (stream.destroyed || stream.closed) return;
    stream.respond({':status': 200, 'content-type': 'text/plain'});
    stream.end('ok');
    stats.answered++;
  }, delay);
  stream.resume();
});

server.listen(0, '127.0.0.1', () => serveControl(server.address().port, () => stats, {
  reset: () => {
    stats.max_in_flight = stats.in_flight;
    return stats;
  },
}));
