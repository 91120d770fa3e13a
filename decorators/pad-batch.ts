import { TritonError, type Request, type Tensor } from '../lib';
import { batchedNames, batchInputs, partsOf, plainInputs } from './batch-inputs';
import { derivedContext, describeRequest, totalRows, withInputs, type BatchContext, type BatchOutputs } from './context';
import { isDecoratorCall, makeBatchDecorator, misuse, type BatchDecorator } from './decorate';
import { padRows, type PadOptions } from './pad';
import { extentsOf, narrower, withExtents } from './row-extents';
import { checkRows, dimsOf, gatherRows, sameDims, sliceRows } from './tensor-rows';

/** Options of `@padBatch`. */
export interface PadBatchOptions extends PadOptions {
  /**
   * Which outputs are cut back per request, and to which input's dims. By default (`undefined`) an output
   * whose non-batch dims equal the padded dims of an input that needed padding in this batch follows that input
   * (the first such input by name, as `@batch` orders them). A map `{ OUTPUT: 'INPUT' }` names the input for an output and also
   * allows an output whose dims only start with the input's padded dims (e.g. `[T, H]` after tokens `[T]`);
   * outputs it does not name keep the default rule. `false` keeps every output padded.
   */
  readonly unpad?: false | Readonly<Record<string, string>>;
  /**
   * Pads the number of rows too, up to the smallest of these sizes that holds the batch (PyTriton's
   * `pad_batch`), by repeating the last row; `'config'` takes the model's preferred batch sizes and max batch
   * size. The extra rows are dropped from the outputs.
   */
  readonly batchSizes?: readonly number[] | 'config';
}

/** `@padBatch` and `@padBatch({ ...options })`. */
export type PadBatch = BatchDecorator & ((options?: PadBatchOptions) => BatchDecorator);

/**
 * Pads every batched input to one non-batch shape (each dim the largest any request sent), so requests of
 * different shapes make one batch; then cuts the outputs that follow an input's shape back, per request, to
 * that request's own dims (see `unpad`). Goes below `@batch`.
 */
export const padBatch: PadBatch = ((...args: unknown[]) => {
  if (isDecoratorCall(args)) return (defaultPadBatch as (...a: unknown[]) => unknown)(...args);
  if (args.length > 1 || (args[0] !== undefined && (typeof args[0] !== 'object' || args[0] === null))) {
    throw misuse('@padBatch takes one options object: @padBatch({ value: 0, mode: "constant" }), or no arguments');
  }
  return makePadBatch((args[0] ?? {}) as PadBatchOptions);
}) as PadBatch;

const defaultPadBatch = makePadBatch({});

