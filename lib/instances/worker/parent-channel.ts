import type { MessagePort } from 'node:worker_threads';
import type { InferCall, Request, StreamItem } from '../../callable/callable';
import type { Cancellation } from '../../base/cancellation';
import type { Tensor } from '../../tensor/tensor';
import { decodeRequests, encodeResponses } from './batch-codec';
import { postWithCopyFallback, STREAM_WINDOW } from './channel-common';
import { decodeColumns, encodeColumns, TransferList } from './columns';
import { deserializeError, serializeError } from './error-transfer';
import type { FromWorker, ToWorker } from './messages';

/** What the worker does with the batches and the close notice that arrive (see worker-main.ts). */
export interface BatchRunner {
  /** Runs batch `id` after the ones before it; `stream` for a decoupled model's batch. */
  run(id: number, requests: Request[], stream: boolean): void;
  /** Frees the states of sequences that ended (see sequence-state-store.ts). */
  freeStates(ids: readonly number[]): void;
  close(): void;
}

/** An open stream: items the worker may still send before an ack, and whether the reader went away. */
interface StreamState {
  credit: number;
  cancelled: boolean;
  wake?: () => void;
}

/**
 * The worker's end of the channel to its WorkerInstance: batches arrive and are rebuilt as requests (each
 * with a Cancellation the main thread's abort notices reach), results, errors and stream items go back, and
 * a request's `request.infer` call travels to the main thread and its answer back.
 */
export class ParentChannel {
  /** Per batch received and not answered, its requests' cancellations (abort notices name them). */
  private readonly running = new Map<number, (Cancellation | undefined)[]>();
  /** Open streams, by batch id. */
  private readonly streams = new Map<number, StreamState>();
  /** `request.infer` calls waiting for the main thread's answer. */
  private readonly calls = new Map<number, { resolve(outputs: Record<string, Tensor>): void; reject(err: Error): void }>();
  private nextCall = 0;
  private runner: BatchRunner | undefined;

  constructor(private readonly port: MessagePort) {}

  /** Starts taking messages, handing batches and the close notice to `runner`. */
  listen(runner: BatchRunner): void {
    this.runner = runner;
    this.port.on('message', (msg: ToWorker) => this.receive(msg));
  }

  post(message: FromWorker, transferList: ArrayBuffer[] = []): void {
    this.port.postMessage(message, transferList);
  }

  /** Sends a batch's responses, transferring their buffers; copies them if a buffer cannot be transferred. */
  sendResult(id: number, responses: unknown): void {
    postWithCopyFallback(
      this.port,
      (copy) => encodeResponses(responses, copy),
      (result): FromWorker => ({ type: 'result', id, result }),
      false,
      (err) => {
        const message = err instanceof Error ? err.message : String(err);
        return new Error(`the callable's responses cannot be sent to the main thread (only tensors, plain objects, arrays, strings and numbers can): ${message}`, { cause: err });
      },
    );
  }

  sendError(id: number, err: unknown): void {
    this.post({ type: 'error', id, error: serializeError(err) });
  }

  /**
   * Opens stream `id`: the function returned sends one item, at most STREAM_WINDOW ahead of what the main
   * thread has consumed (back-pressure reaches the callable's generator); it resolves false once the main
   * thread cancelled the stream.
   */
  openStream(id: number): (item: StreamItem) => Promise<boolean> {
    const state: StreamState = { credit: STREAM_WINDOW, cancelled: false };
    this.streams.set(id, state);
    return async (item) => {
      while (state.credit === 0 && !state.cancelled) await new Promise<void>((resolve) => (state.wake = resolve));
      if (state.cancelled) return false;
      state.credit--;
      const encoded = item.response === undefined ? undefined : encodeResponses([item.response]);
      this.post({ type: 'item', id, index: item.index, final: item.final === true, response: encoded?.value }, encoded?.transferList);
      return true;
    };
  }

  /** Batch `id` is answered: abort notices and acks for it are ignored from now on. */
  done(id: number): void {
    this.streams.delete(id);
    this.running.delete(id);
  }

  private receive(msg: ToWorker): void {
    switch (msg.type) {
      case 'batch':
        this.batch(msg.id, msg.batch, msg.stream === true);
        break;
      case 'stream-ack':
      case 'stream-cancel': {
        const state = this.streams.get(msg.id);
        if (!state) break;
        if (msg.type === 'stream-ack') state.credit++;
        else state.cancelled = true;
        state.wake?.();
        state.wake = undefined;
        break;
      }
      case 'abort':
        this.running.get(msg.id)?.[msg.index]?.abort(deserializeError(msg.reason));
        break;
      case 'bls-result':
        this.calls.get(msg.call)?.resolve(decodeColumns(msg.outputs, 1)[0] as Record<string, Tensor>);
        break;
      case 'bls-error':
        this.calls.get(msg.call)?.reject(deserializeError(msg.error));
        break;
      case 'sequence-state-free':
        this.runner?.freeStates(msg.ids);
        break;
      case 'close':
        this.runner?.close();
        break;
    }
  }

  private batch(id: number, wire: Extract<ToWorker, { type: 'batch' }>['batch'], stream: boolean): void {
    let requests: Request[];
    try {
      const decoded = decodeRequests(wire);
      requests = decoded.requests;
      requests.forEach((r, index) => {
        (r as { infer: Request['infer'] }).infer = (call) => this.callOut(id, index, call);
      });
      this.running.set(id, decoded.cancellations);
    } catch (err) {
      this.sendError(id, err);
      return;
    }
    this.runner?.run(id, requests, stream);
  }

  /** `request.infer` for request `index` of batch `id`: the main thread runs it as the request's own call. */
  private callOut(id: number, index: number, call: InferCall): Promise<Record<string, Tensor>> {
    const { signal, ...rest } = call;
    if (signal?.aborted) return Promise.reject(signal.reason instanceof Error ? signal.reason : new Error('the call was cancelled'));
    const callId = this.nextCall++;
    // Copied, not moved: the caller may still read its inputs.
    const transfers = new TransferList();
    const inputs = encodeColumns([rest.inputs], transfers, true);
    const request = { modelName: rest.modelName, modelVersion: rest.modelVersion, inputs, requestedOutputs: rest.requestedOutputs, parameters: rest.parameters, url: rest.url, ...(rest.sequence && { sequence: rest.sequence }) };
    return new Promise<Record<string, Tensor>>((resolve, reject) => {
      const onAbort = () => this.post({ type: 'bls-abort', call: callId, reason: serializeError(signal?.reason ?? new Error('the call was cancelled')) });
      signal?.addEventListener('abort', onAbort, { once: true });
      const settle = () => {
        this.calls.delete(callId);
        signal?.removeEventListener('abort', onAbort);
      };
      this.calls.set(callId, {
        resolve: (outputs) => {
          settle();
          resolve(outputs);
        },
        reject: (err) => {
          settle();
          reject(err);
        },
      });
      try {
        this.post({ type: 'bls', id, index, call: callId, request }, transfers.list);
      } catch (err) {
        this.calls.get(callId)?.reject(err as Error);
      }
    });
  }
}
