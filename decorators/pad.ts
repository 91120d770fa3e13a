import { TritonError, type OutputValue } from '../lib';
import { elementCount } from '../lib/tensor';
import type { BatchOutputs } from './context';
import { allocLike, copyElements, dimsOf, isTyped, sameDims, type Elements } from './tensor-rows';

/** How padding fills new elements: `constant` with a value, `edge` by repeating the last element of the axis. */
export type PadMode = 'constant' | 'edge';

/** Padding settings shared by `@padBatch` and `constantPadder`. */
export interface PadOptions {
  /**
   * The value of new elements in `constant` mode (and in `edge` mode along an axis of size 0): 0 by default,
   * empty for BYTES. FP16/BF16 take the raw 16-bit pattern. BigInt or integer numbers for INT64/UINT64.
   */
  readonly value?: number | bigint | boolean | string;
  /** `constant` (default) or `edge`. */
  readonly mode?: PadMode;
}

/**
 * A function that makes the outputs of several groups the same shape before `@groupByValues` merges them;
 * it gets one output object per group and returns them, padded, in the same order.
 */
export type PadFn = (groups: readonly BatchOutputs[]) => BatchOutputs[];

type Writable = { [index: number]: unknown; readonly length: number };

/** `t` with its non-batch dims grown to `dims`: new elements go at the end of each axis. `what` names it in errors. */
export function padRows<T extends OutputValue>(t: T, dims: readonly number[], options: PadOptions, what: string): T {
  const from = dimsOf(t);
  if (from.length !== dims.length || from.some((d, i) => d > (dims[i] as number))) {
    throw new TritonError('INFERENCE_FAILED', `${what}: cannot pad dims [${from.join(',')}] to [${dims.join(',')}]`);
  }
  return resize(t, dims, options.mode ?? 'constant', fillValue(t.data, options.value, what));
}

/** `t` with its non-batch dims cut to `dims` (the leading part of each axis): removes what `padRows` added. */
export function cropRows<T extends OutputValue>(t: T, dims: readonly number[]): T {
  return resize(t, dims, 'constant', undefined);
}

/**
 * A pad function for `@groupByValues`: pads every output of every group to the largest dims any group has,
 * with `value` (PyTriton's `ConstantPadder`). The padding is removed again per request when the batch is split.
 */
export function constantPadder(value: number | bigint | boolean | string = 0): PadFn {
  return (groups) => {
    const target = new Map<string, number[]>();
    for (const g of groups) {
      for (const [name, v] of Object.entries(g)) {
        const dims = dimsOf(v);
        const t = target.get(name);
        if (!t) target.set(name, [...dims]);
        else if (t.length !== dims.length) {
          throw new TritonError('INFERENCE_FAILED', `constantPadder: output "${name}" has rank ${t.length} in one group and ${dims.length} in another; padding cannot change the rank`);
        } else dims.forEach((d, i) => (t[i] = Math.max(t[i] as number, d)));
      }
    }
    return groups.map((g) => {
      const out: BatchOutputs = {};
      for (const [name, v] of Object.entries(g)) out[name] = padRows(v, target.get(name) as number[], { value }, `constantPadder: output "${name}"`);
      return out;
    });
  };
}

/** Copies `t` into the shape `[rows, ...dims]`, keeping the overlap; the rest is `fill` or the edge element. */
function resize<T extends OutputValue>(t: T, dims: readonly number[], mode: PadMode, fill: unknown): T {
  const from = dimsOf(t);
  if (sameDims(from, dims)) return t;
  const src = t.shape;
  const dst = [src[0] ?? 0, ...dims];
  const out = allocLike(t.data, elementCount(dst));
  if (!isTyped(out) || (fill !== 0 && fill !== 0n && fill !== undefined)) (out as unknown as { fill(v: unknown): void }).fill(fill);
  const srcStrides = strides(src);
  const dstStrides = strides(dst);
  const last = dst.length - 1;
  const data = t.data as unknown as Writable;
  const target = out as unknown as Writable;
  const copy = (axis: number, srcOffset: number, dstOffset: number): void => {
    const n = src[axis] as number;
    const m = dst[axis] as number;
    if (axis === last) {
      copyElements(out, dstOffset, t.data, srcOffset, srcOffset + Math.min(n, m));
      if (mode === 'edge' && n > 0) for (let i = n; i < m; i++) target[dstOffset + i] = data[srcOffset + n - 1];
      return;
    }
    for (let i = 0; i < m; i++) {
      const from = i < n ? i : mode === 'edge' && n > 0 ? n - 1 : -1;
      // In constant mode, rows past the source stay as filled.
      if (from >= 0) copy(axis + 1, srcOffset + from * (srcStrides[axis] as number), dstOffset + i * (dstStrides[axis] as number));
    }
  };
  if (elementCount(src) > 0) copy(0, 0, 0);
  return { ...t, shape: dst, data: out as Elements };
}

function strides(shape: readonly number[]): number[] {
  const out = new Array<number>(shape.length);
  let s = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    out[i] = s;
    s *= shape[i] as number;
  }
  return out;
}

/** The pad value converted to the element kind of `data`. */
function fillValue(data: Elements, value: PadOptions['value'], what: string): unknown {
  if (data instanceof BigInt64Array || data instanceof BigUint64Array) {
    if (value === undefined) return 0n;
    if (typeof value === 'bigint') return value;
    if (typeof value === 'boolean') return value ? 1n : 0n;
    if (typeof value === 'number' && Number.isInteger(value)) return BigInt(value);
  } else if (isTyped(data)) {
    if (value === undefined) return 0;
    if (typeof value === 'number') return value;
    if (typeof value === 'bigint') return Number(value);
    if (typeof value === 'boolean') return value ? 1 : 0;
  } else {
    const strings = (data as readonly unknown[]).some((e) => typeof e === 'string');
    if (value === undefined) return strings ? '' : new Uint8Array(0);
    if (typeof value === 'string') return strings ? value : Buffer.from(value, 'utf8');
  }
  throw new TritonError('INFERENCE_FAILED', `${what}: pad value ${typeof value === 'bigint' ? `${value}n` : JSON.stringify(value)} does not fit its elements`);
}
