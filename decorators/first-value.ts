import { TritonError, type ParameterValue, type Tensor } from '../lib';
import { elementCount } from '../lib/tensor';
import { batchedNames, partsOf, replaceInputs } from './batch-inputs';
import { derivedContext, describeRequest, parameterKey, showParameter, type BatchContext } from './context';
import { makeBatchDecorator, misuse, namesAndOptions, type BatchDecorator } from './decorate';
import { dimsOf, rowKey, showRow, sliceRows } from './tensor-rows';

/** Options of `@firstValue`. */
export interface FirstValueOptions {
  /** Request parameters to collapse too: their one value goes to `context.batchParameters`. */
  readonly parameters?: readonly string[];
  /** Check that every row (every request, for parameters) holds the same value; true by default. */
  readonly strict?: boolean;
  /** Give a single-element value shape `[]` (PyTriton's `squeeze_single_values`); true by default. */
  readonly squeeze?: boolean;
}

/**
 * Replaces each named input by its first row, without the batch dim (shape `[]` for a single element unless
 * `squeeze: false`), after checking that every row holds the same value; named parameters are checked the same
 * way across the batch's requests and put in `context.batchParameters`. Goes below `@batch`; to serve
 * batches that mix values, put `@groupByValues` with the same names above it.
 */
export function firstValue(...names: string[]): BatchDecorator;
export function firstValue(...args: [...names: string[], options: FirstValueOptions]): BatchDecorator;
export function firstValue(...args: unknown[]): BatchDecorator {
  const { names, options } = namesAndOptions<FirstValueOptions>('firstValue', args);
  const parameters = options.parameters ?? [];
  if (names.length + parameters.length === 0) throw misuse('@firstValue needs at least one input name or parameter');
  const strict = options.strict ?? true;
  const squeeze = options.squeeze ?? true;
  return makeBatchDecorator('firstValue', async (fn, self, inputs, context) => {
    const replacements: Record<string, Tensor> = {};
    for (const name of names) replacements[name] = firstRow(name, inputs, context, strict, squeeze);
    const found: Record<string, ParameterValue> = {};
    for (const p of parameters) {
      const value = firstParameter(p, context, strict);
      if (value !== undefined) found[p] = value;
    }
    const next = parameters.length > 0 ? derivedContext(context, { batchParameters: { ...context.batchParameters, ...found } }) : context;
    return fn.call(self, names.length > 0 ? replaceInputs(inputs, context, replacements) : inputs, next);
  });
}

function firstRow(name: string, inputs: Record<string, Tensor>, context: BatchContext, strict: boolean, squeeze: boolean): Tensor {
  const parts = partsOf(inputs, context, name);
  if (!parts) {
    const why = name in inputs ? 'was already replaced by a value' : 'is not in the batch';
    throw new TritonError('INFERENCE_FAILED', `@firstValue: input "${name}" ${why} (batched inputs: ${batchedNames(inputs, context).join(', ') || 'none'})`);
  }
  const owner = parts.findIndex((p) => (p.shape[0] ?? 0) > 0);
  const first = parts[owner];
  if (!first) throw new TritonError('INFERENCE_FAILED', `@firstValue: input "${name}" has no rows in this batch`);
  if (strict) {
    const key = rowKey(first, 0);
    parts.forEach((p, i) => {
      for (let row = 0; row < (p.shape[0] ?? 0); row++) {
        if (rowKey(p, row) === key) continue;
        const was = `${describeRequest(context.requests, owner)} has ${showRow(first, 0)}`;
        if (i === owner) {
          throw new TritonError('INVALID_ARGUMENT', `@firstValue: input "${name}" must hold one value in every row, but ${was} in row 0 and ${showRow(p, row)} in row ${row}`);
        }
        throw new TritonError(
          'INFERENCE_FAILED',
          `@firstValue: input "${name}" must hold one value in the whole batch, but ${was} and ${describeRequest(context.requests, i)} has ${showRow(p, row)} ` +
            `(row ${row}); put @groupByValues('${name}') above @firstValue to split the batch by it`,
        );
      }
    });
  }
  const dims = dimsOf(first);
  return { dtype: first.dtype, shape: squeeze && elementCount(dims) === 1 ? [] : [...dims], data: sliceRows(first, 0, 1).data } as Tensor;
}

function firstParameter(name: string, context: BatchContext, strict: boolean): ParameterValue | undefined {
  const values = context.requests.map((r) => r.parameters[name]);
  const owner = values.findIndex((v) => v !== undefined);
  if (owner < 0) return undefined;
  const value = values[owner];
  if (strict) {
    values.forEach((v, i) => {
      if (parameterKey(v) === parameterKey(value)) return;
      throw new TritonError(
        'INFERENCE_FAILED',
        `@firstValue: parameter "${name}" must be the same in every request of the batch, but ${describeRequest(context.requests, owner)} sends ${showParameter(value)} ` +
          `and ${describeRequest(context.requests, i)} sends ${showParameter(v)}; put @groupByValues({ parameters: ['${name}'] }) above @firstValue to split the batch by it`,
      );
    });
  }
  return value;
}
