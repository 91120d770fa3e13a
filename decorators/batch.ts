import { TritonError, concatBatch, type OutputValue, type Request, type Response, type Tensor } from '../lib';
import { makeDecorator } from './decorate';

/** What a `@batch` function receives besides its inputs. */
export interface BatchContext {
  /** The requests that make up this batch, in order (their parameters, ids and signals). */
  readonly requests: readonly Request[];
}

/** A function over one batch: inputs concatenated along dim 0, outputs with the same number of rows. */
export type BatchFn = (
  inputs: Record<string, Tensor>,
  context: BatchContext,
) => Promise<Record<string, OutputValue>> | Record<string, OutputValue>;

/**
 * Concatenates the requests' inputs along dim 0, calls the function once, and splits each output back by
 * each request's batch size. Requests in one batch must carry the same inputs.
 */
export const batch = makeDecorator<BatchFn>('batch', async (fn, self, requests) => {
  const first = requests[0];
  if (!first) return [];
  const names = Object.keys(first.inputs).sort();
  const rows = requests.map((r, i) => {
    const keys = Object.keys(r.inputs).sort();
    if (keys.join('\0') !== names.join('\0')) {
      throw new TritonError(
        'INVALID_ARGUMENT',
        `@batch: requests in one batch must carry the same inputs; request 0 has [${names.join(', ')}], request ${i} has [${keys.join(', ')}]`,
      );
    }
    return (r.inputs[names[0] as string]?.shape[0] ?? 1) as number;
  });
  const inputs: Record<string, Tensor> = {};
  for (const name of names) inputs[name] = concatBatch(requests.map((r) => r.inputs[name] as Tensor));
  const outputs = await fn.call(self, inputs, { requests });
  return splitOutputs(outputs, rows);
});

/** Splits batched outputs back into one response per request, by rows; views, no copies. */
export function splitOutputs(outputs: Record<string, OutputValue>, rows: readonly number[]): Response[] {
  if (typeof outputs !== 'object' || outputs === null) {
    throw new TritonError('INFERENCE_FAILED', `@batch: the function must return an object of outputs, got ${outputs === null ? 'null' : typeof outputs}`);
  }
  const total = rows.reduce((a, b) => a + b, 0);
  const responses: Response[] = rows.map(() => ({}));
  for (const [name, value] of Object.entries(outputs)) {
    const outRows = value?.shape?.[0];
    if (outRows !== total) {
      throw new TritonError('INFERENCE_FAILED', `@batch: output '${name}' has ${outRows ?? 'no'} rows but the batch has ${total}`);
    }
    const perRow = total === 0 ? 0 : value.data.length / total;
    let start = 0;
    rows.forEach((n, i) => {
      const end = start + n;
      const data = Array.isArray(value.data)
        ? value.data.slice(start * perRow, end * perRow)
        : (value.data as unknown as { subarray(a: number, b: number): unknown }).subarray(start * perRow, end * perRow);
      (responses[i] as Response)[name] = { ...value, shape: [n, ...value.shape.slice(1)], data } as OutputValue;
      start = end;
    });
  }
  return responses;
}
