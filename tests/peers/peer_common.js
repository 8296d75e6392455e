// SPDX-License-Identifier: Apache-2.0
// What every peer script shares: its command line, a seeded random source,
// and the control channel to the test that started it.
//
// The control channel is the process's own stdin and stdout, never the wire
// under test, so asking for counts changes none of them:
//   - once listening, the peer prints one line: {"port": 41234}
//   - for each line "stats" read on stdin it prints one JSON line of counts;
//   - a script's own commands (h1_server.js's "release") answer likewise,
//     one JSON line each, once done; an unknown one answers {"error": ...};
//   - when stdin ends (the test destroyed its handle, or died) the peer exits,
//     so a crashed test never leaves a server behind.
'use strict';

// --name=value arguments as {name: value}; a bare --name is "true".
function parseArgs(argv) {
  const args = {};
  for (const arg of argv) {
    const m = /^--([^=]+)(?:=(.*))?$/.exec(arg);
    if (!m) throw new Error(`bad argument ${arg}: expected --name=value`);
    args[m[1]] = m[2] === undefined ? 'true' : m[2];
  }
  return args;
}

// A number argument, or `fallback` when absent.
function numberArg(args, name, fallback) {
  if (args[name] === undefined) return fallback;
  const n = Number(args[name]);
  if (!Number.isFinite(n)) throw new Error(`--${name} must be a number`);
  return n;
}

// mulberry32: a small seeded generator, so a failing run can be repeated
// with the same --seed.
function seededRandom(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Prints the port, then answers "stats" lines with stats() as JSON, and
// each line naming one of `commands` with what that function returns.
function serveControl(port, stats, commands = {}) {
  process.stdout.write(JSON.stringify({port}) + '\n');
  let pending = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (chunk) => {
    pending += chunk;
    let newline;
    while ((newline = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, newline).trim();
      pending = pending.slice(newline + 1);
      if (line === '') continue;
      let answer;
      if (line === 'stats') answer = stats();
      else if (Object.hasOwn(commands, line)) answer = commands[line]();
      else answer = {error: `unknown command ${line}`};
      process.stdout.write(JSON.stringify(answer) + '\n');
    }
  });
  process.stdin.on('end', () => process.exit(0));
}

// A write error on a socket the peer is tearing down is expected; anything
// else is a bug in the script and ends it loudly.
function ignoreSocketErrors(emitter) {
  emitter.on('error', () => {});
}

// Reads a request body as it comes, keeping only its size and SHA-256, and
// calls done("<bytes> <sha256 hex>"): what a test uploading a body larger
// than it would hold asks the stock server about (path /digest).
function digestBody(readable, done) {
  const hash = require('node:crypto').createHash('sha256');
  let bytes = 0;
  readable.on('data', (chunk) => {
    bytes += chunk.length;
    hash.update(chunk);
  });
  readable.on('end', () => done(`${bytes} ${hash.digest('hex')}`));
}

// Answers held part-way: hold(writable) writes "hello", the first 5 bytes
// of `body`'s length, on an answer whose headers are sent, and keeps it;
// release() writes the rest of `body` on each held answer, ends it, and
// returns {released: N}. Counts stats.held, stats.released, and
// stats.abandoned for a held answer closed before its release (the client
// reset the stream or closed the connection).
function holdAnswers(stats, body) {
  const waiting = new Set();
  return {
    hold(writable) {
      stats.held++;
      waiting.add(writable);
      writable.on('close', () => {
        if (waiting.delete(writable)) stats.abandoned++;
      });
      writable.write('hello');
    },
    release() {
      const released = waiting.size;
      for (const writable of waiting) writable.end(body.subarray(5));
      waiting.clear();
      stats.released += released;
      return {released};
    },
  };
}

// The body's byte at offset k: tests/http/text_source.h's PatternByte, so a
// test checks each byte where it lands, and a piece out of place shows.
function patternByte(k) {
  return 97 + ((k * 7 + Math.floor(k / 251)) % 26);
}

// Writes `bytes` of the pattern on an answer whose headers are sent, in
// 16 KiB chunks, each only once the last was taken (on 'drain' when write
// returns false), and ends it. stats.flushed counts a chunk's bytes once
// its write callback has run without an error: the transport below the
// writable has taken it (what that means for each protocol is said where
// the script documents its "flushed" stat). Stops if the answer closes.
function flood(writable, bytes, stats) {
  const kChunk = 16 * 1024;
  let at = 0;
  const next = () => {
    while (at < bytes) {
      if (writable.destroyed) return;
      const size = Math.min(kChunk, bytes - at);
      const chunk = Buffer.allocUnsafe(size);
      for (let i = 0; i < size; i++) chunk[i] = patternByte(at + i);
      at += size;
      const more = writable.write(chunk, (error) => {
        if (!error) stats.flushed += size;
      });
      if (!more) {
        writable.once('drain', next);
        return;
      }
    }
    writable.end();
  };
  next();
}

module.exports = {parseArgs, numberArg, seededRandom, serveControl, ignoreSocketErrors, digestBody,
                  holdAnswers, flood};
