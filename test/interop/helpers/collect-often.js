// Preloaded (node --require) into every thread of a server under test, front-end threads included (a worker
// inherits the process's execArgv): a full garbage collection every few milliseconds, so that a buffer the server
// still needs but no longer references is collected at once rather than by chance.
const v8 = require('node:v8');
const vm = require('node:vm');

// The flag is the process's: threads starting together can turn it off under each other, and a thread that
// misses it (a model's instance thread) then runs without the collections rather than failing to start.
let gc;
try {
  v8.setFlagsFromString('--expose-gc');
  gc = vm.runInNewContext('typeof gc === "function" ? gc : undefined');
} finally {
  v8.setFlagsFromString('--no-expose-gc');
}
if (gc) setInterval(() => gc({ type: 'major' }), 3).unref();
