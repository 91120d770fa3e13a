import { TritonError, type Request, type Response } from '../lib';
import { requestsContext, type TritonContext } from './context';
import { batchMarkOf, makeDecorator } from './decorate';

/** A raw callable that also takes the call's context. */
export type ContextFn = (requests: Request[], context: TritonContext) => Promise<Response[]> | Response[];

/**
 * Gives a raw callable the call's context as its second argument: the instance (model name, version and
 * config, instance name, device), the requests and a signal that fires once all of them are cancelled.
 * Warmup calls get it too. Below `@batch` or `@sample` the context is always passed, so there
 * `@tritonContext` is accepted (as in PyTriton stacks) and changes nothing.
 */
export const tritonContext = makeDecorator<ContextFn>(
  'tritonContext',
  async (fn, self, requests, instance) => {
  const below = batchMarkOf(fn);
  if (below !== undefined) {
    throw new TritonError('INFERENCE_FAILED', `@tritonContext wraps @${below}, which works on batches: put @batch above them`);
  }
  const { context, dispose } = requestsContext(requests, instance);
  try {
    return await fn.call(self, requests, context);
  } finally {
    dispose();
  }
}, 'context-fn');
