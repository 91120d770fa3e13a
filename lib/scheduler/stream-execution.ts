import { TritonError, toTritonError } from '../base/errors';
import type { Request, Response, StreamItem } from '../callable/callable';
import type { Instance } from '../instances/instance';
import type { Pending } from './priority-queue';
import type { ResponseStream } from './response-stream';

/**
 * Runs a decoupled batch: routes each streamed item to its request's stream, waiting while a stream's
 * buffer is full (back-pressure on the producer), and closes the producer once every request's stream
 * has ended or every reader has gone. A failure ends every stream of the batch with its error; resolves
 * with whether the execution failed, after `onError` has seen the failure.
 */
export async function runStreamBatch<T>(
  instance: Instance,
  batch: readonly Pending[],
  finalize: (request: Request, response: Response) => T,
  onError: (err: unknown) => void,
): Promise<boolean> {
  const open = new Set(batch.map((_, i) => i));
  try {
    if (!instance.stream) throw new TritonError('INFERENCE_FAILED', `instance ${instance.name} cannot stream responses (decoupled models need in-process or worker instances)`);
    const iterator = instance.stream(batch.map((p) => p.request))[Symbol.asyncIterator]();
    try {
      while (open.size > 0) {
        const next = await iterator.next();
        if (next.done) break;
        const item: StreamItem = next.value;
        const p = batch[item.index];
        if (!p || !open.has(item.index)) {
          throw new TritonError('INFERENCE_FAILED', `instance ${instance.name}: response for request ${item.index}, which is ${p ? 'already final' : 'not in the batch'}`);
        }
        const stream = p.stream as ResponseStream<T>;
        if (item.response !== undefined) {
          let value: T;
          try {
            value = finalize(p.request, item.response);
          } catch (err) {
            stream.fail(err);
            open.delete(item.index);
            continue;
          }
          await stream.push(value, item.final === true);
        } else if (item.final) {
          stream.end();
        }
        if (item.final || stream.closed) open.delete(item.index);
      }
    } finally {
      // Closes the callable's generator when every stream has ended or been abandoned.
      await iterator.return?.();
    }
    for (const i of open) (batch[i]?.stream as ResponseStream<T>).end();
    return false;
  } catch (err) {
    onError(err);
    const error = toTritonError(err, 'INFERENCE_FAILED');
    for (const p of batch) (p.stream as ResponseStream<T>).fail(error);
    return true;
  }
}
