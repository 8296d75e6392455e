// SPDX-License-Identifier: Apache-2.0
// An OTLP/HTTP JSON receiver for the OTLP exporter's tests, decoding with
// definitions nobody here wrote: OpenTelemetry JS's generated protobuf root
// (@opentelemetry/otlp-transformer, pinned in package-lock.json beside this
// file and installed into the build tree by `npm ci`).
//
//   node otlp_receiver.js --modules=<dir holding node_modules>
//
// Listens on 127.0.0.1 on a port of the OS's choosing and accepts POSTs to
// /v1/traces, /v1/metrics and /v1/logs with Content-Type application/json.
// Each body goes through the official message type:
//   1. trace, span and parent span ids, which OTLP's JSON writes as hex, are
//      checked (lower-case, 16 or 8 bytes) and turned into bytes, as
//      protobufjs expects of a bytes field;
//   2. fromObject, verify, encode to protobuf bytes, decode, toObject;
//   3. the result must equal the body (ids back in hex, 64-bit integers as
//      decimal strings, enums as numbers). fromObject ignores a field it
//      does not know and skips a value of the wrong JSON type, so a
//      misspelled field, a number where OTLP has a string, or an enum by a
//      name OTLP does not define shows up here as a difference, and the
//      request is refused with 400 and recorded as an error.
// A body that passes is answered 200 `{}` and kept as decoded.
//
//   --answer-first=503:3,429,502   the first requests are answered these
//                                  statuses instead, in order (after the
//                                  colon, a Retry-After in seconds)
//
// Control channel (peer_common.js): prints {"port": N}; each "stats" line
// is answered with {"received": [{"path", "request", "key"}...], "errors":
// [...], "answered": [{"path", "status", "key"}...]}: every request, its
// status and its Idempotency-Key, in arrival order.
'use strict';

const http = require('http');
const path = require('path');
const {createRequire} = require('module');
const {parseArgs, serveControl} = require('../peers/peer_common.js');

const args = parseArgs(process.argv.slice(2));
if (!args.modules) throw new Error('--modules=<dir> is required');
const requireFromBuild = createRequire(path.join(path.resolve(args.modules), 'package.json'));
let root;
try {
  root = requireFromBuild('@opentelemetry/otlp-transformer/build/src/generated/root');
} catch (e) {
  throw new Error(`cannot load @opentelemetry/otlp-transformer from ${args.modules} ` +
                  `(run npm ci there, as ctest's telemetry.otlp_receiver_npm_ci does): ${e.message}`);
}
const collector = root.opentelemetry.proto.collector;
const kTypes = {
  '/v1/traces': collector.trace.v1.ExportTraceServiceRequest,
  '/v1/metrics': collector.metrics.v1.ExportMetricsServiceRequest,
  '/v1/logs': collector.logs.v1.ExportLogsServiceRequest,
};
// OTLP's exception to proto3 JSON: these bytes fields are hex, not base64.
const kIdBytes = {traceId: 16, spanId: 8, parentSpanId: 8};

// A copy of `value` with every id field as bytes; throws on a malformed id.
function idsToBytes(value, where) {
  if (Array.isArray(value)) return value.map((v, i) => idsToBytes(v, `${where}[${i}]`));
  if (value === null || typeof value !== 'object') return value;
  const out = {};
  for (const [key, v] of Object.entries(value)) {
    if (key in kIdBytes) {
      const re = new RegExp(`^[0-9a-f]{${2 * kIdBytes[key]}}$`);
      if (typeof v !== 'string' || !re.test(v)) {
        throw new Error(`${where}.${key}: ${JSON.stringify(v)} is not ${kIdBytes[key]} bytes ` +
                        'of lower-case hex');
      }
      out[key] = Buffer.from(v, 'hex');
    } else {
      out[key] = idsToBytes(v, `${where}.${key}`);
    }
  }
  return out;
}

// toObject writes bytes as base64: the id fields back to hex.
function idsToHex(value) {
  if (Array.isArray(value)) return value.map(idsToHex);
  if (value === null || typeof value !== 'object') return value;
  const out = {};
  for (const [key, v] of Object.entries(value)) {
    out[key] = key in kIdBytes ? Buffer.from(v, 'base64').toString('hex') : idsToHex(v);
  }
  return out;
}

