import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { forkTracked } from './resources';

const ROOT = join(__dirname, '..', '..');

/** The ports the drain fixture serves. */
export interface DrainPorts {
  http: number;
  grpc: number;
  openai: number;
}

/** The drain fixture's server in a process of its own. */
export interface DrainServer {
  child: ChildProcess;
  ports: DrainPorts;
  /** Resolves with its exit code. */
  exited: Promise<number | null>;
}

/** What the drain fixture runs: its model's time per batch and largest batch, and settings as `TSTRITON_*` variables. */
export interface DrainServerOptions {
  /** The model's time per call, in ms (default 20). */
  delayMs?: number;
  /** The model's `maxBatchSize` (default 8). */
  maxBatchSize?: number;
  /** Environment variables besides this process's (`TSTRITON_HTTP_THREAD_COUNT`). */
  env?: NodeJS.ProcessEnv;
}

/**
 * Starts test/fixtures/drain/server.js (it stops on SIGTERM through serve()) and resolves once it serves. The child
 * is tracked: killed after the test if the test has not seen it exit, also when a hook times out.
 */
export function startDrainServer(options: DrainServerOptions = {}): Promise<DrainServer> {
  const { delayMs = 20, maxBatchSize = 8, env = {} } = options;
  const child = forkTracked(join(ROOT, 'test/fixtures/drain/server.js'), [String(delayMs), String(maxBatchSize)], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    execArgv: ['--require', join(ROOT, 'lib/instances/worker/register-ts.js')],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const ports = new Promise<DrainPorts>((resolve, reject) => {
    child.once('message', (m) => resolve(m as DrainPorts));
    child.once('exit', (code) => reject(new Error(`the server exited with ${code} before serving`)));
  });
  return ports.then((p) => ({ child, ports: p, exited }));
}

/**
 * The ids of the front-end threads of process `pid` (named `tstriton-fe-<n>`) with the bytes each has written so
 * far (Linux's per-thread count, its answers included).
 */
export function frontEndWrites(pid: number): Map<string, number> {
  const writes = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      if (!readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').startsWith('tstriton-f')) continue;
      const wchar = readFileSync(`/proc/${pid}/task/${tid}/io`, 'utf8').split('\n').find((l) => l.startsWith('wchar:'));
      writes.set(tid, Number(wchar?.slice('wchar:'.length)));
    } catch {
      // The thread ended meanwhile.
    }
  }
  return writes;
}
