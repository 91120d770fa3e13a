import type { OutputValue, Request, Tensor } from '../lib';
import { requestsContext, type TritonContext } from './context';
import { makeDecorator } from './decorate';

/** A function over one request's inputs; the context's `requests` is that one request. */
export type SampleFn = (
  inputs: Record<string, Tensor>,
  request: Request,
  context: TritonContext,
) => Promise<Record<string, OutputValue>> | Record<string, OutputValue>;

/** Calls the function once per request (every request of the batch, concurrently) and keeps their order. */
export const sample = makeDecorator<SampleFn>(
  'sample',
  (fn, self, requests, instance) =>
    Promise.all(
      requests.map(async (r) => {
        const { context, dispose } = requestsContext([r], instance);
        try {
          return await fn.call(self, r.inputs as Record<string, Tensor>, r, context);
        } finally {
          dispose();
        }
      }),
    ),
  'sample-fn',
);
