import { extname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Request, Response, StreamItem } from '../callable';
import { NEVER_ABORTED } from '../callable-marks';
import { cancellationOf } from '../cancellation';
import { TritonError, UnrecoverableError } from '../errors';
import { HealthListeners } from './health-listeners';
import type { Device, HealthEvent, Instance, InstanceContext } from './instance';
import { BatchNotStarted, checkResponses, startError } from './instance-errors';
import { decodeResponses, encodeRequests, isDataCloneError } from './worker/batch-codec';
import { deserializeError, serializeError } from './worker/error-transfer';
import type { FromWorker, ToWorker, WireBatch, WorkerInit } from './worker/messages';
import { decodeColumns, encodeColumns, TransferList } from './worker/columns';
import type { Tensor } from '../tensor/tensor';
import type { WorkerSpec } from './worker-spec';

/**
 * States: `new` → `starting` → `ready`; a crash → `restarting` (spawning a worker) or `backoff` (waiting
 * before the next attempt) → `ready`; an UnrecoverableError at start → `failed`; `close()` → `closing` → `closed`.
 */
type State = 'new' | 'starting' | 'ready' | 'restarting' | 'backoff' | 'failed' | 'closing' | 'closed';

/** A batch sent to the worker and not yet answered. */
interface InFlight {
  resolve(responses: unknown): void;
  reject(err: Error): void;
  /** The batch's requests, whose `infer` serves the calls the worker makes for them. */
  readonly requests: readonly Request[];
}

/**
 * Runs the callable in a dedicated worker thread, which loads the user's module and builds the callable
 * there: right for CPU-bound code and for libraries whose calls block their thread (onnxruntime-node).
 *
 * One message per batch each way; the worker runs its batches one after another, in the order they came; tensors travel as one column per name, their buffers transferred or copied once (see columns.ts). A crashed
 * worker fails only the batches it was running, turns the instance unhealthy and is restarted: at once the
 * first time, then with a doubling delay while it keeps crashing without completing a batch.
 */
export class WorkerInstance implements Instance {
  /** One batch may wait in the worker's queue, so the worker starts it without a round trip to the scheduler. */
  readonly prefetch = 1;
  private state: State = 'new';
  private worker: Worker | undefined;
  private context: InstanceContext | undefined;
  private readonly inFlight = new Map<number, InFlight>();
  /** Open decoupled batches: where each streamed item goes. */
  private readonly streams = new Map<number, (item: StreamItem) => void>();
  /** `request.infer` calls the worker made and the main thread is running, by the worker's call id. */
  private readonly calls = new Map<number, AbortController>();
  private nextId = 0;
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

