// SPDX-License-Identifier: Apache-2.0
// A stock Node http2 server (http2.createSecureServer: TLS, ALPN h2), with
// the faults a real deployment produces switched on by flags. Everything on
// the wire is Node's and nghttp2's own; the script only decides when to
// answer, refuse a stream or drop a connection.
//
//   node h2_server.js --cert=chain.pem --key=key.pem [options]
//
// Answers every request with 200 and a body of --body-bytes (100) bytes
// (on /trailers, without a length and with a trailer field, x-checksum; on
// /too-large, 413 on the next turn, without reading the request's body; on
// /too-large-cancel, the same, then RST_STREAM CANCEL once the answer is
// written, as HAProxy stops an upload it has answered; on /too-large-close,
// the same, then the connection's end (a FIN, no GOAWAY) instead; on
// /stall, with its length but only the first 5 bytes, "hello", and then
// nothing until the client resets the stream or goes; on /held, the same,
// and the rest of the body once the test sends "release", which answers
// {"released": N}, the answers it finished; on /flood, --flood-bytes of
// tests/http/text_source.h's pattern, with its length, in 16 KiB chunks,
// each written once the last was taken).
// Options (all off by default):
//   --plain                     HTTP/2 without TLS, prior knowledge only
//                               (http2.createServer, "h2c"); --cert and
//                               --key are then unused
//   --max-concurrent-streams=N  SETTINGS_MAX_CONCURRENT_STREAMS we advertise
//   --max-header-list-size=N    SETTINGS_MAX_HEADER_LIST_SIZE we advertise
//   --delay-ms=D                /slow always, and --delay-percent of the
//   --delay-percent=P           other streams, are answered D ms late
//   --refuse-every=N            every Nth stream (server-wide; 1 = all) is
//   --refuse-percent=P          refused, or P % at random: RST_STREAM
//                               REFUSED_STREAM before reading it
//   --lose-after-streams=N      a connection is lost (see --lose-how) once
//   --lose-delay-ms=D           its Nth stream has arrived, D ms later, with
//   --lose-connections=M        its streams open; at most M connections
//   --lose-how=close|reset      close: FIN without GOAWAY; reset: TCP RST
//   --drop-post                 a POST is read whole, recorded, then its
//                               connection is lost without an answer
//   --lifetime=MIN:MAX          each connection is closed gracefully (GOAWAY,
//                               open streams finish) after a random number
//                               of streams in [MIN, MAX]
//   --reset-percent=P           P % of connections are lost instead (TCP
//                               RST, streams open) after a random number of
//                               streams in [1, MIN] (needs --lifetime)
//   --status=N                  the status of every answer but /held,
//                               /stall, /flood, /trailers and /too-large (200)
//   --seed=S                    the random source's seed (1)
//   --flood-bytes=N             /flood's body size (8 MiB)
//   --host=A --port=N           where to listen (127.0.0.1, a free port): a
//                               replica on 127.0.0.2, one restarted on its
//                               old port
//
// "stats" on stdin prints: sessions (connections accepted), open
// (connections open now), streams (handed to the script; streams nghttp2
// refuses on its own above SETTINGS_MAX_CONCURRENT_STREAMS never reach it),
// refused, answered, delayed, lost, closed (gracefully), max_open (most
// streams open at once on one connection), stalled (/stall answers left at
// 5 bytes), abandoned (of those, the ones closed since: the client reset
// them or went; /held answers too), held (/held answers started), released,
// bodies ({body: {received, answered, dropped}}), cancelled_after_answer
// (/too-large-cancel answers reset with CANCEL), client_goaways (GOAWAY
// frames the client sent), client_goaway_errors (those of them with an
// error code other than NO_ERROR), flushed (bytes of /flood
// answers whose write callbacks have run). An http2 stream's write callback
// runs once nghttp2 has framed the chunk as DATA and the session's write of
// those frames to the socket has completed (Node 20, src/node_http2.cc:
// Http2Stream::DoWrite queues the chunk with its write request on the
// stream; nghttp2 pulls it only as far as the client's stream and
// connection flow-control windows let it send; Http2Session::OnSendData
// moves it to the session's outgoing buffers, and ClearOutgoing completes
// the request once the socket write is done). So flushed never counts a
// byte the client's windows did not let Node send.
'use strict';
const fs = require('node:fs');
const http2 = require('node:http2');
const {parseArgs, numberArg, seededRandom, serveControl, ignoreSocketErrors, digestBody,
       holdAnswers, flood} = require('./peer_common.js');

