import { Worker } from 'node:worker_threads';
import { TritonError } from '../base/errors';
import { threadEntry } from '../base/thread-entry';
import type { ConnectionTarget } from './connection-target';
import { RECORD_FIELDS, type CollectedRecords, type FromLoadWorker, type LoadWorkerInit, type StepRequests, type ToLoadWorker } from './load-messages';
import type { PerfLoad } from './perf-types';

/** What the load threads completed between two collects, merged. */
export interface Collected {
  /** `RECORD_FIELDS` numbers per request (load-messages.ts), every thread's in turn. */
  readonly records: readonly Float64Array[];
  readonly count: number;
  /** CPU the load threads used, microseconds. */
  readonly cpuUs: number;
  /** Requests sent later than due, every sequence of a sequence model's open loop being busy. */
  readonly delayed: number;
  readonly firstError?: string;
}

/** The load threads of a run: started once, told each step's load, collected at each window's end. */
export class LoadPool {
  private readonly answers: ((message: FromLoadWorker) => void)[][];
  /** Requests completed by each thread, from their progress messages. */
  private readonly completed: number[];
  /** Why each thread that ended is gone. */
  private readonly dead: (string | undefined)[] = [];

  private constructor(private readonly workers: readonly Worker[]) {
    this.answers = workers.map(() => []);
    this.completed = workers.map(() => 0);
    workers.forEach((worker, i) => {
      worker.on('message', (message: FromLoadWorker) => {
        if (message.t === 'progress') this.completed[i] = message.completed;
        else this.answers[i]?.shift()?.(message);
      });
      // A thread that fails answers everything still asked of it with its failure.
      const failed = (message: string): void => {
        this.dead[i] ??= message;
        for (const answer of this.answers[i]?.splice(0) ?? []) answer({ t: 'failed', message });
      };
      worker.on('error', (err) => failed(err.message));
      worker.on('exit', (code) => failed(`exit code ${code}`));
    });
  }

  /** Starts `threads` load threads connecting to `target`; resolves when each is ready. */
  static async start(threads: number, target: ConnectionTarget, progressMs: number): Promise<LoadPool> {
    const { filename, execArgv } = threadEntry(__dirname, 'load-worker', __filename);
    const workers = Array.from({ length: threads }, (_, i) => {
      const init: LoadWorkerInit = { target, progressMs };
      return new Worker(filename, { workerData: init, execArgv, name: `tstriton-perf-${i}` });
    });
    const pool = new LoadPool(workers);
    try {
      await Promise.all(workers.map((_, i) => pool.ready(i)));
    } catch (err) {
      await Promise.all(workers.map((w) => w.terminate()));
      throw err;
    }
    return pool;
  }

