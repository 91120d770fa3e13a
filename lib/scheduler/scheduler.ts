import { TritonError, toTritonError } from '../errors';
import { NEVER_ABORTED, type Request, type Response } from '../callable';
import type { Instance } from '../instances/instance';

/** Scheduler settings, derived from the model config. */
export interface SchedulerOptions {
  /** Largest batch (sum of request batch sizes) per execution; 0 or 1 means one request per execution. */
  maxBatchSize: number;
  /** Whether requests may be combined into one execution (a dynamic batcher is configured). */
  dynamicBatching: boolean;
  /** How long a partial batch may wait for more requests once an instance is free. */
  maxQueueDelayMicroseconds: number;
  /** Batch sizes to aim for; empty means the largest available. */
  preferredBatchSize: readonly number[];
  /** Most requests waiting; 0 means unbounded. */
  maxQueueSize: number;
}

/** A request waiting in the queue. */
interface Pending {
  readonly request: Request;
  /** Rows this request contributes to a batch. */
  readonly rows: number;
  /** Requests can share a batch only when their keys are equal (same inputs, same non-batch dims). */
  readonly batchKey: string;
  readonly enqueuedAt: number;
  resolve(response: Response): void;
  reject(err: unknown): void;
  onAbort: (() => void) | undefined;
  settled: boolean;
}

/** Observer of executions, for statistics and failure handling. */
export interface SchedulerHooks {
  /** Called when an execution throws, before its requests are failed. */
  onExecutionError?(err: unknown): void;
}

/**
 * Queues requests for one model and forms batches on idle: whenever an instance is free, it takes what is
 * queued (up to `maxBatchSize` rows, of compatible shapes) as one execution. It waits on a timer only when
 * `maxQueueDelayMicroseconds` asks it to, and never longer than that.
 */
export class Scheduler {
  private readonly queue: Pending[] = [];
  private head = 0;
  private readonly idle: Instance[];
  private delayTimer: NodeJS.Timeout | undefined;
  private inFlight = 0;
  private drainWaiters: (() => void)[] = [];

  constructor(
    instances: readonly Instance[],
    private readonly options: SchedulerOptions,
    private readonly hooks: SchedulerHooks = {},
  ) {
    this.idle = [...instances];
  }

  /** Requests waiting for an instance. */
  get pendingCount(): number {
    return this.queue.length - this.head;
  }

  /** Requests queued or executing. */
  get outstanding(): number {
    return this.pendingCount + this.inFlight;
  }

  /** Queues a request; resolves with its response once its batch has run. */
  enqueue(request: Request, rows: number, batchKey: string): Promise<Response> {
    const max = this.options.maxQueueSize;
    if (max > 0 && this.pendingCount >= max) {
      return Promise.reject(new TritonError('UNAVAILABLE', 'Exceeds maximum queue size'));
    }
    return new Promise<Response>((resolve, reject) => {
      const entry: Pending = { request, rows, batchKey, enqueuedAt: performance.now(), resolve, reject, onAbort: undefined, settled: false };
      this.queue.push(entry);
      if (request.signal.aborted) return this.cancel(entry);
      if (request.signal !== NEVER_ABORTED) {
        entry.onAbort = () => this.cancel(entry);
        request.signal.addEventListener('abort', entry.onAbort, { once: true });
      }
      this.schedule();
    });
  }

