// SPDX-License-Identifier: Apache-2.0
// bench/run's server of bodies sent without a length: every request on the
// HTTPS (HTTP/1.1, chunked) and HTTP/2 (no content-length) ports it prints
// as {"h1":P,"h2":Q} is answered 200 with BYTES bytes, written as fast as
// the client reads them. Usage: node unannounced_body_server.js CERT KEY BYTES
'use strict';
const fs = require('fs');
const https = require('https');
const http2 = require('http2');

const [cert, key, bytes] = process.argv.slice(2);
const total = Number(bytes);
const chunk = Buffer.alloc(64 * 1024, 'x');
const options = {cert: fs.readFileSync(cert), key: fs.readFileSync(key)};

function send(res) {
  let sent = 0;
  const more = () => {
    while (sent < total) {
      sent += chunk.length;
      if (!res.write(chunk)) return res.once('drain', more);
    }
    res.end();
  };
  res.writeHead(200);
  more();
}

const h1 = https.createServer(options, (req, res) => send(res));
const h2 = http2.createSecureServer(options, (req, res) => send(res));
h1.on('clientError', () => {});
h2.on('sessionError', () => {});
h1.listen(0, '127.0.0.1', () => h2.listen(0, '127.0.0.1', () => {
  console.log(JSON.stringify({h1: h1.address().port, h2: h2.address().port}));
}));
