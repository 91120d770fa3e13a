import { requestCancelled, TritonError, tritonError } from '../base/errors';
import type { Request, Response } from '../callable/callable';
import { inService, type Instance } from '../instances/instance';
import { PriorityQueue, type QueuePolicyOptions, type Pending } from './priority-queue';
import { ResponseStream } from './response-stream';
import { runStreamBatch } from './stream-execution';
import type { ExecutionRecord, Scheduled } from './execution-record';
import { ExecutionLoop, ms2ns, now, type Executed } from './execution-loop';
import type { EnqueueOptions, Finalize, RequestScheduler, SchedulerHooks } from './request-scheduler';
import { CANCELLATION, cancelledError, type Cancellable } from '../base/cancellation';

export type { ExecutionRecord, Scheduled } from './execution-record';
export type { EnqueueOptions, Finalize, SchedulerHooks } from './request-scheduler';

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
  /** Answer requests in the order their batches were formed (arrival order within a priority level). */
  preserveOrdering?: boolean;
  /** Number of priority levels; 0 means one level. */
  priorityLevels?: number;
  /** Level of requests that name none (or an out-of-range one). */
  defaultPriorityLevel?: number;
  /** Queue policy of every level without its own. */
  defaultQueuePolicy?: QueuePolicyOptions;
  /** Queue policy per level. */
  priorityQueuePolicy?: Readonly<Record<number, QueuePolicyOptions>>;
}

/**
 * Queues requests for one model and forms batches on idle: whenever an instance is free, it takes what is
 * queued (highest priority first, up to `maxBatchSize` rows of compatible shapes) as one execution. It
 * waits on a timer only when `maxQueueDelayMicroseconds` asks it to, and never longer than that.
 */
export class Scheduler<T = Response> extends ExecutionLoop<T> implements RequestScheduler<T> {
  private readonly queue: PriorityQueue;
  /** Instances in dispatch order; each takes up to its `maxConcurrency` executions (1 by default). */
  private readonly instances: readonly Instance[];
  private readonly running = new Map<Instance, number>();
  private nextSeq = 0;
  private deliverSeq = 0;
  private readonly held = new Map<number, () => void>();

  constructor(
    instances: readonly Instance[],
    private readonly options: SchedulerOptions,
    finalize: Finalize<T> = (_req, res) => res as T,
    hooks: SchedulerHooks = {},
  ) {
    super(finalize, hooks);
    this.instances = [...instances];
    this.queue = new PriorityQueue(
      options.priorityLevels ?? 0,
      options.defaultPriorityLevel ?? 0,
      options.defaultQueuePolicy ?? {},
      options.priorityQueuePolicy ?? {},
      (p, reason) => this.drop(p, reason),
    );
  }

  /** Requests waiting for an instance. */
  get pendingCount(): number {
    return this.queue.size;
  }

  /** Requests queued or executing. */
  get outstanding(): number {
    return this.pendingCount + this.executing;
  }

  /**
   * Queues a request; resolves once its batch has run and its response has been finalized. Its Cancellation
   * takes it out of the queue while it waits.
   */
  enqueue(request: Request & Cancellable, rows: number, batchKey: string, options: EnqueueOptions = {}): Promise<Scheduled<T>> {
    return new Promise<Scheduled<T>>((resolve, reject) => this.enqueueEntry(request, rows, batchKey, options, resolve as (v: unknown) => void, reject));
  }

  private enqueueEntry(
    request: Request & Cancellable,
    rows: number,
    batchKey: string,
    options: EnqueueOptions,
    resolve: (v: unknown) => void,
    reject: (err: unknown) => void,
    stream?: ResponseStream<T>,
  ): void {
    const cancellation = request[CANCELLATION];
    if (cancellation.aborted) return reject(cancelledError(cancellation.reason));
    const entry: Pending = { request, rows, batchKey, enqueuedAt: now(), resolve, reject, cancellation, onAbort: undefined, timer: undefined, timerOwner: undefined, settled: false, stream };
    try {
      this.queue.push(entry, options.priority ?? 0, options.timeoutMicroseconds ?? 0, options);
    } catch (err) {
      return reject(err);
    }
    const onAbort = () => {
      if (this.queue.remove(entry)) this.drop(entry, 'CANCELED', cancelledError(cancellation.reason));
    };
    entry.onAbort = onAbort;
    cancellation.listen(onAbort);
    this.dispatch();
  }

  /**
   * Dispatches a new request, gathering first what else arrives in this turn of the event loop (see
   * ExecutionLoop.scheduleSoon). Without batching, with a full batch queued or with no instance free, there is
   * nothing to gather and `schedule` runs now.
   */
  private dispatch(): void {
    if (this.nextBatchIsFull() || !this.freeInstance(false)) this.schedule();
    else this.scheduleSoon();
  }