  /** Resolves once nothing is queued or executing. */
  drained(): Promise<void> {
    if (this.outstanding === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  /** Fails every queued request (used by a forced stop). */
  rejectAll(err: TritonError): void {
    while (this.head < this.queue.length) {
      const p = this.queue[this.head++] as Pending;
      this.settle(p, undefined, err);
    }
    this.compact();
    this.notifyDrained();
  }

  private cancel(entry: Pending): void {
    if (entry.settled) return;
    const index = this.queue.indexOf(entry, this.head);
    // A request already handed to an instance is left to its callable, which sees the signal.
    if (index < 0) return;
    this.queue.splice(index, 1);
    this.settle(entry, undefined, new TritonError('CANCELLED', 'request cancelled'));
    this.notifyDrained();
  }

  private schedule(): void {
    while (this.idle.length > 0 && this.pendingCount > 0) {
      if (this.shouldWait()) return;
      const batch = this.takeBatch();
      const instance = this.idle.pop() as Instance;
      void this.run(instance, batch);
    }
  }

  /** True if a partial batch should wait for more requests, with a timer armed to cut it in time. */
  private shouldWait(): boolean {
    const delayMs = this.options.maxQueueDelayMicroseconds / 1000;
    if (delayMs <= 0 || !this.options.dynamicBatching) return false;
    let rows = 0;
    for (let i = this.head; i < this.queue.length; i++) rows += (this.queue[i] as Pending).rows;
    if (rows >= this.targetRows()) return false;
    const waited = performance.now() - (this.queue[this.head] as Pending).enqueuedAt;
    if (waited >= delayMs) return false;
    if (this.delayTimer === undefined) {
      this.delayTimer = setTimeout(() => {
        this.delayTimer = undefined;
        this.schedule();
      }, delayMs - waited);
    }
    return true;
  }

  private targetRows(): number {
    const preferred = this.options.preferredBatchSize;
    return preferred.length > 0 ? Math.max(...preferred) : Math.max(1, this.options.maxBatchSize);
  }

  /** Takes the head request and every following compatible request that fits. */
  private takeBatch(): Pending[] {
    if (this.delayTimer !== undefined) {
      clearTimeout(this.delayTimer);
      this.delayTimer = undefined;
    }
    const first = this.queue[this.head++] as Pending;
    const batch = [first];
    if (this.options.dynamicBatching && this.options.maxBatchSize > 1) {
      const max = this.options.maxBatchSize;
      let rows = first.rows;
      while (this.head < this.queue.length) {
        const next = this.queue[this.head] as Pending;
        if (next.batchKey !== first.batchKey || rows + next.rows > max) break;
        batch.push(next);
        rows += next.rows;
        this.head++;
      }
      this.trimToPreferred(batch);
    }
    this.compact();
    return batch;
  }

  /** Cuts the batch back to the largest preferred size it can fill, returning the rest to the queue. */
  private trimToPreferred(batch: Pending[]): void {
    const preferred = this.options.preferredBatchSize;
    if (preferred.length === 0) return;
    let rows = 0;
    const prefix: number[] = [];
    for (const p of batch) prefix.push((rows += p.rows));
    let keep = batch.length;
    for (let n = batch.length; n >= 1; n--) {
      if (preferred.includes(prefix[n - 1] as number)) {
        keep = n;
        break;
      }
    }
    if (keep < batch.length) {
      batch.length = keep;
      this.head -= prefix.length - keep;
    }
  }

  private compact(): void {
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    } else if (this.head === this.queue.length) {
      this.queue.length = 0;
      this.head = 0;
    }
  }

  private async run(instance: Instance, batch: Pending[]): Promise<void> {
    this.inFlight += batch.length;
    try {
      const responses = await instance.execute(batch.map((p) => p.request));
      batch.forEach((p, i) => this.settle(p, responses[i], undefined));
    } catch (err) {
      this.hooks.onExecutionError?.(err);
      const error = toTritonError(err, 'INFERENCE_FAILED');
      for (const p of batch) this.settle(p, undefined, error);
    } finally {
      this.inFlight -= batch.length;
      this.idle.push(instance);
      this.schedule();
      this.notifyDrained();
    }
  }

  private settle(p: Pending, response: Response | undefined, err: unknown): void {
    if (p.settled) return;
    p.settled = true;
    if (p.onAbort) p.request.signal.removeEventListener('abort', p.onAbort);
    if (err !== undefined) p.reject(err);
    else p.resolve(response as Response);
  }

  private notifyDrained(): void {
    if (this.outstanding !== 0 || this.drainWaiters.length === 0) return;
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const w of waiters) w();
  }
}