const args = parseArgs(process.argv.slice(2));
const body = Buffer.alloc(numberArg(args, 'body-bytes', 100), 'x');
const tooLarge = Buffer.from('request body too large\n');  // /too-large's answer
const delayMs = numberArg(args, 'delay-ms', 0);
const delayPercent = numberArg(args, 'delay-percent', 0);
const refuseEvery = numberArg(args, 'refuse-every', 0);
const refusePercent = numberArg(args, 'refuse-percent', 0);
const loseAfterStreams = numberArg(args, 'lose-after-streams', 0);
const loseDelayMs = numberArg(args, 'lose-delay-ms', 0);
const loseConnections = numberArg(args, 'lose-connections', Infinity);
const loseHow = args['lose-how'] || 'close';
const dropPost = args['drop-post'] === 'true';
const lifetime = args.lifetime ? args.lifetime.split(':').map(Number) : null;
const resetPercent = numberArg(args, 'reset-percent', 0);
const random = seededRandom(numberArg(args, 'seed', 1));
const floodBytes = numberArg(args, 'flood-bytes', 8 * 1024 * 1024);
const status = numberArg(args, 'status', 200);

const settings = {};
if (args['max-concurrent-streams'] !== undefined) {
  settings.maxConcurrentStreams = numberArg(args, 'max-concurrent-streams');
}
if (args['max-header-list-size'] !== undefined) {
  settings.maxHeaderListSize = numberArg(args, 'max-header-list-size');
}

const stats = {sessions: 0, open: 0, streams: 0, refused: 0, answered: 0, delayed: 0, lost: 0, closed: 0,
               max_open: 0, stalled: 0, abandoned: 0, held: 0, released: 0, bodies: {}, flushed: 0,
               client_goaways: 0, client_goaway_errors: 0, cancelled_after_answer: 0};
const held = holdAnswers(stats, body);

const server = args.plain === 'true'
    ? http2.createServer({settings})
    : http2.createSecureServer(
          {cert: fs.readFileSync(args.cert), key: fs.readFileSync(args.key), settings});

// session.socket is a proxy that refuses destroy(); a lost connection is
// made on the TCP socket underneath, found by the client's port.
const tcpByPort = new Map();
server.on('connection', (tcp) => {
  const port = tcp.remotePort;
  tcpByPort.set(port, tcp);
  tcp.on('close', () => tcpByPort.delete(port));
  ignoreSocketErrors(tcp);
});

// Drops a connection as a crash or a load balancer would: no GOAWAY.
function lose(session) {
  if (session.lost || session.destroyed) return;
  session.lost = true;
  stats.lost++;
  const tcp = tcpByPort.get(session.socket.remotePort);
  if (!tcp) return session.destroy();
  if (loseHow === 'reset') tcp.resetAndDestroy();
  else tcp.destroy();
}

server.on('session', (session) => {
  stats.sessions++;
  stats.open++;
  session.on('close', () => stats.open--);
  session.on('goaway', (errorCode) => {
    stats.client_goaways++;
    if (errorCode !== http2.constants.NGHTTP2_NO_ERROR) stats.client_goaway_errors++;
  });
  session.streamCount = 0;
  session.open = 0;
  session.live = 0;  // streams not yet closed, refused ones too
  if (lifetime) {
    const [min, max] = lifetime;
    session.lifetime = min + Math.floor(random() * (max - min + 1));
    session.abrupt = random() * 100 < resetPercent;
    if (session.abrupt) session.lifetime = 1 + Math.floor(random() * min);
  }
  session.on('error', () => {});
});

function answer(stream, path) {
  if (stream.destroyed || stream.closed) return;
  if (path === '/held') {
    stream.respond({':status': 200, 'content-length': body.length});
    held.hold(stream);
    return;
  }
  if (path === '/stall') {
    stats.stalled++;
    stream.on('close', () => stats.abandoned++);  // never ended: the client went
    stream.respond({':status': 200, 'content-length': body.length});
    stream.write('hello');
    return;
  }
  if (path === '/flood') {
    stream.respond({':status': 200, 'content-length': floodBytes});
    flood(stream, floodBytes, stats);
    return;
  }
  if (path === '/trailers') {
    stream.respond({':status': 200}, {waitForTrailers: true});
    stream.on('wantTrailers', () => stream.sendTrailers({'x-checksum': 'sha256=abc'}));
  } else {
    stream.respond({':status': status, 'content-length': body.length});
  }
  stream.end(body);
  stats.answered++;
}

// Ends a connection gracefully: a GOAWAY naming the last stream it will
// process, then the connection closes once every stream up to it has.
// Not session.close(): Node then refuses streams still arriving from
// inside nghttp2's reading of their HEADERS, which frees each stream under
// nghttp2 (valgrind: a read after free in nghttp2_session_mem_recv2; it
// corrupted Node 20's heap within 10^4 to 10^5 calls of the soak).
function retire(session) {
  if (session.destroyed || session.retiredAfter !== undefined) return;
  session.retiredAfter = session.highestStream;
  session.goaway(http2.constants.NGHTTP2_NO_ERROR, session.retiredAfter);
  closeIfRetiredAndDone(session);
}

