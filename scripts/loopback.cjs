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
