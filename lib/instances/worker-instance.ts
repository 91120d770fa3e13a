import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Request, Response, StreamItem } from '../callable/callable';
import type { CustomMetric, CustomMetricFamily } from '../callable/custom-metrics';
import { TritonError, UnrecoverableError } from '../base/errors';
import { threadEntry } from '../base/thread-entry';
import { HealthListeners } from './health-listeners';
import type { Device, HealthEvent, Instance, InstanceContext, InstanceReport } from './instance';
import { BatchNotStarted, startError } from './instance-errors';
import { deserializeError } from './worker/error-transfer';
import type { FromWorker, ToWorker, WorkerInit } from './worker/messages';
import { WorkerChannel } from './worker-channel';
import type { WorkerSpec } from './worker-spec';

/**
 * States: `new` → `starting` → `ready`; a crash → `restarting` (spawning a worker) or `backoff` (waiting
 * before the next attempt) → `ready`; an UnrecoverableError at start → `failed`; `close()` → `closing` → `closed`.
 */
type State = 'new' | 'starting' | 'ready' | 'restarting' | 'backoff' | 'failed' | 'closing' | 'closed';

/**
 * Runs the callable in a dedicated worker thread, which loads the user's module and builds the callable
 * there: right for CPU-bound code and for libraries whose calls block their thread (onnxruntime-node).
 *
 * This is the worker's supervisor: it spawns the worker, keeps the instance's state and health, and restarts
 * the worker after a crash; the batches, streams, aborts and calls travel over its WorkerChannel. The worker
 * runs its batches one after another, in the order they came. A crashed worker fails only the batches it was
 * running, turns the instance unhealthy and is restarted: at once the first time, then with a doubling delay
 * while it keeps crashing without completing a batch.
 */
export class WorkerInstance implements Instance {
  /** One batch may wait in the worker's queue, so the worker starts it without a round trip to the scheduler. */
  readonly prefetch = 1;
  private state: State = 'new';
  private worker: Worker | undefined;
  private context: InstanceContext | undefined;
  /** Custom metric families and metrics the worker's callable registered, by name (and labels). */
  private readonly metricFamilies = new Map<string, CustomMetricFamily>();
  private readonly metricChildren = new Map<string, CustomMetric>();
  private readonly channel: WorkerChannel;
  /** Crashes and failed restarts since the last batch that succeeded. */
  private failures = 0;
  private lastCause: Error | undefined;
  private failure: Error | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  private restartAt = 0;
  private waiters: { resolve(): void; reject(err: Error): void }[] = [];
  private onClosed: ((error: Error | undefined) => void) | undefined;
  private closing: Promise<void> | undefined;
  private readonly health = new HealthListeners();
  /** What the worker's callable said of itself when it last started. */
  report: InstanceReport | undefined;

  constructor(
    readonly name: string,
    readonly device: Device,
    private readonly spec: WorkerSpec,
  ) {
    this.channel = new WorkerChannel(name, () => this.worker, () => (this.failures = 0));
  }

  /** True while a worker is running and ready for batches. */
  get healthy(): boolean {
    return this.state === 'ready';
  }

  /**
   * True while a new worker starts at once after a crash (the first failure since a batch succeeded): batches
   * given meanwhile wait for it. False while it backs off after repeated failures, and once it failed for good.
   */
  get recovering(): boolean {
    return this.state === 'restarting' && this.failures <= 1;
  }

  /** Spawns the worker and resolves once it has built its callable and run `initialize(context)`. */
  async start(context: InstanceContext): Promise<void> {
    if (this.state !== 'new') throw new TritonError('INTERNAL', `instance ${this.name}: start() called twice`);
    this.context = context;
    this.state = 'starting';
    try {
      await this.spawn();
    } catch (err) {
      if (this.isClosing()) throw err;
      this.fail(err as Error);
      throw err;
    }
    if (!this.isClosing()) this.becomeReady();
  }

  async execute(requests: Request[]): Promise<Response[]> {
    if (this.state !== 'ready') await this.whenReady();
    return this.channel.execute(this.worker as Worker, requests);
  }

  /** Frees the states of ended sequences in the worker; a worker that crashed took them with it. */
  releaseSequenceStates(ids: readonly number[]): void {
    if (ids.length > 0 && this.state === 'ready') this.worker?.postMessage({ type: 'sequence-state-free', ids } satisfies ToWorker);
  }

  /** Runs a decoupled batch in the worker (see WorkerChannel.stream). */
  async *stream(requests: Request[]): AsyncIterable<StreamItem> {
    if (this.state !== 'ready') await this.whenReady();
    yield* this.channel.stream(this.worker as Worker, requests);
  }

