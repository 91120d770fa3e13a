import { TritonError, type Request, type Tensor } from '../lib';
import { concatBatch } from '../lib/tensor';
import { describeRequest, totalRows, type BatchContext } from './context';
import { dimsOf, sameDims, sliceRows } from './tensor-rows';
import { flatten } from './ragged';

/**
 * The inputs object of a batch function.
 *
 * A batch is its requests (`context.requests`): request i's `inputs[name]` are its rows of input `name`.
 * The inputs object presents each batched input as the requests' tensors concatenated along dim 0, built on
 * first read, so a batch-level decorator that splits or pads the batch works on the requests' tensors and
 * never pays for a concatenation it does not use. Reading an input whose requests disagree on dtype or
 * non-batch dims fails then, naming the requests. Inputs a decorator replaced (`@firstValue`) are plain
 * values; the set of batched names rides on the object under a symbol.
 */
const BATCHED: unique symbol = Symbol('tstriton.batchedInputs');

/**
 * The batched names. A batch of one request holds that request's tensors as plain properties (its
 * concatenation is the tensor itself), so `sole` is that request: an input no longer identical to the
 * request's tensor was replaced.
 */
interface Batched {
  readonly names: Set<string>;
  readonly sole?: Request;
}

type Inputs = Record<string, Tensor> & { [BATCHED]?: Batched };

/** True if `name` is a batched input of `inputs` (marked so, and not replaced since). */
function isBatched(inputs: Inputs, batched: Batched, name: string): boolean {
  if (!batched.names.has(name)) return false;
  return !batched.sole || inputs[name] === batched.sole.inputs[name];
}

/** Rows a request contributes: dim 0 of its first input (1 when it has none). */
export function requestRows(request: Request): number {
  for (const name in request.inputs) return request.inputs[name]?.shape[0] ?? 1;
  return 1;
}

/**
 * The inputs object over `requests` for the batched `names`, plus `plain` values passed as they are.
 * `where` names the decorator in errors. A `ragged` input is one flat tensor of every request's elements
 * (Triton's `allow_ragged_batch`), whatever each request's shape.
 */
export function batchInputs(
  requests: readonly Request[],
  names: readonly string[],
  where: string,
  plain: Record<string, Tensor> = {},
  ragged: ReadonlySet<string> = NONE,
): Record<string, Tensor> {
  const out: Inputs = {};
  const sole = requests.length === 1 ? (requests[0] as Request) : undefined;
  const batched: Batched = { names: new Set(names), sole };
  Object.defineProperty(out, BATCHED, { value: batched, enumerable: false });
  for (const name of names) {
    if (sole && !ragged.has(name)) {
      const t = sole.inputs[name];
      if (!t) throw new TritonError('INFERENCE_FAILED', `${where}: input "${name}" is missing from ${describeRequest(requests, 0)}`);
      out[name] = t;
      continue;
    }
    let value: Tensor | undefined;
    defineInput(out, batched.names, name, () => (value ??= concatParts(requests, name, where, ragged.has(name))));
  }
  for (const name in plain) out[name] = plain[name] as Tensor;
  return out;
}

/** `inputs` with `replacements` as plain values, no longer batched; the other inputs stay as they were. */
export function replaceInputs(inputs: Record<string, Tensor>, context: BatchContext, replacements: Record<string, Tensor>): Record<string, Tensor> {
  const out: Inputs = {};
  const batched = new Set(batchedNames(inputs, context).filter((n) => !(n in replacements)));
  Object.defineProperty(out, BATCHED, { value: { names: batched }, enumerable: false });
  for (const name of Object.keys(inputs)) {
    if (name in replacements) continue;
    if (batched.has(name)) defineInput(out, batched, name, () => inputs[name] as Tensor);
    else out[name] = inputs[name] as Tensor;
  }
  for (const [name, value] of Object.entries(replacements)) out[name] = value;
  return out;
}

/**
 * Each request's tensor of batched input `name`, in the order of `context.requests`; undefined when `name`
 * is not a batched input (absent, or replaced by a plain value).
 */
export function partsOf(inputs: Record<string, Tensor>, context: BatchContext, name: string): readonly Tensor[] | undefined {
  const batched = (inputs as Inputs)[BATCHED];
  if (batched) {
    if (!isBatched(inputs, batched, name)) return undefined;
    return context.requests.map((r, i) => {
      const t = r.inputs[name];
      if (!t) throw new TritonError('INFERENCE_FAILED', `batch input "${name}" is missing from ${describeRequest(context.requests, i)}`);
      return t;
    });
  }
  // Inputs built by hand (a batch function called directly): a tensor with a row per batch row is batched.
  const t = inputs[name];
  if (!t || t.shape[0] !== totalRows(context.rows)) return undefined;
  let start = 0;
  return context.rows.map((n) => sliceRows(t, start, (start += n)));
}

/** The names of the batched inputs, in the inputs object's order. */
export function batchedNames(inputs: Record<string, Tensor>, context: BatchContext): string[] {
  const batched = (inputs as Inputs)[BATCHED];
  return Object.keys(inputs).filter((n) => (batched ? isBatched(inputs, batched, n) : partsOf(inputs, context, n) !== undefined));
}

/** The inputs passed as plain values (not batched), by name. */
export function plainInputs(inputs: Record<string, Tensor>, context: BatchContext): Record<string, Tensor> {
  const batched = new Set(batchedNames(inputs, context));
  const out: Record<string, Tensor> = {};
  for (const name of Object.keys(inputs)) if (!batched.has(name)) out[name] = inputs[name] as Tensor;
  return out;
}

/** An enumerable lazy input; assigning to it (in user code) replaces it by a plain value. */
function defineInput(out: Inputs, batched: Set<string>, name: string, get: () => Tensor): void {
  let assigned: Tensor | undefined;
  Object.defineProperty(out, name, {
    enumerable: true,
    configurable: true,
    get: () => assigned ?? get(),
    set: (v: Tensor) => {
      assigned = v;
      batched.delete(name);
    },
  });
}

const NONE: ReadonlySet<string> = new Set();

function concatParts(requests: readonly Request[], name: string, where: string, ragged = false): Tensor {
  const parts = requests.map((r, i) => {
    const t = r.inputs[name];
    if (!t) throw new TritonError('INFERENCE_FAILED', `${where}: input "${name}" is missing from ${describeRequest(requests, i)}`);
    return t;
  });
  if (ragged) return flatten(parts, requests, name, where);
  const first = parts[0] as Tensor;
  parts.forEach((t, i) => {
    if (t.dtype !== first.dtype) {
      throw new TritonError(
        'INFERENCE_FAILED',
        `${where}: input "${name}" cannot be batched: ${describeRequest(requests, 0)} sends ${first.dtype}, ${describeRequest(requests, i)} sends ${t.dtype}`,
      );
    }
    if (!sameDims(dimsOf(t), dimsOf(first))) {
      throw new TritonError(
        'INFERENCE_FAILED',
        `${where}: input "${name}" cannot be batched: ${describeRequest(requests, 0)} has dims [${dimsOf(first).join(',')}], ` +
          `${describeRequest(requests, i)} has [${dimsOf(t).join(',')}]; put @padBatch below @batch to pad it to one shape`,
      );
    }
  });
  return concatBatch(parts, requests);
}
