// SPDX-License-Identifier: Apache-2.0
// A gRPC server on grpc-js (@grpc/grpc-js, an implementation nobody here
// wrote) serving tests/rpc/echo.proto's Echo.Say on 127.0.0.1, plain text.
//
//   node grpc_js_peer.js --modules=<dir holding node_modules> \
//        --answers=UNAVAILABLE,RESOURCE_EXHAUSTED:2000,OK [--host=A] [--port=N]
//
// --host and --port say where to listen (127.0.0.1 and a free port by
// default): a replica on 127.0.0.2, or one started again on its old port.
// Call n gets answers[n-1] (the last one repeats): a status code name, with
// an optional grpc-retry-pushback-ms after a colon; OK echoes the text;
// HANG never answers (until the client goes away).
// Control channel as in tests/peers/peer_common.js; stats: {"calls": n,
// "cancelled": calls the client left unanswered, "held": calls held since
// "hold", "last": what the last call carried: its traceparent and baggage
// metadata, and the milliseconds its deadline (grpc-timeout) left when it
// arrived, or null without one}. The command "hold" makes every call from
// then on wait unanswered (as HANG does), so a test that kills the server
// once it holds some kills it with calls open and no answer half-written.
'use strict';
const path = require('path');
const {numberArg, parseArgs, serveControl} = require('../peers/peer_common.js');

const args = parseArgs(process.argv.slice(2));
const modules = path.join(args.modules, 'node_modules');
const grpc = require(path.join(modules, '@grpc/grpc-js'));
const loader = require(path.join(modules, '@grpc/proto-loader'));

const definition = loader.loadSync(path.join(__dirname, 'echo.proto'));
const echo = grpc.loadPackageDefinition(definition).outbound.test.Echo;
const answers = (args.answers || 'OK').split(',');
let calls = 0;
let cancelled = 0;
let held = 0;
let holding = false;
let last = null;

function say(call, callback) {
  calls += 1;
  const deadline = call.getDeadline();
  last = {
    traceparent: call.metadata.get('traceparent').join(','),
    baggage: call.metadata.get('baggage').join(','),
    deadline_ms: Number.isFinite(Number(deadline)) ? Number(deadline) - Date.now() : null,
  };
  // grpc-js emits 'cancelled' as any stream closes, an answered one's too.
  let answered = false;
  call.on('cancelled', () => {
    if (!answered) cancelled += 1;
  });
  if (holding) {
    held += 1;
    return;
  }
  const [name, pushback] = answers[Math.min(calls, answers.length) - 1].split(':');
  if (name === 'HANG') return;
  answered = true;
  if (name === 'OK') return callback(null, {text: 'echo: ' + call.request.text});
  const metadata = new grpc.Metadata();
  if (pushback !== undefined) metadata.set('grpc-retry-pushback-ms', pushback);
  callback({code: grpc.status[name], details: name.toLowerCase(), metadata});
}

const server = new grpc.Server();
server.addService(echo.service, {Say: say});
const where = `${args.host || '127.0.0.1'}:${numberArg(args, 'port', 0)}`;
server.bindAsync(where, grpc.ServerCredentials.createInsecure(), (err, port) => {
  if (err) throw err;
  serveControl(port, () => ({calls, cancelled, held, last}), {
    hold: () => {
      holding = true;
      return {holding};
    },
  });
});