function closeIfRetiredAndDone(session) {
  if (session.retiredAfter !== undefined && session.live === 0 && !session.destroyed) {
    setImmediate(() => session.destroy());
  }
}

server.on('stream', (stream, headers) => {
  const session = stream.session;
  stream.on('error', () => {});
  // Above a GOAWAY's last stream: never processed; the client sends it
  // again elsewhere, and it goes with the connection.
  if (session.retiredAfter !== undefined && stream.id > session.retiredAfter) return;
  stats.streams++;
  session.streamCount++;
  session.highestStream = stream.id;
  session.live++;
  stream.on('close', () => {
    session.live--;
    closeIfRetiredAndDone(session);
  });

  // What happens to the connection once this stream has arrived.
  if (loseAfterStreams > 0 && session.streamCount === loseAfterStreams &&
      stats.lost < loseConnections) {
    setTimeout(() => lose(session), loseDelayMs);
  }
  if (lifetime && session.streamCount === session.lifetime) {
    if (session.abrupt) {
      setImmediate(() => lose(session));
    } else {
      stats.closed++;
      setImmediate(() => retire(session));
    }
  }

  // A refusal comes before anything of the request is read: nothing processed.
  const refuse = (refuseEvery > 0 && stats.streams % refuseEvery === 0) ||
                 (refusePercent > 0 && random() * 100 < refusePercent);
  if (refuse) {
    stats.refused++;
    // On the next turn, not here: this handler runs inside nghttp2's
    // reading of the HEADERS frame, and a reset sent from here frees the
    // stream under it (see retire). Nothing of it is read meanwhile.
    setImmediate(() => stream.close(http2.constants.NGHTTP2_REFUSED_STREAM));
    return;
  }

  session.open++;
  stats.max_open = Math.max(stats.max_open, session.open);
  stream.on('close', () => session.open--);

  const method = headers[':method'];
  const path = headers[':path'];
  if (path === '/too-large' || path === '/too-large-cancel' || path === '/too-large-close') {
    // 413 on the next turn (not from inside nghttp2's reading of the
    // HEADERS, see the refusal below), the request body unread, as a server
    // with a size limit answers an upload past it; Node then resets the
    // stream (NO_ERROR), or we do with CANCEL once the answer's bytes are
    // written (the write callback runs then: see "flushed" below).
    setImmediate(() => {
      if (stream.destroyed || stream.closed) return;
      stream.respond({':status': 413, 'content-length': tooLarge.length});
      if (path === '/too-large') return stream.end(tooLarge);
      if (path === '/too-large-close') {
        // A FIN under TLS (the session's own socket may not be ended): the
        // client's upload is still read, so no RST takes the answer away.
        return stream.end(tooLarge, () => tcpByPort.get(stream.session.socket.remotePort)?.end());
      }
      stream.end(tooLarge, () => {
        stream.close(http2.constants.NGHTTP2_CANCEL);
        // What went on the wire: CANCEL, unless Node's own reset came first.
        stream.on('close', () => {
          if (stream.rstCode === http2.constants.NGHTTP2_CANCEL) stats.cancelled_after_answer++;
        });
      });
    });
    return;
  }
  if (path === '/digest') {
    digestBody(stream, (digest) => {
      if (stream.destroyed || stream.closed) return;
      stream.respond({':status': 200, 'content-length': digest.length});
      stream.end(digest);
    });
    return;
  }
  const chunks = [];
  stream.on('data', (chunk) => chunks.push(chunk));
  stream.on('end', () => {
    let record = null;
    if (method === 'POST') {
      const text = Buffer.concat(chunks).toString();
      record = stats.bodies[text] || (stats.bodies[text] = {received: 0, answered: 0, dropped: 0});
      record.received++;
      if (dropPost) {
        record.dropped++;
        setImmediate(() => lose(session));
        return;
      }
    }
    const delayed = path === '/slow' ? delayMs > 0 :
                                       delayPercent > 0 && random() * 100 < delayPercent;
    const finish = () => {
      if (record && !stream.destroyed) record.answered++;
      answer(stream, path);
    };
    if (delayed) {
      stats.delayed++;
      setTimeout(finish, delayMs);
    } else {
      finish();
    }
  });
});

server.listen(numberArg(args, 'port', 0), args.host || '127.0.0.1',
              () => serveControl(server.address().port, () => stats, {release: held.release}));
