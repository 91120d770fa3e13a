import type { Worker } from 'node:worker_threads';
import type { Request, Response, StreamItem } from '../callable/callable';
import { cancellationOf } from '../base/cancellation';
import { TritonError } from '../base/errors';
import { checkResponses } from './instance-errors';
import { decodeResponses, encodeRequests } from './worker/batch-codec';
import { postWithCopyFallback } from './worker/channel-common';
import { decodeColumns, encodeColumns, TransferList } from './worker/columns';
import { deserializeError, serializeError } from './worker/error-transfer';
import type { FromWorker, ToWorker, WireBatch } from './worker/messages';
import type { Tensor } from '../tensor/tensor';

/** A batch sent to the worker and not yet answered. */
export interface PostedBatch {
  resolve(responses: unknown): void;
  reject(err: Error): void;
  /** The batch's requests, whose `infer` serves the calls the worker makes for them. */
  readonly requests: readonly Request[];
}

/** The messages of a running worker that the channel answers (the supervisor handles the lifecycle ones). */
export type ChannelMessage = Extract<FromWorker, { type: 'result' | 'error' | 'item' | 'stream-end' | 'bls' | 'bls-abort' }>;

/**
 * The main thread's end of the channel to a WorkerInstance's worker: batches and decoupled batches go out,
 * results and stream items come back, aborts are forwarded, and the `request.infer` calls the worker makes
 * run here. One message per batch each way; tensors travel as one column per name, their buffers
 * transferred or copied once (see columns.ts). The supervisor owns the worker; `current` names the one
 * running now, so that nothing is posted to a worker that has ended.
 */
export class WorkerChannel {
  private readonly inFlight = new Map<number, PostedBatch>();
  /** Open decoupled batches: where each streamed item goes. */
  private readonly streams = new Map<number, (item: StreamItem) => void>();
  /** `request.infer` calls the worker made and the main thread is running, by the worker's call id. */
  private readonly calls = new Map<number, AbortController>();
  private nextId = 0;

  constructor(
    private readonly name: string,
    private readonly current: () => Worker | undefined,
    /** Called when a batch succeeds. */
    private readonly onSuccess: () => void,
  ) {}

  /** Sends a batch to `worker` and resolves with its checked responses. */
  async execute(worker: Worker, requests: Request[]): Promise<Response[]> {
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
   * Runs a decoupled batch in `worker`. Its items arrive one message each; each one the scheduler takes is
   * acknowledged, which lets the worker send one more (it runs STREAM_WINDOW ahead, so a slow reader slows
   * the callable's generator). A reader that stops early cancels the stream, and the worker closes the
   * generator.
   */
  async *stream(worker: Worker, requests: Request[]): AsyncGenerator<StreamItem> {
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
          if (this.current() === worker) worker.postMessage({ type: 'stream-ack', id } satisfies ToWorker);
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
        if (this.current() === worker) worker.postMessage({ type: 'stream-cancel', id } satisfies ToWorker);
      }
    }
  }

  /** Handles a message of the running worker about a batch, a stream or a call. */
  receive(msg: ChannelMessage): void {
    switch (msg.type) {
      case 'result': {
        const batch = this.take(msg.id);
        if (!batch) return;
        this.onSuccess();
        batch.resolve(decodeResponses(msg.result));
        return;
      }
      case 'error':
        this.take(msg.id)?.reject(deserializeError(msg.error));
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

  /** The worker ended: the calls it was waiting on have no one to answer to (call ids start again with the next worker). */
  abortCalls(): void {
    for (const c of this.calls.values()) c.abort(new TritonError('CANCELLED', `instance ${this.name}: the worker that made the call ended`));
    this.calls.clear();
  }

  /** Takes every batch in flight, in the order they were sent. */
  takeInFlight(): PostedBatch[] {
    const batches = [...this.inFlight.values()];
    this.inFlight.clear();
    return batches;
  }

  /** Fails every batch in flight with `err`. */
  failInFlight(err: Error): void {
    for (const b of this.takeInFlight()) b.reject(err);
  }

  /**
   * Signals cannot cross threads: forwards each request's abort as a message to the worker's own Cancellation.
   * A request without a Cancellation (a warmup request) is never aborted.
   */
  private forwardAborts(worker: Worker, id: number, requests: readonly Request[], listeners: (() => void)[]): void {
    requests.forEach((r, index) => {
      const c = cancellationOf(r);
      if (!c || c.aborted) return;
      const forward = () => worker.postMessage({ type: 'abort', id, index, reason: serializeError(c.reason) } satisfies ToWorker);
      c.listen(forward);
      listeners.push(() => c.unlisten(forward));
    });
  }

  /** Encodes and posts one batch; falls back to copying every buffer if one cannot be transferred. */
  private post(worker: Worker, id: number, requests: readonly Request[], copyAll: boolean, stream: boolean): void {
    const message = (batch: WireBatch): ToWorker => (stream ? { type: 'batch', id, batch, stream: true } : { type: 'batch', id, batch });
    postWithCopyFallback(worker, (copy) => encodeRequests(requests, copy), message, copyAll);
  }

  /**
   * Runs a `request.infer(...)` call the worker made for one of its requests, as that request's own call on
   * this thread (through the callee's scheduler, with the request's call chain and cancellation), and posts
   * the outputs back. They are copied, not moved: they may be views on buffers other requests still read.
   */
  private runCall(msg: Extract<FromWorker, { type: 'bls' }>): void {
    const worker = this.current();
    const reply = (m: ToWorker, transferList: ArrayBuffer[] = []) => {
      if (this.current() !== worker || !worker) return;
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

  private take(id: number): PostedBatch | undefined {
    const batch = this.inFlight.get(id);
    this.inFlight.delete(id);
    return batch;
  }
}