  /**
   * Queues a request of a decoupled model; returns its response stream at once. Queue errors (full,
   * timeout, cancel) arrive as the stream's error. `highWaterMark` bounds the unread responses.
   */
  enqueueStream(request: Request & Cancellable, rows: number, batchKey: string, options: EnqueueOptions = {}, highWaterMark = 16): ResponseStream<T> {
    const stream = new ResponseStream<T>(highWaterMark);
    this.enqueueEntry(request, rows, batchKey, options, () => undefined, (err) => stream.fail(err), stream);
    return stream;
  }

  /** Fails every queued request (a forced stop, or no instance left in service). */
  rejectAll(err: TritonError): void {
    for (const p of this.queue.removeAll()) this.settle(p, err);
  }

  /**
   * Tells the scheduler an instance's health changed. One that is back takes queued work; while one restarts
   * after a crash, requests keep waiting for it; once no instance is in service, what is queued fails.
   */
  wake(): void {
    this.schedule();
  }

  private drop(p: Pending, reason: 'REJECTED' | 'CANCELED', error?: TritonError): void {
    this.settle(p, error ?? (reason === 'CANCELED' ? requestCancelled() : tritonError('requestTimeout')));
  }

  protected schedule(): void {
    while (this.queue.size > 0) {
      let instance = this.freeInstance(false);
      if (instance) {
        if (this.shouldWait()) return;
      } else {
        // No instance is free. With none coming back either, nothing would ever take the queue.
        if (!this.instances.some(inService)) return this.failQueued();
        // Every instance is busy. A batch that waiting cannot grow may queue inside an instance that prefetches.
        if (!this.nextBatchIsFull()) return;
        instance = this.freeInstance(true);
        if (!instance) return;
      }
      const batch = this.takeBatch();
      if (batch.length === 0) return;
      this.running.set(instance, (this.running.get(instance) ?? 0) + 1);
      this.run(instance, batch, this.nextSeq++);
    }
  }

  /** Fails every queued request: no instance is left to run it. */
  private failQueued(): void {
    this.rejectAll(this.outOfServiceError());
  }

  /** A healthy instance with room for one more execution (or, with `prefetch`, one more waiting batch), preferring the least busy. */
  private freeInstance(prefetch: boolean): Instance | undefined {
    let best: Instance | undefined;
    let bestLoad = Infinity;
    for (const i of this.instances) {
      if (!i.healthy) continue;
      const load = this.running.get(i) ?? 0;
      const room = (i.maxConcurrency ?? 1) + (prefetch ? (i.prefetch ?? 0) : 0);
      if (load < room && load < bestLoad) {
        best = i;
        bestLoad = load;
        if (load === 0) break;
      }
    }
    return best;
  }

  /** True if a partial batch should wait for more requests, with a timer armed to cut it in time. */
  private shouldWait(): boolean {
    const delayMs = this.options.maxQueueDelayMicroseconds / 1000;
    if (delayMs <= 0 || !this.options.dynamicBatching) return false;
    if (this.queue.totalRows() >= this.targetRows()) return false;
    return this.waitForMore(this.queue.oldestEnqueuedAt(), delayMs);
  }

  /** True when waiting could not make the next batch larger: no dynamic batching, or enough rows queued. */
  private nextBatchIsFull(): boolean {
    const { dynamicBatching, maxBatchSize } = this.options;
    return !dynamicBatching || maxBatchSize <= 1 || this.queue.totalRows() >= this.targetRows();
  }

  private targetRows(): number {
    const preferred = this.options.preferredBatchSize;
    return preferred.length > 0 ? Math.max(...preferred) : Math.max(1, this.options.maxBatchSize);
  }

  /** Takes the head request and every following compatible request that fits. */
  private takeBatch(): Pending[] {
    this.stopWaiting();
    const combine = this.options.dynamicBatching && this.options.maxBatchSize > 1;
    const batch = this.queue.takeBatch(combine ? this.options.maxBatchSize : 0);
    if (combine) this.trimToPreferred(batch);
    return batch;
  }

  /** Cuts the batch back to the largest preferred size it can fill, returning the rest to the queue front. */
  private trimToPreferred(batch: Pending[]): void {
    const preferred = this.options.preferredBatchSize;
    if (preferred.length === 0 || batch.length < 2) return;
    let rows = 0;
    let keep = batch.length;
    const prefix = batch.map((p) => (rows += p.rows));
    for (let n = batch.length; n >= 1; n--) {
      if (preferred.includes(prefix[n - 1] as number)) {
        keep = n;
        break;
      }
    }
    if (keep < batch.length) this.queue.returnToFront(batch.splice(keep));
  }