  /** Lets the worker finish its batches and run `finalize()` (up to `closeTimeoutMs`), then terminates it; idempotent. */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  onHealthChange(listener: (event: HealthEvent) => void): () => void {
    return this.health.add(listener);
  }

  /** Starts a worker; resolves when it is ready, rejects (and ends it) if it fails before. */
  private spawn(): Promise<void> {
    // Custom metrics stay on this thread: the worker sends their updates (applyMetric).
    const { metrics: _metrics, ...context } = this.context as InstanceContext;
    const init: WorkerInit = { module: this.spec.module, exportName: this.spec.exportName, context: { ...context, data: this.spec.data } };
    const { filename, execArgv } = threadEntry(join(__dirname, 'worker'), 'worker-main', __filename, this.spec.options.execArgv);
    const worker = new Worker(filename, {
      workerData: init,
      execArgv,
      env: this.spec.options.env,
      resourceLimits: this.spec.options.resourceLimits,
    });
    this.worker = worker;
    return new Promise<void>((resolve, reject) => {
      let ready = false;
      let cause: Error | undefined;
      const failStart = (err: Error) => {
        if (this.worker === worker) this.worker = undefined;
        reject(startError(this.name, err));
      };
      worker.on('message', (msg: FromWorker) => {
        if (msg.type === 'ready') {
          ready = true;
          this.report = msg.report;
          resolve();
        } else if (msg.type === 'start-failed') {
          failStart(deserializeError(msg.error));
          void worker.terminate();
        } else if (msg.type === 'closed') this.onClosed?.(msg.error && deserializeError(msg.error));
        else if (msg.type === 'metric-family' || msg.type === 'metric') this.applyMetric(msg);
        else this.channel.receive(msg);
      });
      worker.on('error', (err: Error) => {
        cause = err;
      });
      worker.on('messageerror', (err: Error) => {
        // A result that could not be deserialised: its batch cannot be told apart, so fail what is in flight.
        this.channel.failInFlight(new TritonError('INTERNAL', `instance ${this.name}: a message from the worker could not be read: ${err.message}`, { cause: err }));
      });
      worker.on('exit', (code: number) => {
        if (!ready) failStart(new Error(exitReason(code, cause)));
        else this.onExit(worker, code, cause);
      });
    });
  }

  /**
   * Applies a custom metric family or update the worker's callable made to this thread's registry. The worker
   * checked it already; a family another model registered differently is reported once, as a process warning.
   */
  private applyMetric(msg: Extract<FromWorker, { type: 'metric-family' | 'metric' }>): void {
    const metrics = this.context?.metrics;
    if (!metrics) return;
    try {
      if (msg.type === 'metric-family') {
        this.metricFamilies.set(msg.spec.name, metrics.family(msg.spec));
        return;
      }
      const key = `${msg.name}\0${JSON.stringify(msg.labels)}`;
      let metric = this.metricChildren.get(key);
      if (!metric) {
        const family = this.metricFamilies.get(msg.name);
        if (!family) return;
        metric = family.metric(msg.labels);
        this.metricChildren.set(key, metric);
      }
      metric[msg.op](msg.value);
    } catch (err) {
      process.emitWarning(`instance ${this.name}: ${(err as Error).message}`, { code: 'TSTRITON_CUSTOM_METRIC' });
    }
  }

  /** A running worker ended: a crash, unless the instance is closing. */
  private onExit(worker: Worker, code: number, cause: Error | undefined): void {
    if (this.worker !== worker) return;
    this.worker = undefined;
    this.channel.abortCalls();
    if (this.isClosing()) {
      this.onClosed?.(undefined);
      this.channel.failInFlight(new TritonError('UNAVAILABLE', `instance ${this.name} closed before the batch finished`));
      return;
    }
    const error = new TritonError(
      'INFERENCE_FAILED',
      `instance ${this.name}: the worker thread ${exitReason(code, cause)}; the batch it was running failed and the worker is restarting`,
      { cause },
    );
    this.failures++;
    this.scheduleRestart(error);
    // The worker runs its batches in order: the oldest was running; the others had not started.
    const [running, ...waiting] = this.channel.takeInFlight();
    running?.reject(error);
    for (const b of waiting) b.reject(new BatchNotStarted(this.name, error));
  }

