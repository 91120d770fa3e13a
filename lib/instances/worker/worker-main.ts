/**
 * The entry of a worker-thread instance. It loads the user's module, builds the callable with the instance's
 * context, calls `initialize`, then runs one batch per message, one after another in the order they came,
 * until told to close, when it awaits the batches still queued and calls `finalize`.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import type { InferCall, Request, Response, StreamItem } from '../../callable';
import type { Tensor } from '../../tensor/tensor';
import type { Cancellation } from '../../cancellation';
import { buildCallable, type LoadedCallable } from '../../infer-func';
import { decodeRequests, encodeResponses, isDataCloneError } from './batch-codec';
import { decodeColumns, encodeColumns, TransferList } from './columns';
import { deserializeError, serializeError } from './error-transfer';
import { loadExport } from './load-export';
import type { FromWorker, ToWorker, WireBatch, WorkerInit } from './messages';

/** Stream items a worker sends ahead of what the main thread has consumed. */
const STREAM_WINDOW = 16;

function isAsyncIterable(value: unknown): value is AsyncIterable<StreamItem> {
  return typeof value === 'object' && value !== null && typeof (value as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === 'function';
}

function post(port: MessagePort, message: FromWorker, transferList: ArrayBuffer[] = []): void {
  port.postMessage(message, transferList);
}

async function main(port: MessagePort, init: WorkerInit): Promise<void> {
  let loaded: LoadedCallable;
  try {
    loaded = await buildCallable(await loadExport(init.module, init.exportName), init.context);
    await loaded.initialize?.(init.context);
  } catch (err) {
    // The main thread terminates this worker once it reads the failure.
    post(port, { type: 'start-failed', error: serializeError(err) });
    return;
  }
  /** Per batch received and not answered, its requests' cancellations (abort notices name them). */
  const running = new Map<number, (Cancellation | undefined)[]>();
  /** Batches run one after another, in the order they came; this settles when the last one has. */
  let last: Promise<void> = Promise.resolve();
  /** `request.infer` calls waiting for the main thread's answer. */
  const calls = new Map<number, { resolve(outputs: Record<string, Tensor>): void; reject(err: Error): void }>();
  let nextCall = 0;

  /** `request.infer` for request `index` of batch `id`: the main thread runs it as the request's own call. */
  const callOut = (id: number, index: number, call: InferCall): Promise<Record<string, Tensor>> => {
    const { signal, ...rest } = call;
    if (signal?.aborted) return Promise.reject(signal.reason instanceof Error ? signal.reason : new Error('the call was cancelled'));
    const callId = nextCall++;
    // Copied, not moved: the caller may still read its inputs.
    const transfers = new TransferList();
    const inputs = encodeColumns([rest.inputs], transfers, true);
    const request = { modelName: rest.modelName, modelVersion: rest.modelVersion, inputs, requestedOutputs: rest.requestedOutputs, parameters: rest.parameters, url: rest.url };
    return new Promise<Record<string, Tensor>>((resolve, reject) => {
      const onAbort = () => post(port, { type: 'bls-abort', call: callId, reason: serializeError(signal?.reason ?? new Error('the call was cancelled')) });
      signal?.addEventListener('abort', onAbort, { once: true });
      const settle = () => {
        calls.delete(callId);
        signal?.removeEventListener('abort', onAbort);
      };
      calls.set(callId, {
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
        post(port, { type: 'bls', id, index, call: callId, request }, transfers.list);
      } catch (err) {
        calls.get(callId)?.reject(err as Error);
      }
    });
  };

  const runBatch = async (id: number, requests: Request[]): Promise<void> => {
    try {
      const responses = await loaded.callable(requests, init.context);
      sendResult(port, id, responses);
    } catch (err) {
      post(port, { type: 'error', id, error: serializeError(err) });
    } finally {
      running.delete(id);
    }
  };

  /** Open streams: items the worker may still send before an ack, and whether the reader went away. */
  const streams = new Map<number, { credit: number; cancelled: boolean; wake?: () => void }>();

  /**
   * Runs a decoupled batch: sends the callable's items one message each, at most STREAM_WINDOW ahead of
   * what the main thread has consumed (back-pressure reaches the callable's generator), and closes the
   * generator when the main thread cancels the stream.
   */
  const runStream = async (id: number, requests: Request[]): Promise<void> => {
    const state = { credit: STREAM_WINDOW, cancelled: false } as { credit: number; cancelled: boolean; wake?: () => void };
    streams.set(id, state);
    const send = async (item: StreamItem): Promise<boolean> => {
      while (state.credit === 0 && !state.cancelled) await new Promise<void>((resolve) => (state.wake = resolve));
      if (state.cancelled) return false;
      state.credit--;
      const encoded = item.response === undefined ? undefined : encodeResponses([item.response]);
      post(port, { type: 'item', id, index: item.index, final: item.final === true, response: encoded?.value }, encoded?.transferList);
      return true;
    };
    try {
      const result = (await loaded.callable(requests, init.context)) as unknown;
      if (isAsyncIterable(result)) {
        for await (const item of result) if (!(await send(item))) break;
      } else if (Array.isArray(result)) {
        for (let index = 0; index < result.length; index++) if (!(await send({ index, response: result[index] as Response, final: true }))) break;
      } else {
        throw new Error(`the callable of a decoupled model must return an async iterable of stream items or an array of responses, got ${typeof result}`);
      }
      post(port, { type: 'stream-end', id });
    } catch (err) {
      post(port, { type: 'error', id, error: serializeError(err) });
    } finally {
      streams.delete(id);
      running.delete(id);
    }
  };

  const enqueue = (id: number, wire: WireBatch, stream: boolean): void => {
    let requests: Request[];
    try {
      const decoded = decodeRequests(wire);
      requests = decoded.requests;
      requests.forEach((r, index) => {
        (r as { infer: Request['infer'] }).infer = (call) => callOut(id, index, call);
      });
      running.set(id, decoded.cancellations);
    } catch (err) {
      post(port, { type: 'error', id, error: serializeError(err) });
      return;
    }
    last = last.then(() => (stream ? runStream(id, requests) : runBatch(id, requests)));
  };

  const close = async (): Promise<void> => {
    await last;
    try {
      await loaded.finalize?.();
      post(port, { type: 'closed' });
    } catch (err) {
      post(port, { type: 'closed', error: serializeError(err) });
    }
  };

  port.on('message', (msg: ToWorker) => {
    switch (msg.type) {
      case 'batch':
        enqueue(msg.id, msg.batch, msg.stream === true);
        break;
      case 'stream-ack':
      case 'stream-cancel': {
        const state = streams.get(msg.id);
        if (!state) break;
        if (msg.type === 'stream-ack') state.credit++;
        else state.cancelled = true;
        state.wake?.();
        state.wake = undefined;
        break;
      }
      case 'abort':
        running.get(msg.id)?.[msg.index]?.abort(deserializeError(msg.reason));
        break;
      case 'bls-result':
        calls.get(msg.call)?.resolve(decodeColumns(msg.outputs, 1)[0] as Record<string, Tensor>);
        break;
      case 'bls-error':
        calls.get(msg.call)?.reject(deserializeError(msg.error));
        break;
      case 'close':
        void close();
        break;
    }
  });
  post(port, { type: 'ready' });
}

/** Sends a batch's responses, transferring their buffers; copies them if a buffer cannot be transferred. */
function sendResult(port: MessagePort, id: number, responses: unknown): void {
  let encoded = encodeResponses(responses);
  try {
    post(port, { type: 'result', id, result: encoded.value }, encoded.transferList);
    return;
  } catch (err) {
    if (!isDataCloneError(err)) throw err;
  }
  encoded = encodeResponses(responses, true);
  try {
    post(port, { type: 'result', id, result: encoded.value }, encoded.transferList);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    throw new Error(`the callable's responses cannot be sent to the main thread (only tensors, plain objects, arrays, strings and numbers can): ${message}`, { cause: err });
  }
}

if (parentPort) void main(parentPort, workerData as WorkerInit);