  /** Resolves when thread `i` says it is ready; rejects when it fails or ends first. */
  private ready(i: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.answers[i]?.push((m) => (m.t === 'failed' ? reject(new TritonError('INTERNAL', `a load thread failed to start: ${m.message}`)) : resolve()));
    });
  }

  /** Requests completed so far by every thread together, as their last progress messages said. */
  get completedSoFar(): number {
    return this.completed.reduce((a, b) => a + b, 0);
  }

  /**
   * Starts `load`, its lanes or its rate shared among the threads. An open loop over sequences gives each thread
   * some of the sequences and the part of the rate they carry.
   */
  begin(load: PerfLoad, requests: StepRequests): void {
    const n = this.workers.length;
    if (load.kind === 'request-rate' && 'shared' in requests) {
      this.workers.forEach((_, i) => this.send(i, { t: 'open', rate: load.requestRate / n, distribution: load.distribution, requests }));
      return;
    }
    const total = load.kind === 'concurrency' ? load.concurrency : 'perLane' in requests ? requests.perLane.length : 0;
    let first = 0;
    for (let i = 0; i < n; i++) {
      const lanes = Math.floor(total / n) + (i < total % n ? 1 : 0);
      if (lanes === 0) continue;
      const own: StepRequests = 'shared' in requests ? requests : { perLane: requests.perLane.slice(first, first + lanes) };
      first += lanes;
      if (load.kind === 'concurrency') this.send(i, { t: 'closed', lanes, requests: own });
      else this.send(i, { t: 'open', rate: (load.requestRate * lanes) / total, distribution: load.distribution, requests: own });
    }
  }

  /** What every thread completed since the last collect. */
  async collect(): Promise<Collected> {
    const parts = (await this.ask({ t: 'collect' })) as CollectedRecords[];
    const firstError = parts.find((p) => p.firstError !== undefined)?.firstError;
    return {
      records: parts.map((p) => p.records),
      count: parts.reduce((a, p) => a + p.count, 0),
      cpuUs: parts.reduce((a, p) => a + p.cpuUs, 0),
      delayed: parts.reduce((a, p) => a + p.delayed, 0),
      ...(firstError !== undefined && { firstError }),
    };
  }

  /** Stops sending; resolves when every request in flight has been answered. */
  async end(): Promise<void> {
    await this.ask({ t: 'stop' });
  }

  async close(): Promise<void> {
    await Promise.all(
      this.workers.map(
        (worker, i) =>
          new Promise<void>((resolve) => {
            if (this.dead[i] !== undefined) return resolve();
            worker.once('exit', () => resolve());
            this.send(i, { t: 'close' });
            // A thread whose connections do not let go in time is ended.
            setTimeout(() => void worker.terminate(), 2000).unref();
          }),
      ),
    );
  }

  private send(i: number, message: ToLoadWorker): void {
    this.workers[i]?.postMessage(message);
  }

  private async ask(message: ToLoadWorker): Promise<FromLoadWorker[]> {
    const answers = await Promise.all(
      this.workers.map(
        (_, i) =>
          new Promise<FromLoadWorker>((resolve) => {
            const dead = this.dead[i];
            if (dead !== undefined) return resolve({ t: 'failed', message: dead });
            this.answers[i]?.push(resolve);
            this.send(i, message);
          }),
      ),
    );
    const failure = answers.find((a) => a.t === 'failed');
    if (failure) throw new TritonError('INTERNAL', `a load thread failed: ${failure.message}`);
    return answers;
  }
}

/** The fields of the `i`th request in a collected records array. */
export function recordAt(records: Float64Array, i: number): { endMs: number; latencyUs: number; sendUs: number } {
  const at = i * RECORD_FIELDS;
  return { endMs: records[at] as number, latencyUs: records[at + 1] as number, sendUs: records[at + 2] as number };
}

/**
 * `collected` cut at `edgeMs` (ms since the epoch): the requests that ended by then, and those after. The CPU, the
 * delayed count and the first failure go with the first part.
 */
export function splitCollected(collected: Collected, edgeMs: number): [Collected, Collected] {
  const before: Float64Array[] = [];
  const after: Float64Array[] = [];
  let countBefore = 0;
  for (const records of collected.records) {
    const n = records.length / RECORD_FIELDS;
    let k = 0;
    // Each thread's records are in the order its requests ended.
    while (k < n && (records[k * RECORD_FIELDS] as number) <= edgeMs) k++;
    before.push(records.subarray(0, k * RECORD_FIELDS));
    after.push(records.subarray(k * RECORD_FIELDS));
    countBefore += k;
  }
  return [
    { records: before, count: countBefore, cpuUs: collected.cpuUs, delayed: collected.delayed, ...(collected.firstError !== undefined && { firstError: collected.firstError }) },
    { records: after, count: collected.count - countBefore, cpuUs: 0, delayed: 0 },
  ];
}

/** Two collections as one. */
export function joinCollected(a: Collected, b: Collected): Collected {
  const firstError = a.firstError ?? b.firstError;
  return {
    records: [...a.records, ...b.records],
    count: a.count + b.count,
    cpuUs: a.cpuUs + b.cpuUs,
    delayed: a.delayed + b.delayed,
    ...(firstError !== undefined && { firstError }),
  };
}