// proto3 JSON: an empty repeated field is the same as an absent one.
function withoutEmptyArrays(value) {
  if (Array.isArray(value)) return value.map(withoutEmptyArrays);
  if (value === null || typeof value !== 'object') return value;
  const out = {};
  for (const [key, v] of Object.entries(value)) {
    if (Array.isArray(v) && v.length === 0) continue;
    out[key] = withoutEmptyArrays(v);
  }
  return out;
}

// The first place `got` differs from `want`, or null.
function difference(want, got, where) {
  if (Array.isArray(want) || Array.isArray(got)) {
    if (!Array.isArray(want) || !Array.isArray(got)) return `${where}: array against non-array`;
    if (want.length !== got.length) return `${where}: ${want.length} items became ${got.length}`;
    for (let i = 0; i < want.length; ++i) {
      const d = difference(want[i], got[i], `${where}[${i}]`);
      if (d) return d;
    }
    return null;
  }
  if (want !== null && typeof want === 'object' && got !== null && typeof got === 'object') {
    for (const key of new Set([...Object.keys(want), ...Object.keys(got)])) {
      if (!(key in got)) return `${where}.${key} was sent but is not in the decoded message`;
      if (!(key in want)) return `${where}.${key} is in the decoded message but was not sent`;
      const d = difference(want[key], got[key], `${where}.${key}`);
      if (d) return d;
    }
    return null;
  }
  if (want !== got) {
    return `${where}: ${JSON.stringify(want)} (${typeof want}) decoded as ` +
           `${JSON.stringify(got)} (${typeof got})`;
  }
  return null;
}

// The request as the official type decodes it; throws with the reason when
// the body is not what OTLP defines.
function decode(Type, text) {
  const body = JSON.parse(text);
  const message = Type.fromObject(idsToBytes(body, 'body'));
  const invalid = Type.verify(message);
  if (invalid) throw new Error(`verify: ${invalid}`);
  const decoded = Type.decode(Type.encode(message).finish());
  const back = idsToHex(Type.toObject(decoded, {longs: String, enums: Number, bytes: String}));
  const d = difference(withoutEmptyArrays(body), back, 'body');
  if (d) throw new Error(d);
  return back;
}

const received = [];
const errors = [];
const answered = [];
const answerFirst = (args['answer-first'] || '').split(',').filter((a) => a).map((a) => {
  const [status, retryAfter] = a.split(':');
  return {status: Number(status), retryAfter};
});

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const key = req.headers['idempotency-key'];
    const scripted = answerFirst.shift();
    if (scripted) {
      answered.push({path: req.url, status: scripted.status, key});
      const headers = {'content-type': 'text/plain'};
      if (scripted.retryAfter) headers['retry-after'] = scripted.retryAfter;
      res.writeHead(scripted.status, headers);
      return res.end('as scripted');
    }
    const refuse = (status, why) => {
      answered.push({path: req.url, status, key});
      errors.push(`${req.method} ${req.url}: ${why}`);
      res.writeHead(status, {'content-type': 'text/plain'});
      res.end(why);
    };
    const Type = kTypes[req.url];
    if (req.method !== 'POST' || !Type) return refuse(404, 'not an OTLP path');
    const type = (req.headers['content-type'] || '').split(';')[0].trim();
    if (type !== 'application/json') return refuse(415, `content-type ${type}`);
    let request;
    try {
      request = decode(Type, Buffer.concat(chunks).toString('utf8'));
    } catch (e) {
      return refuse(400, e.message);
    }
    received.push({path: req.url, request, key});
    answered.push({path: req.url, status: 200, key});
    res.writeHead(200, {'content-type': 'application/json'});
    // --reject-spans=N: a partial success on traces, N spans rejected.
    if (req.url === '/v1/traces' && args['reject-spans']) {
      return res.end(JSON.stringify(
          {partialSuccess: {rejectedSpans: String(args['reject-spans']), errorMessage: 'over quota'}}));
    }
    res.end('{}');
  });
});

server.listen(0, '127.0.0.1', () => {
  serveControl(server.address().port, () => ({received, errors, answered}));
});
