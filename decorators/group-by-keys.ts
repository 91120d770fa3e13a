import { TritonError, type Request, type Response } from '../lib';
import { makeDecorator, type RequestsFn } from './decorate';

/**
 * Splits the requests into groups with the same set of input names, calls the wrapped callable once per
 * group (one after the other, as one batch runs at a time on an instance), and returns the responses in the
 * original order. Goes above `@batch`, which needs one set of inputs per batch.
 */
export const groupByKeys = makeDecorator<RequestsFn>(
  'groupByKeys',
  async (fn, self, requests, instance) => {
    const groups = new Map<string, number[]>();
    requests.forEach((r, i) => {
      const key = Object.keys(r.inputs).sort().join('\0');
      const group = groups.get(key);
      if (group) group.push(i);
      else groups.set(key, [i]);
    });
    if (groups.size <= 1) return fn.call(self, requests, instance);
    const responses = new Array<Response>(requests.length);
    for (const indices of groups.values()) {
      const group = indices.map((i) => requests[i] as Request);
      const out = await fn.call(self, group, instance);
      if (!Array.isArray(out) || out.length !== group.length) {
        throw new TritonError(
          'INFERENCE_FAILED',
          `@groupByKeys: the wrapped callable returned ${Array.isArray(out) ? `${out.length} responses` : typeof out} for a group of ${group.length} requests ` +
            `(inputs [${Object.keys(group[0]?.inputs ?? {}).sort().join(', ')}])`,
        );
      }
      indices.forEach((i, j) => (responses[i] = out[j] as Response));
    }
    return responses;
  },
  'requests',
);
