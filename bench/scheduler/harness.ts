/**
 * What the scheduler and ONNX benchmarks share: child processes (servers, direct runners, the load
 * generator), statistics, the machine line and the marker blocks of docs/performance.md.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ChildMessage, ParentMessage, ThreadTimes } from './child';
import type { LoadMessage, LoadReply, LoadResult, LoadSpec } from './loadgen';

/** The repository root: the nearest directory upward with a package.json (dist/bench/x → the repo). */
export function repoRoot(from = __dirname): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

export const log = (s: string): void => void process.stderr.write(`${s}\n`);

// ---------------------------------------------------------------------------------------------------------
// Child processes

const children: ChildProcess[] = [];

/** Runs `script` (a path to a compiled .js file) in a new node process with an IPC channel. */
export function spawnNode(script: string, args: string[] = [], nodeArgs: string[] = []): ChildProcess {
  const child = spawn(process.execPath, [...nodeArgs, script, ...args], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  children.push(child);
  return child;
}

export function killChildren(): void {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
}

/**
 * Stops the whole run past `ms`, whatever it is doing (children included); `main`'s outcome ends the process
 * otherwise.
 */
export function runMain(name: string, ms: number, main: () => Promise<void>): void {
  const watchdog = setTimeout(() => {
    log(`${name}: still running after ${ms / 1000} s; stopping`);
    killChildren();
    process.exit(2);
  }, ms);
  watchdog.unref();
  main().then(
    () => {
      killChildren();
      clearTimeout(watchdog);
    },
    (err: unknown) => {
      log(`${name}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      killChildren();
      process.exitCode = 1;
      clearTimeout(watchdog);
    },
  );
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

  static start(name: string, script: string, args: string[] = [], nodeArgs: string[] = [], timeoutMs = 60_000): Promise<ChildProc> {
    const proc = spawnNode(script, args, nodeArgs);
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

/** The load generator process. */
export class LoadGen {
  constructor(private readonly proc: ChildProcess) {}

  static start(): LoadGen {
    return new LoadGen(spawnNode(path.join(__dirname, 'loadgen.js')));
  }

  run(spec: LoadSpec): Promise<LoadResult> {
    return new Promise((resolve, reject) => {
      const onMessage = (m: LoadReply) => {
        this.proc.off('message', onMessage);
        if (m.type === 'result') resolve(m.result);
        else reject(new Error(`load generator: ${m.message}`));
      };
      this.proc.on('message', onMessage);
      this.proc.send({ type: 'run', spec } satisfies LoadMessage);
    });
  }

  exit(): void {
    this.proc.send({ type: 'exit' } satisfies LoadMessage);
  }
}

/** A load run with what the server's threads did over it. */
export interface Sample extends LoadResult {
  /** Good responses per second in the window. */
  rps: number;
  /** Server CPU (all threads) per response in the window, µs. */
  serverCpuPerReq: number;
  /**
   * The server's threads over the window (time windows) or over the whole run, warm-up included (count windows:
   * divide by `count + warmupCount`).
   */
  usage: UsageDelta;
}

export async function measure(load: LoadGen, server: ChildProc, spec: LoadSpec, what: string): Promise<Sample> {
  let usage: UsageDelta;
  let r: LoadResult;
  if (spec.count === undefined) {
    // Read when the load generator's window opens and closes (to within the IPC delay).
    const at = (ms: number) => new Promise<Usage>((resolve, reject) => setTimeout(() => void server.usage().then(resolve, reject), ms));
    const start = at(spec.warmupMs ?? 0);
    const end = at((spec.warmupMs ?? 0) + (spec.durationMs ?? 0));
    r = await load.run(spec);
    usage = usageDelta(await start, await end);
  } else {
    const start = await server.usage();
    r = await load.run(spec);
    usage = usageDelta(start, await server.usage());
  }
  if (r.errors > 0) throw new Error(`${what}: ${r.errors} errors, first: ${r.firstError}`);
  if (r.count === 0) throw new Error(`${what}: no response in the window`);
  const served = spec.count === undefined ? r.count : r.count + (spec.warmupCount ?? 0);
  return { ...r, rps: (r.count * 1000) / r.elapsedMs, serverCpuPerReq: usage.cpuMicros / served, usage };
}

// ---------------------------------------------------------------------------------------------------------
// Statistics and formatting

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

/** `lo–hi` of the values, with `digits` decimals. */
export function range(xs: readonly number[], digits = 2): string {
  return xs.length > 1 ? `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}` : '';
}

export const fmtInt = (x: number): string => Math.round(x).toLocaleString('en-US');
export const fmtUs = (x: number): string => (Number.isFinite(x) ? `${Math.round(x)}` : '–');

export function machine(): string {
  const cpu = os.cpus()[0]?.model.trim() ?? 'unknown CPU';
  return `${cpu}, nproc ${os.availableParallelism()}, Node ${process.version}, ${os.type()} ${os.release()}`;
}

export function isoDate(d: Date): string {
  return d.toISOString().replace(/\.\d+Z$/, 'Z');
}

// ---------------------------------------------------------------------------------------------------------
// docs/performance.md

/** Replaces the block between `start` and `end` markers (kept) in docs/performance.md, or appends it. */
export function writeDocBlock(start: string, end: string, body: string): string {
  const doc = path.join(repoRoot(), 'docs', 'performance.md');
  mkdirSync(path.dirname(doc), { recursive: true });
  const block = `${start}\n${body.replace(/\n+$/, '')}\n${end}`;
  let text = existsSync(doc)
    ? readFileSync(doc, 'utf8')
    : '# Performance\n\nMeasured performance of tstriton, each section written by its benchmark script; rerun the script to refresh its section.\n';
  const s = text.indexOf(start);
  const e = text.indexOf(end);
  if (s >= 0 && e > s) text = text.slice(0, s) + block + text.slice(e + end.length);
  else text = `${text.replace(/\n*$/, '\n')}\n${block}\n`;
  writeFileSync(doc, text);
  return doc;
}
