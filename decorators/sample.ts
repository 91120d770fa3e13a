import type { OutputValue, Request, Tensor } from '../lib';
import { makeDecorator } from './decorate';

/** A function over one request's inputs. */
export type SampleFn = (
  inputs: Record<string, Tensor>,
  request: Request,
) => Promise<Record<string, OutputValue>> | Record<string, OutputValue>;

/** Calls the function once per request (every request of the batch, concurrently) and keeps their order. */
export const sample = makeDecorator<SampleFn>('sample', (fn, self, requests) =>
  Promise.all(requests.map((r) => fn.call(self, r.inputs as Record<string, Tensor>, r))),
);
