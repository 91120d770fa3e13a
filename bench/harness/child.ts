/**
 * The child side of a benchmark process (a server, or a direct onnxruntime runner): reports `ready` with the
 * port it listens on, answers CPU-time queries and calls, and stops, exiting cleanly so that `--cpu-prof` can
 * write its profile, when told to or when the parent goes away. child-proc.ts is the parent side.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** What a started child gives runChild: its port, its stop, and the calls it answers. */
export interface ChildHandle {
  /** The port the child listens on; 0 for children that serve nothing. */
  port: number;
  stop(): Promise<void>;
  /** Answers the parent's `call` messages. */
  call?(payload: unknown): Promise<unknown>;
}

/** Per thread (by Linux thread id): nanoseconds on a CPU and waiting on a run queue, from /proc/self/task/<tid>/schedstat. */
export type ThreadTimes = Record<string, [runNs: number, waitNs: number]>;

/** Child to parent: ready (or failed to start), a CPU reading, a call's reply. */
export type ChildMessage =
  | { type: 'ready'; port: number }
  | { type: 'error'; message: string }
  | { type: 'cpu'; id: number; user: number; system: number; pid: number; threads: ThreadTimes }
  | { type: 'reply'; id: number; value?: unknown; error?: string };

/** Parent to child: read the CPU time, make a call, stop. */
export type ParentMessage = { type: 'cpu'; id: number } | { type: 'call'; id: number; payload: unknown } | { type: 'stop' };

/** Every thread's CPU and run-queue wait time so far (Linux; empty elsewhere). */
function threadTimes(): ThreadTimes {
  const out: ThreadTimes = {};
  let tids: string[];
  try {
    tids = readdirSync('/proc/self/task');
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const [run, wait] = readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').trim().split(/\s+/).map(Number);
      out[tid] = [run ?? 0, wait ?? 0];
    } catch {
      // The thread ended meanwhile.
    }
  }
  return out;
}

const describe = (err: unknown): string => (err instanceof Error ? (err.stack ?? err.message) : String(err));

/** Starts what this child runs and serves the parent's messages until told to stop. */
export function runChild(start: () => Promise<ChildHandle>): void {
  const send = (m: ChildMessage) => process.send?.(m);
  start().then(
    (handle) => {
      process.on('message', (m: ParentMessage) => {
        if (m.type === 'cpu') {
          const { user, system } = process.cpuUsage();
          send({ type: 'cpu', id: m.id, user, system, pid: process.pid, threads: threadTimes() });
        } else if (m.type === 'call') {
          const call = handle.call ?? (() => Promise.reject(new Error('this child takes no calls')));
          call(m.payload).then(
            (value) => send({ type: 'reply', id: m.id, value }),
            (err: unknown) => send({ type: 'reply', id: m.id, error: describe(err) }),
          );
        } else if (m.type === 'stop') {
          void handle.stop().finally(() => process.exit(0));
        }
      });
      // The parent going away must not leave a server behind.
      process.on('disconnect', () => process.exit(0));
      send({ type: 'ready', port: handle.port });
    },
    (err: unknown) => {
      send({ type: 'error', message: describe(err) });
      process.exit(1);
    },
  );
}
