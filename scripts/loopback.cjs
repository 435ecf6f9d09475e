// Preloaded with `node -r` in front of the local AWS servers. kinesis-local
// hard-codes 0.0.0.0 and offers no flag to change it, so every listening
// socket is forced onto the loopback interface here instead.
'use strict';
const net = require('net');
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  if (args.length === 0 || typeof first === 'function') {
    args.unshift(0, '127.0.0.1');
  } else if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    if (typeof args[1] === 'string') args[1] = '127.0.0.1';
    else args.splice(1, 0, '127.0.0.1');
  } else if (first && typeof first === 'object' && first.path === undefined && first.fd === undefined) {
    args[0] = Object.assign({}, first, { host: '127.0.0.1' });
  }
  return listen.apply(this, args);
};

// dynalite throws from a request's 'error' handler, so a client that closes
// its connection while dynalite still reads the request body ("aborted",
// ECONNRESET) kills the whole server, and every later test then fails with
// "connection refused". Clients do exactly that here: the tests' fault proxy
// drops connections, and kcltool's per-request deadlines cut requests off.
// Only that error is survived; any other still ends the server.
process.on('uncaughtException', (err) => {
  if (err && err.code === 'ECONNRESET' && err.message === 'aborted') {
    return; // the client went away; there is no one left to answer
  }
  console.error(err);
  process.exit(1);
});
