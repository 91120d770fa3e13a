import { TritonError, type OutputValue, type Tensor } from '../lib';
import { elementCount } from '../lib/tensor';
import { NUMERIC_ARRAYS } from '../lib/tensor/dtype';

/**
 * Row operations on tensors and output values: dim 0 is the batch, a row is everything below it. They work on
 * the element container itself, so outputs given as `{ shape, data }` (without dtype, BYTES as strings) are
 * handled like tensors.
 */

/** An element container: a typed array, or an array for BYTES (Uint8Array elements, or strings in outputs). */
export type Elements = OutputValue['data'];

type TypedArray = Exclude<Elements, readonly unknown[]>;

/** Writable element access, for filling a container this module allocated. */
type Writable = { [index: number]: unknown; readonly length: number };

/** True for typed-array containers, false for BYTES arrays. */
export function isTyped(data: Elements): data is TypedArray {
  return ArrayBuffer.isView(data);
}

/** A new container of `n` elements of the same kind as `data` (zeros, or holes for arrays). */
export function allocLike(data: Elements, n: number): Elements {
  if (!isTyped(data)) return new Array<unknown>(n) as Elements;
  // A Buffer is a Uint8Array; allocate the plain typed array, not a Buffer.
  const Ctor = NUMERIC_ARRAYS.find((C) => data instanceof C) as unknown as new (n: number) => TypedArray;
  return new Ctor(n);
}

/** Copies `src[start, end)` into `dst` at `offset`. */
export function copyElements(dst: Elements, offset: number, src: Elements, start: number, end: number): void {
  if (isTyped(dst) && isTyped(src)) {
    (dst as unknown as { set(a: ArrayLike<unknown>, o: number): void }).set(
      (src as unknown as { subarray(a: number, b: number): ArrayLike<unknown> }).subarray(start, end),
      offset,
    );
    return;
  }
  const out = dst as unknown as Writable;
  for (let i = start; i < end; i++) out[offset + i - start] = (src as unknown as Writable)[i];
}

/** `data[start, end)`: a view for typed arrays, a shallow copy for arrays. */
export function subElements(data: Elements, start: number, end: number): Elements {
  return isTyped(data)
    ? ((data as unknown as { subarray(a: number, b: number): Elements }).subarray(start, end) as Elements)
    : ((data as readonly unknown[]).slice(start, end) as Elements);
}

/** Elements per row: the product of the non-batch dims. */
export function rowSize(t: OutputValue): number {
  return elementCount(t.shape.slice(1));
}

/** Rows [start, end) of `t`: a view for typed arrays. */
export function sliceRows<T extends OutputValue>(t: T, start: number, end: number): T {
  if (start === 0 && end === t.shape[0]) return t;
  const size = rowSize(t);
  return { ...t, shape: [end - start, ...t.shape.slice(1)], data: subElements(t.data, start * size, end * size) };
}

/** Rows `indices` of `t`, in that order: a view when they are one ascending run, a copy otherwise. */
export function gatherRows<T extends OutputValue>(t: T, indices: readonly number[]): T {
  const first = indices[0] ?? 0;
  if (indices.every((r, i) => r === first + i)) return sliceRows(t, first, first + indices.length);
  const size = rowSize(t);
  const out = allocLike(t.data, indices.length * size);
  indices.forEach((r, i) => copyElements(out, i * size, t.data, r * size, (r + 1) * size));
  return { ...t, shape: [indices.length, ...t.shape.slice(1)], data: out };
}

/** `t`, a value without batch dim, repeated `n` times along a new dim 0. */
export function tileRows(t: Tensor, n: number): Tensor {
  const size = t.data.length;
  const out = allocLike(t.data, n * size);
  for (let i = 0; i < n; i++) copyElements(out, i * size, t.data, 0, size);
  return { dtype: t.dtype, shape: [n, ...t.shape], data: out } as Tensor;
}

/**
 * Merges row groups into one value of `total` rows: group g's rows go to `pieces[g].rows`. Every piece must
 * have the same non-batch dims and container kind (checked by the caller, which knows what to tell the user).
 */
export function scatterRows(pieces: readonly { readonly rows: readonly number[]; readonly value: OutputValue }[], total: number): OutputValue {
  const first = (pieces[0] as { value: OutputValue }).value;
  const size = rowSize(first);
  const out = allocLike(first.data, total * size);
  for (const { rows, value } of pieces) {
    rows.forEach((r, i) => copyElements(out, r * size, value.data, i * size, (i + 1) * size));
  }
  return { ...first, shape: [total, ...first.shape.slice(1)], data: out } as OutputValue;
}

/** A string equal for two rows exactly when their dims and elements are equal (bytewise, like numpy's tobytes). */
export function rowKey(t: OutputValue, row: number): string {
  const size = rowSize(t);
  const dims = t.shape.slice(1).join(',');
  const part = subElements(t.data, row * size, (row + 1) * size);
  if (isTyped(part)) {
    return `${dims}|${Buffer.from(part.buffer, part.byteOffset, part.byteLength).toString('latin1')}`;
  }
  let key = `${dims}|`;
  for (const e of part as readonly (string | Uint8Array)[]) {
    const bytes = typeof e === 'string' ? Buffer.from(e, 'utf8') : Buffer.from(e.buffer, e.byteOffset, e.byteLength);
    key += `${bytes.byteLength}:${bytes.toString('latin1')}`;
  }
  return key;
}

/** A short readable form of a row for error messages: `[0.5]`, `["a","b"]`, first 8 elements. */
export function showRow(t: OutputValue, row: number): string {
  const size = rowSize(t);
  const part = subElements(t.data, row * size, Math.min((row + 1) * size, row * size + 8));
  const shown = Array.from(part as ArrayLike<unknown>, (e) =>
    e instanceof Uint8Array ? JSON.stringify(Buffer.from(e.buffer, e.byteOffset, e.byteLength).toString('utf8')) : typeof e === 'string' ? JSON.stringify(e) : String(e),
  );
  return `[${shown.join(',')}${size > 8 ? ',...' : ''}]`;
}

/** The non-batch dims of `t`. */
export function dimsOf(t: OutputValue): readonly number[] {
  return t.shape.slice(1);
}

/** True if two dim lists are equal. */
export function sameDims(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

/** Checks that `value` is an output with a batch dim of `rows` rows; `what` names it in the error. */
export function checkRows(value: OutputValue | undefined, rows: number, what: string): void {
  const got = value?.shape?.[0];
  if (got !== rows) throw new TritonError('INFERENCE_FAILED', `${what} has ${got ?? 'no'} rows but the batch has ${rows}`);
}
