import type { OutputValue, Request, Response, StreamItem, Tensor } from '../lib';
import { isAsyncIterable } from '../lib/callable/callable';
import { requestsContext, type TritonContext } from './context';
import { makeDecorator } from './decorate';

/** A function over one request's inputs; the context's `requests` is that one request. */
export type SampleFn = (
  inputs: Record<string, Tensor>,
  request: Request,
  context: TritonContext,
) => Promise<Record<string, OutputValue>> | Record<string, OutputValue> | AsyncIterable<Record<string, OutputValue>>;

/**
 * Calls the function once per request (every request of the batch, concurrently) and keeps their order.
 * For a decoupled model the function may be an async generator: each request's responses stream as it
 * yields them, the requests' generators running side by side.
 */
export const sample = makeDecorator<SampleFn>(
  'sample',
  async (fn, self, requests, instance) => {
    const runs = requests.map((r) => {
      const { context, dispose } = requestsContext([r], instance);
      let result: unknown;
      try {
        result = fn.call(self, r.inputs as Record<string, Tensor>, r, context);
      } catch (err) {
        dispose();
        throw err;
      }
      return { result, dispose };
    });
    if (runs.some((run) => isAsyncIterable(run.result))) return mergeStreams(runs) as unknown as Response[];
    return Promise.all(
      runs.map(async ({ result, dispose }) => {
        try {
          return await (result as Promise<Response>);
        } finally {
          dispose();
        }
      }),
    );
  },
  'sample-fn',
);

/** Interleaves the requests' response generators as their responses come. */
async function* mergeStreams(runs: { result: unknown; dispose: () => void }[]): AsyncGenerator<StreamItem> {
  const iterators = runs.map(({ result }) =>
    isAsyncIterable(result) ? (result as AsyncIterable<Response>)[Symbol.asyncIterator]() : singleResponse(result as Promise<Response>),
  );
  const next = (index: number) => iterators[index]!.next().then((r) => ({ index, r }));
  const pending = new Map(iterators.map((_, i) => [i, next(i)]));
  try {
    while (pending.size > 0) {
      const { index, r } = await Promise.race(pending.values());
      if (r.done) {
        pending.delete(index);
        yield { index, final: true };
        continue;
      }
      pending.set(index, next(index));
      yield { index, response: r.value };
    }
  } finally {
    await Promise.allSettled(iterators.map((it) => it.return?.()));
    for (const run of runs) run.dispose();
  }
}

async function* singleResponse(response: Promise<Response>): AsyncGenerator<Response> {
  yield await response;
}