  constructor(
    readonly name: string,
    readonly device: Device,
    private readonly spec: WorkerSpec,
  ) {}

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
    const worker = this.worker as Worker;
    const id = this.nextId++;
    const listeners: (() => void)[] = [];
    // A batch that waits behind another is copied, not moved: if the worker dies first, it can be queued again.
    const waits = this.inFlight.size > 0;
    const responses = await new Promise<unknown>((resolve, reject) => {
      this.inFlight.set(id, { resolve, reject, requests });
      try {
        this.post(worker, id, requests, waits, false);
      } catch (err) {
        this.inFlight.delete(id);
        reject(err);
        return;
      }
      this.forwardAborts(worker, id, requests, listeners);
    }).finally(() => {
      for (const remove of listeners) remove();
    });
    return checkResponses(responses, requests.length, this.name);
  }

  /**
   * Runs a decoupled batch in the worker. Its items arrive one message each; each one the scheduler takes is
   * acknowledged, which lets the worker send one more (it runs a bounded window ahead, so a slow reader slows
   * the callable's generator). A reader that stops early cancels the stream, and the worker closes the
   * generator.
   */
  async *stream(requests: Request[]): AsyncIterable<StreamItem> {
    if (this.state !== 'ready') await this.whenReady();
    const worker = this.worker as Worker;
    const id = this.nextId++;
    const items: StreamItem[] = [];
    let finished = false;
    let failure: Error | undefined;
    let wake: (() => void) | undefined;
    const notify = () => {
      wake?.();
      wake = undefined;
    };
    const listeners: (() => void)[] = [];
    this.inFlight.set(id, {
      resolve: () => {
        finished = true;
        notify();
      },
      reject: (err) => {
        failure = err;
        notify();
      },
      requests,
    });
    this.streams.set(id, (item) => {
      items.push(item);
      notify();
    });
    try {
      this.post(worker, id, requests, this.inFlight.size > 1, true);
      this.forwardAborts(worker, id, requests, listeners);
      for (;;) {
        const item = items.shift();
        if (item) {
          yield item;
          if (this.worker === worker) worker.postMessage({ type: 'stream-ack', id } satisfies ToWorker);
          continue;
        }
        if (failure) throw failure;
        if (finished) return;
        await new Promise<void>((resolve) => (wake = resolve));
      }
    } finally {
      for (const remove of listeners) remove();
      this.streams.delete(id);
      if (!finished && !failure) {
        this.inFlight.delete(id);
        if (this.worker === worker) worker.postMessage({ type: 'stream-cancel', id } satisfies ToWorker);
      }
    }
  }

  /** Signals cannot cross threads: forwards each request's abort as a message to the worker's own Cancellation. */
  private forwardAborts(worker: Worker, id: number, requests: readonly Request[], listeners: (() => void)[]): void {
    requests.forEach((r, index) => {
      const notify = (reason: unknown) => worker.postMessage({ type: 'abort', id, index, reason: serializeError(reason) } satisfies ToWorker);
      const c = cancellationOf(r);
      if (c) {
        if (!c.aborted) listeners.push(c.onAbort(() => notify(c.reason)));
        return;
      }
      if (r.signal === NEVER_ABORTED || r.signal.aborted) return;
      const onAbort = () => notify(r.signal.reason);
      r.signal.addEventListener('abort', onAbort, { once: true });
      listeners.push(() => r.signal.removeEventListener('abort', onAbort));
    });
  }

  /** Lets the worker finish its batches and run `finalize()` (up to `closeTimeoutMs`), then terminates it; idempotent. */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  onHealthChange(listener: (event: HealthEvent) => void): () => void {
    return this.health.add(listener);
  }

  /** Encodes and posts one batch; falls back to copying every buffer if one cannot be transferred. */
  private post(worker: Worker, id: number, requests: readonly Request[], copyAll: boolean, stream: boolean): void {
    const message = (batch: WireBatch): ToWorker => (stream ? { type: 'batch', id, batch, stream: true } : { type: 'batch', id, batch });
    let encoded = encodeRequests(requests, copyAll);
    try {
      worker.postMessage(message(encoded.value), encoded.transferList);
    } catch (err) {
      if (!isDataCloneError(err)) throw err;
      encoded = encodeRequests(requests, true);
      worker.postMessage(message(encoded.value), encoded.transferList);
    }
  }

  /** Starts a worker; resolves when it is ready, rejects (and ends it) if it fails before. */
  private spawn(): Promise<void> {
    const init: WorkerInit = { module: this.spec.module, exportName: this.spec.exportName, context: { ...(this.context as InstanceContext), data: this.spec.data } };
    const { filename, execArgv } = workerEntry(this.spec.options.execArgv);
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
          resolve();
        } else if (msg.type === 'start-failed') {
          failStart(deserializeError(msg.error));
          void worker.terminate();
        } else this.onMessage(msg);
      });
      worker.on('error', (err: Error) => {
        cause = err;
      });
      worker.on('messageerror', (err: Error) => {
        // A result that could not be deserialised: its batch cannot be told apart, so fail what is in flight.
        this.failInFlight(new TritonError('INTERNAL', `instance ${this.name}: a message from the worker could not be read: ${err.message}`, { cause: err }));
      });
      worker.on('exit', (code: number) => {
        if (!ready) failStart(new Error(exitReason(code, cause)));
        else this.onExit(worker, code, cause);
      });
    });
  }

  private onMessage(msg: FromWorker): void {
    switch (msg.type) {
      case 'result': {
        const batch = this.take(msg.id);
        if (!batch) return;
        this.failures = 0;
        batch.resolve(decodeResponses(msg.result));
        return;
      }
      case 'error':
        this.take(msg.id)?.reject(deserializeError(msg.error));
        return;
      case 'closed':
        this.onClosed?.(msg.error && deserializeError(msg.error));
        return;
      case 'item':
        this.streams.get(msg.id)?.({ index: msg.index, final: msg.final, response: msg.response ? ((decodeResponses(msg.response) as Response[])[0] as Response) : undefined });
        return;
      case 'stream-end':
        this.take(msg.id)?.resolve(undefined);
        return;
      case 'bls':
        this.runCall(msg);
        return;
      case 'bls-abort':
        this.calls.get(msg.call)?.abort(deserializeError(msg.reason));
        return;
      default:
        return;
    }
  }

  /**
   * Runs a `request.infer(...)` call the worker made for one of its requests, as that request's own call on
   * this thread (through the callee's scheduler, with the request's call chain and cancellation), and posts
   * the outputs back. They are copied, not moved: they may be views on buffers other requests still read.
   */
  private runCall(msg: Extract<FromWorker, { type: 'bls' }>): void {
    const worker = this.worker;
    const reply = (m: ToWorker, transferList: ArrayBuffer[] = []) => {
      if (this.worker !== worker || !worker) return;
      try {
        worker.postMessage(m, transferList);
      } catch (err) {
        worker.postMessage({ type: 'bls-error', call: msg.call, error: serializeError(err) } satisfies ToWorker);
      }
    };
    const infer = this.inFlight.get(msg.id)?.requests[msg.index]?.infer;
    if (!infer) {
      reply({ type: 'bls-error', call: msg.call, error: serializeError(new TritonError('UNSUPPORTED', `instance ${this.name}: this request cannot call other models`)) });
      return;
    }
    const controller = new AbortController();
    this.calls.set(msg.call, controller);
    const inputs = decodeColumns(msg.request.inputs, 1)[0] as Record<string, Tensor>;
    infer({ ...msg.request, inputs, signal: controller.signal })
      .then(
        (outputs) => {
          const transfers = new TransferList();
          const columns = encodeColumns([outputs], transfers, true);
          reply({ type: 'bls-result', call: msg.call, outputs: columns }, transfers.list);
        },
        (err: unknown) => reply({ type: 'bls-error', call: msg.call, error: serializeError(err) }),
      )
      .finally(() => {
        if (this.calls.get(msg.call) === controller) this.calls.delete(msg.call);
      });
  }

  private take(id: number): InFlight | undefined {
    const batch = this.inFlight.get(id);
    this.inFlight.delete(id);
    return batch;
  }

  /** A running worker ended: a crash, unless the instance is closing. */
  private onExit(worker: Worker, code: number, cause: Error | undefined): void {
    if (this.worker !== worker) return;
    this.worker = undefined;
    // The calls the worker was waiting on have no one to answer to; call ids start again with the next worker.
    for (const c of this.calls.values()) c.abort(new TritonError('CANCELLED', `instance ${this.name}: the worker that made the call ended`));
    this.calls.clear();
    if (this.isClosing()) {
      this.onClosed?.(undefined);
      this.failInFlight(new TritonError('UNAVAILABLE', `instance ${this.name} closed before the batch finished`));
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
    const [running, ...waiting] = [...this.inFlight.values()];
    this.inFlight.clear();
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

  private failInFlight(err: Error): void {
    const batches = [...this.inFlight.values()];
    this.inFlight.clear();
    for (const b of batches) b.reject(err);
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
    this.failInFlight(new TritonError('UNAVAILABLE', `instance ${this.name} closed before the batch finished`));
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

/**
 * The worker's entry: compiled `worker/worker-main.js` beside this file in dist/. When this file runs as
 * TypeScript source (jest, ts tooling), the worker loads `worker-main.ts` with a TypeScript hook preloaded.
 */
function workerEntry(userExecArgv: readonly string[] | undefined): { filename: string; execArgv: string[] | undefined } {
  const ext = extname(__filename);
  const filename = join(__dirname, 'worker', `worker-main${ext}`);
  if (ext !== '.ts') return { filename, execArgv: userExecArgv && [...userExecArgv] };
  return { filename, execArgv: [...(userExecArgv ?? process.execArgv), '--require', join(__dirname, 'worker', 'register-ts.js')] };
}