  private scheduleRestart(cause: Error): void {
    const { restartDelayMs, maxRestartDelayMs } = this.spec.options;
    const delay = this.failures <= 1 ? 0 : Math.min(maxRestartDelayMs, restartDelayMs * 2 ** (this.failures - 2));
    this.lastCause = cause;
    this.state = delay > 0 ? 'backoff' : 'restarting';
    if (delay > 0) {
      // Batches that wait for this worker would wait the whole delay; fail them now (see whenReady).
      this.rejectWaiters(this.backoffError());
      this.restartAt = Date.now() + delay;
      this.restartTimer = setTimeout(() => void this.restart(), delay);
    } else void this.restart();
    this.health.emit({ instance: this.name, healthy: false, cause, retryInMs: delay });
  }

  private async restart(): Promise<void> {
    this.restartTimer = undefined;
    if (this.isClosing()) return;
    this.state = 'restarting';
    try {
      await this.spawn();
    } catch (err) {
      if (this.isClosing()) return;
      if ((err as Error) instanceof UnrecoverableError) {
        this.fail(err as Error);
        this.health.emit({ instance: this.name, healthy: false, cause: err as Error });
        return;
      }
      this.failures++;
      this.rejectWaiters(new TritonError('UNAVAILABLE', `instance ${this.name} could not restart its worker: ${(err as Error).message}`, { cause: err }));
      this.scheduleRestart(err as Error);
      return;
    }
    if (!this.isClosing()) this.becomeReady();
  }

  private becomeReady(): void {
    this.state = 'ready';
    for (const w of this.waiters.splice(0)) w.resolve();
    this.health.emit({ instance: this.name, healthy: true });
  }

  /** Stops for good: batches get `err` (an UnrecoverableError stops the server through the scheduler). */
  private fail(err: Error): void {
    this.state = 'failed';
    this.failure = err;
    this.rejectWaiters(err);
  }

  /**
   * Waits until the instance can take a batch. A batch given while the worker starts or restarts waits for
   * it; while the worker backs off after repeated crashes, or once the instance failed or closed, it fails at once.
   */
  private whenReady(): Promise<void> {
    switch (this.state) {
      case 'ready':
        return Promise.resolve();
      case 'starting':
      case 'restarting':
        return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
      case 'backoff':
        return Promise.reject(this.backoffError());
      case 'failed':
        return Promise.reject(this.failure);
      case 'new':
        return Promise.reject(new TritonError('UNAVAILABLE', `instance ${this.name} is not started`));
      default:
        return Promise.reject(new TritonError('UNAVAILABLE', `instance ${this.name} is closed`));
    }
  }

  private backoffError(): TritonError {
    const wait = Math.max(0, this.restartAt - Date.now());
    return new TritonError(
      'UNAVAILABLE',
      `instance ${this.name} is restarting its worker after ${this.failures} consecutive failures (last: ${this.lastCause?.message ?? 'unknown'}); next attempt in ${wait} ms`,
      { cause: this.lastCause },
    );
  }

  private rejectWaiters(err: Error): void {
    for (const w of this.waiters.splice(0)) w.reject(err);
  }

  private isClosing(): boolean {
    return this.state === 'closing' || this.state === 'closed';
  }

  private async shutdown(): Promise<void> {
    const wasReady = this.state === 'ready';
    this.state = 'closing';
    clearTimeout(this.restartTimer);
    this.rejectWaiters(new TritonError('UNAVAILABLE', `instance ${this.name} is closing`));
    if (wasReady) this.health.emit({ instance: this.name, healthy: false });
    const worker = this.worker;
    let finalizeError: Error | undefined;
    if (worker && wasReady) {
      // The worker finishes the batches it has, runs finalize() and answers 'closed' (or exits).
      let timer: NodeJS.Timeout | undefined;
      finalizeError = await new Promise<Error | undefined>((resolve) => {
        this.onClosed = resolve;
        timer = setTimeout(() => resolve(new Error(`finalize() and the batches in flight did not finish within ${this.spec.options.closeTimeoutMs} ms`)), this.spec.options.closeTimeoutMs);
        worker.postMessage({ type: 'close' } satisfies ToWorker);
      });
      clearTimeout(timer);
      this.onClosed = undefined;
    }
    if (worker) await worker.terminate();
    this.worker = undefined;
    this.channel.failInFlight(new TritonError('UNAVAILABLE', `instance ${this.name} closed before the batch finished`));
    this.state = 'closed';
    if (finalizeError) throw new TritonError('INTERNAL', `instance ${this.name}: ${finalizeError.message}`, { cause: finalizeError });
  }
}

/** Why a worker ended, in words. */
function exitReason(code: number, cause: Error | undefined): string {
  if (!cause) return `exited with code ${code}`;
  if ((cause as { code?: unknown }).code === 'ERR_WORKER_OUT_OF_MEMORY') return `ran out of memory (${cause.message})`;
  return `crashed with an uncaught ${cause.name}: ${cause.message}`;
}

