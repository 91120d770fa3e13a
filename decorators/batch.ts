import { RESPONSE_PARAMETERS, TritonError, type OutputValue, type Request, type Response, type StreamItem } from '../lib';
import { isAsyncIterable } from '../lib/callable/callable';
import { batchInputs, requestRows } from './batch-inputs';
import { batchContext, totalRows, type BatchContext, type BatchFn, type BatchOutputs, type StreamingBatchFn } from './context';
import { makeDecorator } from './decorate';
import { cropRows } from './pad';
import { extentsOf, requestExtent } from './row-extents';
import { checkRows, dimsOf, sameDims, sliceRows } from './tensor-rows';
import { batchInputTensors, raggedPlanOf, scatterOutput, type RaggedPlan } from './ragged';

export type { BatchContext, BatchFn, StreamingBatchFn };

/**
 * Concatenates the requests' inputs along dim 0, calls the function once with them and a `BatchContext`
 * (the requests, their rows and parameters, the instance, a signal), and splits each output back by each
 * request's batch size. Requests in one batch must carry the same inputs (put `@groupByKeys` or
 * `@fillOptionals` above it otherwise); batch-level decorators (`@groupByValues`, `@padBatch`,
 * `@firstValue`) go below it.
 */
export const batch = makeDecorator<BatchFn | StreamingBatchFn>(
  'batch',
  (fn, self, requests, instance) => {
    const first = requests[0];
    if (!first) return Promise.resolve([]);
    const names = Object.keys(first.inputs).sort();
    const joined = names.join('\0');
    for (let i = 1; i < requests.length; i++) {
      const keys = Object.keys((requests[i] as Request).inputs).sort();
      if (keys.join('\0') !== joined) {
        return Promise.reject(
          new TritonError(
            'INVALID_ARGUMENT',
            `@batch: requests in one batch must carry the same inputs; request 0 has [${names.join(', ')}], request ${i} has [${keys.join(', ')}]`,
          ),
        );
      }
    }
    const rows = requests.map(requestRows);
    const { context, dispose } = batchContext(requests, rows, { instance });
    const plan = raggedPlanOf(instance);
    let result: unknown;
    try {
      const inputs = plan ? batchInputs(requests, names, '@batch', batchInputTensors(requests, plan), plan.ragged) : batchInputs(requests, names, '@batch');
      result = (fn as (this: unknown, ...args: Parameters<BatchFn>) => unknown).call(self, inputs, context);
    } catch (err) {
      dispose();
      return Promise.reject(err);
    }
    if (isAsyncIterable(result)) {
      // A decoupled model: every yielded batch of outputs is split into one response per request.
      return Promise.resolve(splitStream(result as AsyncIterable<BatchOutputs>, rows, dispose) as unknown as Response[]);
    }
    // Continuations instead of an async function: this runs for every batch.
    return Promise.resolve(result as BatchOutputs | Promise<BatchOutputs>).then(
      (outputs) => {
        dispose();
        return splitOutputs(outputs, rows, plan && { plan, requests });
      },
      (err: unknown) => {
        dispose();
        throw err;
      },
    );
  },
  'batch-fn',
);

/**
 * Splits batched outputs back into one response per request, by rows: views, no copies, except where a
 * batch-level decorator padded an output, whose slices are cut back to each request's real dims.
 */
export function splitOutputs(outputs: BatchOutputs, rows: readonly number[], ragged?: { plan: RaggedPlan; requests: readonly Request[] }): Response[] {
  if (typeof outputs !== 'object' || outputs === null) {
    throw new TritonError('INFERENCE_FAILED', `@batch: the function must return an object of outputs, got ${outputs === null ? 'null' : typeof outputs}`);
  }
  const total = totalRows(rows);
  const extents = extentsOf(outputs);
  const responses: Response[] = new Array(rows.length);
  for (let i = 0; i < rows.length; i++) responses[i] = {};
  for (const name in outputs) {
    const value = outputs[name] as OutputValue;
    const source = ragged?.plan.scatter.get(name);
    if (source && ragged) {
      scatterOutput(value, ragged.requests, source, name).forEach((part, i) => ((responses[i] as Response)[name] = part));
      continue;
    }
    if (value?.shape?.[0] !== total) checkRows(value, total, `@batch: output '${name}'`);
    const perRow = extents?.[name];
    let start = 0;
    rows.forEach((n, i) => {
      const end = start + n;
      let part = sliceRows(value, start, end);
      const cut = perRow && requestExtent(perRow.slice(start, end));
      if (cut && !sameDims(cut, dimsOf(part))) part = cropRows(part, cut);
      (responses[i] as Response)[name] = part;
      start = end;
    });
  }
  const parameters = outputs[RESPONSE_PARAMETERS];
  if (parameters !== undefined) {
    const perRequest = Array.isArray(parameters);
    if (perRequest && parameters.length !== rows.length) {
      throw new TritonError('INFERENCE_FAILED', `@batch: ${parameters.length} response parameter objects for ${rows.length} requests`);
    }
    responses.forEach((r, i) => {
      const p = perRequest ? (parameters as readonly (Response[typeof RESPONSE_PARAMETERS])[])[i] : (parameters as Response[typeof RESPONSE_PARAMETERS]);
      if (p !== undefined) (r as { [RESPONSE_PARAMETERS]?: unknown })[RESPONSE_PARAMETERS] = p;
    });
  }
  return responses;
}

async function* splitStream(outputs: AsyncIterable<BatchOutputs>, rows: readonly number[], dispose: () => void): AsyncGenerator<StreamItem> {
  try {
    for await (const batchOutputs of outputs) {
      const responses = splitOutputs(batchOutputs, rows);
      for (let index = 0; index < responses.length; index++) yield { index, response: responses[index] };
    }
  } finally {
    dispose();
  }
}
