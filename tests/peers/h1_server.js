// SPDX-License-Identifier: Apache-2.0
// A stock Node HTTP/1.1 server over TLS (https.createServer, keep-alive as
// Node does by default) that can drop a request on a reused connection: it
// reads the request whole, records it, then closes or resets the connection
// without answering. That is the moment a client cannot know whether the
// request was processed, so a request not safe to repeat must not be sent
// again.
//
//   node h1_server.js --cert=chain.pem --key=key.pem [options]
//
// Answers with 200 and a 100-byte body; on /too-large, 413 at once
// without reading the request's body, closing the connection; on
// /trailers, chunked with a trailer field (x-checksum) after it; on
// /to-close and /to-reset, a body
// of neither length nor chunks, 50 bytes of it, then the connection ends:
// with a FIN (the body is whole), or with a TCP RST (it is cut short); on /stall, its headers (a 100-byte
// length) and the body's first 5 bytes, "hello", then nothing more until
// the client goes; on /held, the same, and the body's other 95 bytes once
// the test sends "release" (it answers {"released": N}, the answers it
// finished); on /flood, --flood-bytes of tests/http/text_source.h's
// pattern, with its length, in 16 KiB chunks, each written once the last
// was taken. Options:
//   --drop=close|reset     drop requests that are not the first on their
//   --drop-methods=M,M     connection, of these methods (POST): close sends
//                          FIN, reset sends TCP RST; off by default
//   --flood-bytes=N        /flood's body size (8 MiB)
//
// Node says in each answer that it keeps an idle connection 5 s
// (`Keep-Alive: timeout=5`; Node 20.20 closes it a second after that).
//
// "stats" on stdin prints: connections (accepted), open (open now),
// client_closed (connections whose end came from the client: its TLS
// stream ended, where Node's own close of an idle one ends none), requests,
// answered, dropped,
// stalled (answers left at 5 bytes), abandoned (of those, the ones whose
// connection the client has closed since; /held answers too), held (/held
// answers started), released, bodies ({body: {received, answered,
// dropped}}) for requests with a body, and flushed (bytes of /flood answers
// whose write callbacks have run: TLS has encrypted them and the kernel has
// taken the records into the TCP socket's send buffer, so what the client
// has not read waits in that buffer and the client's receive buffer).
'use strict';
const fs = require('node:fs');
const https = require('node:https');
const {parseArgs, numberArg, serveControl, ignoreSocketErrors, digestBody, holdAnswers, flood} =
    require('./peer_common.js');

const args = parseArgs(process.argv.slice(2));
const body = Buffer.alloc(100, 'x');
const tooLarge = Buffer.from('request body too large\n');  // /too-large's answer
const drop = args.drop || '';
const dropMethods = (args['drop-methods'] || 'POST').split(',');
const floodBytes = numberArg(args, 'flood-bytes', 8 * 1024 * 1024);

const stats = {connections: 0, open: 0, client_closed: 0, requests: 0, answered: 0, dropped: 0, stalled: 0, abandoned: 0,
               held: 0, released: 0, bodies: {}, flushed: 0};
const held = holdAnswers(stats, body);

const server = https.createServer({cert: fs.readFileSync(args.cert), key: fs.readFileSync(args.key)});

// The TCP socket under each TLS connection, found by the client's port, and
// how many requests each connection has carried.
const tcpByPort = new Map();
const requestsByPort = new Map();
server.on('connection', (tcp) => {
  const port = tcp.remotePort;
  stats.connections++;
  stats.open++;
  tcpByPort.set(port, tcp);
  requestsByPort.set(port, 0);
  tcp.on('close', () => {
    stats.open--;
    tcpByPort.delete(port);
    requestsByPort.delete(port);
  });
  ignoreSocketErrors(tcp);
});
server.on('secureConnection', (tls) => tls.on('end', () => stats.client_closed++));
server.on('tlsClientError', () => {});

server.on('request', (req, res) => {
  const port = req.socket.remotePort;
  const index = (requestsByPort.get(port) || 0) + 1;
  requestsByPort.set(port, index);
  stats.requests++;
  if (req.url === '/too-large') {
    // 413 at once, the request body unread, as a server with a size limit
    // answers an upload past it; Node then closes the connection.
    res.writeHead(413, {'content-length': tooLarge.length, 'connection': 'close'});
    res.end(tooLarge);
    return;
  }
  if (req.url === '/digest') {
    digestBody(req, (digest) => {
      res.writeHead(200, {'content-length': digest.length});
      res.end(digest);
    });
    return;
  }
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const text = Buffer.concat(chunks).toString();
    let record = null;
    if (text.length > 0) {
      record = stats.bodies[text] || (stats.bodies[text] = {received: 0, answered: 0, dropped: 0});
      record.received++;
    }
    if (drop && index > 1 && dropMethods.includes(req.method)) {
      stats.dropped++;
      if (record) record.dropped++;
      const tcp = tcpByPort.get(port) || req.socket;
      if (drop === 'reset' && tcp !== req.socket) tcp.resetAndDestroy();
      else tcp.destroy();
      return;
    }
    if (req.url === '/held') {
      res.writeHead(200, {'content-length': body.length});
      held.hold(res);
      return;
    }
    if (req.url === '/stall') {
      stats.stalled++;
      res.on('close', () => stats.abandoned++);  // never finished: the client went
      res.writeHead(200, {'content-length': body.length});
      res.write('hello');
      return;
    }
    if (req.url === '/flood') {
      res.writeHead(200, {'content-length': floodBytes});
      flood(res, floodBytes, stats);
      return;
    }
    stats.answered++;
    if (record) record.answered++;
    if (req.url === '/to-close' || req.url === '/to-reset') {
      // No length, not chunked: the body runs to the connection's end
      // (RFC 9112 §6.3 rule 8). Half of it, then a FIN, or a TCP RST,
      // which cuts the body short.
      res.useChunkedEncodingByDefault = false;
      res.writeHead(200, {'connection': 'close'});
      res.write(body.subarray(0, 50), () => {
        const tcp = tcpByPort.get(port);
        if (req.url === '/to-close' || !tcp) res.end();
        else setTimeout(() => tcp.resetAndDestroy(), 50);  // the half has gone out first
      });
      return;
    }
    if (req.url === '/trailers') {
      res.writeHead(200, {'trailer': 'x-checksum'});
      res.addTrailers({'x-checksum': 'sha256=abc'});
      res.end(body);
      return;
    }
    res.writeHead(200, {'content-length': body.length});
    res.end(body);
  });
});

server.listen(0, '127.0.0.1',
              () => serveControl(server.address().port, () => stats, {release: held.release}));
