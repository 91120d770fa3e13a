// Preloaded into every child process a test starts (`--require` through NODE_OPTIONS, see resources.ts): the child
// ends itself once the process that started it is gone, so that a test run killed in the middle (jest's worker
// crashing, CI's deadline, Ctrl-C) leaves no server behind holding a port. Node has no "die with the parent" option;
// an orphan is given a new parent, so the child watches its parent process id change. Plain JavaScript: it runs
// before any TypeScript hook is registered.
'use strict';
const { isMainThread } = require('node:worker_threads');

if (isMainThread) {
  const parent = process.ppid;
  setInterval(() => {
    // SIGKILL, not exit(): an orphan's shutdown could wait on clients that no longer exist.
    if (process.ppid !== parent) process.kill(process.pid, 'SIGKILL');
  }, 500).unref();
}
