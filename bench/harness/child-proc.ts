/**
 * The parent side of benchmark child processes: starting `node` scripts (pinned to a CPU with taskset when
 * asked), waiting for a child's `ready`, reading its CPU time, calling it, stopping it, and killing whatever is
 * left when the run ends. child.ts is the child side.
 */
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { existsSync } from 'node:fs';
import * as os from 'node:os';
import type { ChildMessage, ParentMessage, ThreadTimes } from './child';

const children: ChildProcess[] = [];

/** How spawnNode runs a script. */
export interface SpawnOptions {
  /** Arguments after the script. */
  args?: string[];
  /** Arguments to node itself, before the script (`--cpu-prof`). */
  nodeArgs?: string[];
  /** Pins the process to this CPU with taskset. */
  cpu?: number;
  /** The child's environment (this process's when absent). */
  env?: NodeJS.ProcessEnv;
}

/** Runs `script` (a compiled .js file) in a new node process with an IPC channel. */
export function spawnNode(script: string, options: SpawnOptions = {}): ChildProcess {
  const argv = [...(options.nodeArgs ?? []), script, ...(options.args ?? [])];
  const stdio: StdioOptions = ['ignore', 'inherit', 'inherit', 'ipc'];
  const env = options.env ?? process.env;
  const child =
    options.cpu === undefined
      ? spawn(process.execPath, argv, { stdio, env })
      : spawn('taskset', ['-c', String(options.cpu), process.execPath, ...argv], { stdio, env });
  children.push(child);
  return child;
}

/** Kills every process spawnNode started that is still running. */
export function killChildren(): void {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
}

/** Whether servers and the load generator can be pinned to CPUs of their own: two or more CPUs, and taskset. */
export function canPin(): boolean {
  return os.availableParallelism() >= 2 && ['/usr/bin/taskset', '/bin/taskset'].some((p) => existsSync(p));
}

/** A child's CPU use so far: user + system µs (process), and per thread (run and run-queue wait ns). */
export interface Usage {
  cpuMicros: number;
  pid: number;
  threads: ThreadTimes;
}

/** What a child's threads did between two readings. */
export interface UsageDelta {
  /** Process CPU (user + system), µs. */
  cpuMicros: number;
  /** Summed over threads: on a CPU, and runnable but waiting for one (ns). */
  runNs: number;
  waitNs: number;
  /** The main thread's run / wait, and the busiest other thread's (a worker), ns. */
  main: [number, number];
  busiest: [number, number];
}

/** What the child's threads did from reading `a` to reading `b`. */
export function usageDelta(a: Usage, b: Usage): UsageDelta {
  let runNs = 0;
  let waitNs = 0;
  let main: [number, number] = [0, 0];
  let busiest: [number, number] = [0, 0];
  for (const [tid, [run, wait]] of Object.entries(b.threads)) {
    const [run0, wait0] = a.threads[tid] ?? [0, 0];
    const d: [number, number] = [run - run0, wait - wait0];
    runNs += d[0];
    waitNs += d[1];
    if (Number(tid) === b.pid) main = d;
    else if (d[0] > busiest[0]) busiest = d;
  }
  return { cpuMicros: b.cpuMicros - a.cpuMicros, runNs, waitNs, main, busiest };
}

/** How ChildProc.start runs a child and how long it waits for it. */
export interface StartOptions extends SpawnOptions {
  /** How long the child may take to report `ready` (default 60 s). */
  readyTimeoutMs?: number;
}

/** A child built on `runChild`: a server (with its port) or a runner taking calls. */
export class ChildProc {
  private nextId = 0;
  private readonly pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();

  private constructor(
    readonly name: string,
    readonly proc: ChildProcess,
    readonly port: number,
  ) {
    proc.on('message', (m: ChildMessage) => {
      if (m.type !== 'cpu' && m.type !== 'reply') return;
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (m.type === 'cpu') p.resolve({ cpuMicros: m.user + m.system, pid: m.pid, threads: m.threads } satisfies Usage);
      else if (m.error !== undefined) p.reject(new Error(`${name}: ${m.error}`));
      else p.resolve(m.value);
    });
    proc.once('exit', (code, signal) => {
      for (const p of this.pending.values()) p.reject(new Error(`${name} exited (${code ?? signal}) during a call`));
      this.pending.clear();
    });
  }

  /** Starts `script` and resolves once it reports `ready`. */
  static start(name: string, script: string, options: StartOptions = {}): Promise<ChildProc> {
    const timeoutMs = options.readyTimeoutMs ?? 60_000;
    const proc = spawnNode(script, options);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${name}: not ready within ${timeoutMs / 1000} s`)), timeoutMs);
      const onExit = (code: number | null) => reject(new Error(`${name} exited with code ${code} before it was ready`));
      proc.once('exit', onExit);
      proc.on('message', function onMessage(m: ChildMessage) {
        if (m.type === 'ready') {
          clearTimeout(timer);
          proc.off('message', onMessage);
          proc.off('exit', onExit);
          resolve(new ChildProc(name, proc, m.port));
        } else if (m.type === 'error') {
          clearTimeout(timer);
          reject(new Error(`${name}: ${m.message}`));
        }
      });
    });
  }

  private request<T>(make: (id: number) => ParentMessage): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.proc.send(make(id));
    });
  }

  /** CPU time the child has used so far, in all and per thread. */
  usage(): Promise<Usage> {
    return this.request<Usage>((id) => ({ type: 'cpu', id }));
  }

  call<T>(payload: unknown): Promise<T> {
    return this.request<T>((id) => ({ type: 'call', id, payload }));
  }

  /** Asks the child to stop, and kills it if it has not exited 10 s later. */
  stop(): Promise<void> {
    return new Promise((resolve) => {
      if (this.proc.exitCode !== null || this.proc.signalCode !== null) return resolve();
      const timer = setTimeout(() => {
        this.proc.kill('SIGKILL');
        resolve();
      }, 10_000);
      this.proc.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      this.proc.send({ type: 'stop' } satisfies ParentMessage);
    });
  }
}
