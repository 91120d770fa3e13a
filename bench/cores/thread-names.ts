/**
 * Names for the threads of a benchmark server, given from inside it, so that the parent can group them by
 * `/proc/<pid>/task/<tid>/comm` (thread-cpu.ts). Newer Node names its threads itself; Node 20 leaves every
 * thread named after the process (`node`), so the server names the unnamed ones by when they appear:
 * the threads there before any script work are V8's platform (its worker threads, which run concurrent GC
 * marking and sweeping and background compiles, and its delayed-task thread; on Node 20 also the idle SIGUSR1
 * inspector thread), the threads that appear with the first thread-pool call are libuv's pool, and a worker
 * instance of this benchmark names its own thread. A thread that already has a name of its own keeps it.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { access } from 'node:fs/promises';

/** The names this file gives, as thread-cpu.ts groups them (at most 15 characters: the kernel's limit). */
export const THREAD_NAMES = { v8: 'v8-platform', libuv: 'libuv-worker', instance: 'instance' } as const;

const comm = (tid: string): string => readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim();
const tids = (): string[] => readdirSync('/proc/self/task');

/** Names `tid` (a thread of this process) unless it has a name other than the process's own. */
function nameIfUnnamed(tid: string, name: string): void {
  try {
    if (comm(tid) === comm(String(process.pid))) writeFileSync(`/proc/self/task/${tid}/comm`, name);
  } catch {
    // Not Linux, or the thread ended: the parent then finds it unnamed and counts it as "other".
  }
}

/**
 * Names the threads that exist now (V8's platform) and the libuv pool (started here by one thread-pool call).
 * Call first in the server, before anything that could start the pool; a pool already started is left unnamed.
 */
export async function nameStartupThreads(): Promise<void> {
  let before: string[];
  try {
    before = tids();
  } catch {
    return;
  }
  const main = String(process.pid);
  for (const tid of before) if (tid !== main) nameIfUnnamed(tid, THREAD_NAMES.v8);
  // Any call that goes through the pool starts all of its threads at once.
  await access(__filename);
  for (const tid of tids()) if (!before.includes(tid)) nameIfUnnamed(tid, THREAD_NAMES.libuv);
}

/** Names the calling thread (a worker instance's) `instance`, unless it has a name of its own. */
export function nameThisInstanceThread(): void {
  try {
    // In a worker thread, /proc/thread-self is that thread's task directory.
    const own = readFileSync('/proc/thread-self/comm', 'utf8').trim();
    if (own === readFileSync('/proc/self/comm', 'utf8').trim()) writeFileSync('/proc/thread-self/comm', THREAD_NAMES.instance);
  } catch {
    // Not Linux: the thread stays unnamed.
  }
}