  /** Starts one execution; `completed` takes it from there (no async frame: this runs once per batch on the hot path). */
  private run(instance: Instance, batch: Pending[], seq: number): void {
    if (batch[0]?.stream) {
      void this.runStream(instance, batch);
      return;
    }
    this.executing += batch.length;
    const requests: Request[] = new Array(batch.length);
    for (let i = 0; i < batch.length; i++) requests[i] = (batch[i] as Pending).request;
    this.execute(
      instance,
      requests,
      (outcome, start) => this.completed(instance, batch, seq, start, outcome),
      () => this.requeue(instance, batch, seq),
    );
  }

  /** Finalizes an execution's responses (or its error), records it and settles its requests. */
  private completed(instance: Instance, batch: Pending[], seq: number, start: number, { responses, error }: Executed): void {
    const inferEnd = now();
    let rows = 0;
    for (const p of batch) rows += p.rows;
    const values: (T | undefined)[] = new Array(batch.length);
    const errors: unknown[] = new Array(batch.length);
    if (responses === undefined) {
      errors.fill(error);
    } else {
      for (let i = 0; i < batch.length; i++) {
        try {
          values[i] = this.finalize((batch[i] as Pending).request, responses[i] as Response);
        } catch (e) {
          errors[i] = ExecutionLoop.unfinalized(e);
        }
      }
    }
    const record = this.record(instance, rows, batch.length, start, inferEnd, now(), responses === undefined);
    this.finished(instance, batch);
    if (this.options.preserveOrdering) this.deliverInOrder(seq, () => this.deliver(batch, values, errors, start, record));
    else this.deliver(batch, values, errors, start, record);
    this.schedule();
  }

  private deliver(batch: Pending[], values: (T | undefined)[], errors: unknown[], start: number, record: ExecutionRecord): void {
    for (let i = 0; i < batch.length; i++) {
      const p = batch[i] as Pending;
      const error = errors[i];
      if (error !== undefined) {
        this.settle(p, error);
        continue;
      }
      this.settle(p, undefined, {
        value: values[i] as T,
        queueNs: ms2ns(start - p.enqueuedAt),
        computeInputNs: 0,
        computeInferNs: record.computeInferNs,
        computeOutputNs: record.computeOutputNs,
        batchRows: record.rows,
      });
    }
  }

  /** Queues again, at the front, the requests of a batch its instance accepted but never started. */
  private requeue(instance: Instance, batch: Pending[], seq: number): void {
    this.finished(instance, batch);
    // Its place in the delivery order is given up; the requests get a new one when they run.
    if (this.options.preserveOrdering) this.deliverInOrder(seq, () => {});
    this.queue.returnToFront(batch.filter((p) => !p.settled));
    this.schedule();
  }

  /** Runs a decoupled batch (see stream-execution.ts), then records it and settles its requests. */
  private async runStream(instance: Instance, batch: Pending[]): Promise<void> {
    this.executing += batch.length;
    const start = now();
    let rows = 0;
    for (const p of batch) rows += p.rows;
    const failed = await runStreamBatch(instance, batch, this.finalize, (err) => this.hooks.onExecutionError?.(err, instance));
    const end = now();
    this.record(instance, rows, batch.length, start, end, end, failed);
    for (const p of batch) {
      this.settle(p, undefined, { value: undefined as T, queueNs: ms2ns(start - p.enqueuedAt), computeInputNs: 0, computeInferNs: ms2ns(end - start), computeOutputNs: 0, batchRows: rows });
    }
    this.finished(instance, batch);
    this.schedule();
  }

  /** An execution of `batch` on `instance` ended: its requests no longer count as executing. */
  private finished(instance: Instance, batch: readonly Pending[]): void {
    this.executing -= batch.length;
    this.running.set(instance, (this.running.get(instance) ?? 1) - 1);
  }

  /** Delivers executions' results in the order their batches were formed. */
  private deliverInOrder(seq: number, deliver: () => void): void {
    this.held.set(seq, deliver);
    for (let next = this.held.get(this.deliverSeq); next; next = this.held.get(this.deliverSeq)) {
      this.held.delete(this.deliverSeq++);
      next();
    }
  }

  private settle(p: Pending, err: unknown, value?: Scheduled<T>): void {
    if (p.settled) return;
    p.settled = true;
    if (p.onAbort) p.cancellation.unlisten(p.onAbort);
    if (err !== undefined) p.reject(err);
    else p.resolve(value);
  }
}
