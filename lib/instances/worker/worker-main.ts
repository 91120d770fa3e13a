/**
 * The entry of a worker-thread instance. It loads the user's module, builds the callable with the instance's
 * context, calls `initialize`, then runs one batch per message, one after another in the order they came,
 * until told to close, when it awaits the batches still queued and calls `finalize`. The messages travel
 * over its ParentChannel.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { type Request, type Response, type StreamItem, isAsyncIterable } from '../../callable/callable';
import { buildCallable, type LoadedCallable } from '../../callable/infer-func';
import { serializeError } from './error-transfer';
import { enableTypeScript, loadExport } from './load-export';
import type { WorkerInit } from './messages';
import { ParentChannel } from './parent-channel';
import { WorkerMetrics } from './worker-metrics';
import { SequenceStateStore } from './sequence-state-store';
import { sequenceStateOf } from '../sequence-state-mark';
import type { InstanceContext, InstanceReport } from '../../callable/instance-context';


async function main(port: MessagePort, init: WorkerInit): Promise<void> {
  const channel = new ParentChannel(port);
  // The context's custom metrics cannot cross threads: the worker's own send their updates as messages.
  const context: InstanceContext = { ...init.context, metrics: new WorkerMetrics((message) => channel.post(message)) };
  let loaded: LoadedCallable;
  let report: InstanceReport | undefined;
  try {
    // A TypeScript module loads as the CLI's --module files do, unless the worker was given a hook of its own.
    if (/\.c?ts$/i.test(init.module)) enableTypeScript(`instance ${context.instanceName} (${init.module})`);
    loaded = await buildCallable(await loadExport(init.module, init.exportName), context);
    await loaded.initialize?.(context);
    report = loaded.report?.();
  } catch (err) {
    // The main thread terminates this worker once it reads the failure.
    channel.post({ type: 'start-failed', error: serializeError(err) });
    return;
  }
  /** Batches run one after another, in the order they came; this settles when the last one has. */
  let last: Promise<void> = Promise.resolve();

  /** The implicit states of this worker's sequences, made when the first sequence request arrives. */
  let states: SequenceStateStore | undefined;

  const runBatch = async (id: number, requests: Request[]): Promise<void> => {
    try {
      const store = requests.some((r) => sequenceStateOf(r)) ? (states ??= new SequenceStateStore(context.modelConfig)) : undefined;
      store?.before(requests);
      const responses = await loaded.callable(requests, context);
      store?.after(requests, responses);
      channel.sendResult(id, responses);
    } catch (err) {
      channel.sendError(id, err);
    } finally {
      channel.done(id);
    }
  };

  /** Runs a decoupled batch: sends the callable's items one message each, until done or the stream is cancelled. */
  const runStream = async (id: number, requests: Request[]): Promise<void> => {
    const send = channel.openStream(id);
    try {
      const result = (await loaded.callable(requests, context)) as unknown;
      if (isAsyncIterable<StreamItem>(result)) {
        for await (const item of result) if (!(await send(item))) break;
      } else if (Array.isArray(result)) {
        for (let index = 0; index < result.length; index++) if (!(await send({ index, response: result[index] as Response, final: true }))) break;
      } else {
        throw new Error(`the callable of a decoupled model must return an async iterable of stream items or an array of responses, got ${typeof result}`);
      }
      channel.post({ type: 'stream-end', id });
    } catch (err) {
      channel.sendError(id, err);
    } finally {
      channel.done(id);
    }
  };

  const close = async (): Promise<void> => {
    await last;
    try {
      await loaded.finalize?.();
      channel.post({ type: 'closed' });
    } catch (err) {
      channel.post({ type: 'closed', error: serializeError(err) });
    }
  };

  channel.listen({
    run: (id, requests, stream) => {
      last = last.then(() => (stream ? runStream(id, requests) : runBatch(id, requests)));
    },
    freeStates: (ids) => states?.free(ids),
    close: () => void close(),
  });
  channel.post(report === undefined ? { type: 'ready' } : { type: 'ready', report });
}

if (parentPort) void main(parentPort, workerData as WorkerInit);