function makePadBatch(options: PadBatchOptions): BatchDecorator {
  checkOptions(options);
  return makeBatchDecorator('padBatch', async (fn, self, inputs, context) => {
    const names = batchedNames(inputs, context);
    const { requests } = context;
    const rows = [...context.rows];
    const target = new Map<string, readonly number[]>();
    const original = new Map<string, (readonly number[])[]>();
    const padded = new Map<string, Tensor[]>();
    for (const name of names) {
      const parts = partsOf(inputs, context, name) as readonly Tensor[];
      const dims = parts.map(dimsOf);
      const rank = (dims[0] as readonly number[]).length;
      dims.forEach((d, i) => {
        if (d.length !== rank) {
          throw new TritonError(
            'INFERENCE_FAILED',
            `@padBatch: input "${name}" has dims [${(dims[0] as readonly number[]).join(',')}] in ${describeRequest(requests, 0)} ` +
              `but [${d.join(',')}] in ${describeRequest(requests, i)}; padding cannot change the rank`,
          );
        }
      });
      const dimsMax = Array.from({ length: rank }, (_, a) => Math.max(...dims.map((d) => d[a] as number)));
      target.set(name, dimsMax);
      original.set(name, dims);
      padded.set(
        name,
        parts.map((p, i) => padRows(p, dimsMax, options, `@padBatch: input "${name}" of ${describeRequest(requests, i)}`)),
      );
    }

    const total = totalRows(rows);
    const extra = extraRows(options.batchSizes, total, context);
    const last = requests.length - 1;
    if (extra > 0 && (rows[last] ?? 0) > 0) {
      // The extra rows repeat the batch's last row and count as the last request's.
      const n = rows[last] as number;
      const repeat = [...Array.from({ length: n }, (_, r) => r), ...new Array<number>(extra).fill(n - 1)];
      for (const name of names) {
        const parts = padded.get(name) as Tensor[];
        parts[last] = gatherRows(parts[last] as Tensor, repeat);
      }
      rows[last] = n + extra;
    }
    const padTotal = totalRows(rows);

    const subRequests = requests.map((r, i): Request => {
      const own: Record<string, Tensor> = { ...r.inputs };
      for (const name of names) own[name] = (padded.get(name) as Tensor[])[i] as Tensor;
      return withInputs(r, own);
    });
    const sub = derivedContext(context, { requests: subRequests, rows, parameters: subRequests.map((r) => r.parameters) });
    const outputs = await fn.call(self, batchInputs(subRequests, names, '@padBatch', plainInputs(inputs, context)), sub);
    if (typeof outputs !== 'object' || outputs === null) {
      throw new TritonError('INFERENCE_FAILED', `@padBatch: the function must return an object of outputs, got ${outputs === null ? 'null' : typeof outputs}`);
    }

    const wasPadded = (name: string): boolean => (original.get(name) ?? []).some((d) => !sameDims(d, target.get(name) as readonly number[]));
    const follows = (output: string, dims: readonly number[]): string | undefined => {
      if (options.unpad === false) return undefined;
      const named = options.unpad?.[output];
      if (named !== undefined) {
        const t = target.get(named);
        if (!t) {
          throw new TritonError('INFERENCE_FAILED', `@padBatch: unpad maps output "${output}" to input "${named}", which is not a batched input here (batched: ${names.join(', ') || 'none'})`);
        }
        if (!sameDims(dims.slice(0, t.length), t)) {
          throw new TritonError(
            'INFERENCE_FAILED',
            `@padBatch: output "${output}" has dims [${dims.join(',')}], which do not start with the padded dims [${t.join(',')}] of input "${named}" that unpad says it follows`,
          );
        }
        return named;
      }
      return names.find((n) => wasPadded(n) && sameDims(dims, target.get(n) as readonly number[]));
    };

    const result: BatchOutputs = {};
    const extents: Record<string, readonly (readonly number[] | undefined)[]> = {};
    const inner = extentsOf(outputs);
    for (const [name, value] of Object.entries(outputs)) {
      checkRows(value, padTotal, `@padBatch: output "${name}"`);
      const kept = sliceRows(value, 0, total);
      let perRow = inner?.[name]?.slice(0, total);
      const input = follows(name, dimsOf(kept));
      if (input !== undefined) {
        const prefix = (target.get(input) as readonly number[]).length;
        const rest = dimsOf(kept).slice(prefix);
        const own = new Array<readonly number[] | undefined>(total);
        let row = 0;
        context.rows.forEach((n, i) => {
          const real = [...((original.get(input) as (readonly number[])[])[i] as readonly number[]), ...rest];
          for (let j = 0; j < n; j++, row++) own[row] = narrower(real, perRow?.[row]);
        });
        perRow = own;
      }
      result[name] = kept;
      if (perRow?.some((e) => e !== undefined)) extents[name] = perRow;
    }
    return withExtents(result, extents);
  });
}

/** How many rows `batchSizes` adds to a batch of `total` rows. */
function extraRows(sizes: PadBatchOptions['batchSizes'], total: number, context: BatchContext): number {
  if (sizes === undefined) return 0;
  let list: readonly number[];
  if (sizes === 'config') {
    const config = context.instance?.modelConfig;
    if (!config) {
      throw new TritonError('INFERENCE_FAILED', "@padBatch: batchSizes: 'config' needs the model config, but the callable was called without an instance context");
    }
    const dynamic = config.dynamic_batching as { preferred_batch_size?: unknown } | undefined;
    const preferred = Array.isArray(dynamic?.preferred_batch_size) ? dynamic.preferred_batch_size.map(Number) : [];
    list = [...preferred, Number(config.max_batch_size)].filter((n) => n > 0);
  } else list = sizes;
  const size = [...list].sort((a, b) => a - b).find((s) => s >= total);
  return size === undefined ? 0 : size - total;
}

function checkOptions(options: PadBatchOptions): void {
  if (options.mode !== undefined && options.mode !== 'constant' && options.mode !== 'edge') {
    throw misuse(`@padBatch: mode must be "constant" or "edge", got ${JSON.stringify(options.mode)}`);
  }
  const sizes = options.batchSizes;
  if (sizes !== undefined && sizes !== 'config' && (!Array.isArray(sizes) || sizes.some((s) => !Number.isInteger(s) || s < 1))) {
    throw misuse(`@padBatch: batchSizes must be positive integers or 'config', got ${JSON.stringify(sizes)}`);
  }
  const unpad = options.unpad;
  if (unpad !== undefined && unpad !== false && (typeof unpad !== 'object' || unpad === null || Object.values(unpad).some((v) => typeof v !== 'string'))) {
    throw misuse('@padBatch: unpad must be false or a map { OUTPUT: "INPUT" }');
  }
  const v = options.value;
  if (v !== undefined && !['number', 'bigint', 'boolean', 'string'].includes(typeof v)) {
    throw misuse(`@padBatch: value must be a number, bigint, boolean or string, got ${typeof v}`);
  }
}
