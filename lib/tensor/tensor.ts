import { TritonError, invalidArgument } from '../base/errors';
import { batchMemory } from './buffer-pool';
import { DTYPES, type DataType, type TensorData } from './dtype';

/** A tensor: datatype, shape (row-major) and elements. */
export interface Tensor<D extends DataType = DataType> {
  readonly dtype: D;
  readonly shape: readonly number[];
  readonly data: TensorData<D>;
}

/** Number of elements a shape holds. */
export function elementCount(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/** Number of elements in a tensor's data. */
export function dataLength(data: TensorData): number {
  return data.length;
}

/**
 * Builds a tensor, checking that `data` is the container the datatype needs and that it holds as many
 * elements as `shape` says. Strings are accepted for BYTES and encoded as UTF-8.
 */
export function tensor<D extends DataType>(
  dtype: D,
  shape: readonly number[],
  data: TensorData<D> | (D extends 'BYTES' ? readonly (string | Uint8Array)[] : never),
): Tensor<D> {
  const values = dtype === 'BYTES' ? (toBytesElements(data as readonly (string | Uint8Array)[]) as TensorData<D>) : (data as TensorData<D>);
  const problem = checkData(dtype, values);
  if (problem) throw invalidArgument(problem);
  if (elementCount(shape) !== values.length) {
    throw invalidArgument(
      `tensor of shape [${shape.join(',')}] needs ${elementCount(shape)} elements, got ${values.length}`,
    );
  }
  return { dtype, shape: [...shape], data: values };
}

function toBytesElements(items: readonly (string | Uint8Array)[]): Uint8Array[] {
  return items.map((v) => (typeof v === 'string' ? Buffer.from(v, 'utf8') : v));
}

/** Returns why `data` is not a valid container for `dtype`, or undefined if it is. */
export function checkData(dtype: DataType, data: unknown): string | undefined {
  const row = DTYPES[dtype];
  if (row.array === null) {
    if (Array.isArray(data) && data.every((e) => e instanceof Uint8Array)) return undefined;
    return `datatype ${dtype} expects an array of Uint8Array`;
  }
  if (data instanceof row.array) return undefined;
  const got = data === null || data === undefined ? String(data) : (data as object).constructor?.name ?? typeof data;
  return `datatype ${dtype} expects ${row.array.name}, got ${got}`;
}

/** Total bytes of a tensor in the binary wire encoding. */
export function wireByteLength(t: Tensor): number {
  if (t.dtype === 'BYTES') {
    let n = 0;
    for (const e of t.data as Uint8Array[]) n += 4 + e.byteLength;
    return n;
  }
  return (t.data as ArrayBufferView).byteLength;
}

/**
 * Concatenates tensors along dim 0 into one. All parts must share dtype and non-batch dims; this is the
 * one copy the batching path makes. A single part is returned as it is.
 *
 * `requests`, the server requests the parts come from: a large batch is then copied into memory from the
 * server's request buffer pool, held until every one of their responses is written (see
 * `requestBufferPoolByteSize`), rather than into a new buffer for the garbage collector.
 */
export function concatBatch<D extends DataType>(parts: readonly Tensor<D>[], requests?: readonly object[]): Tensor<D> {
  const first = parts[0];
  if (!first) throw new TritonError('INTERNAL', 'concatBatch needs at least one tensor');
  if (parts.length === 1) return first;
  let rows = 0;
  for (const p of parts) rows += p.shape[0] ?? 1;
  const shape = [rows, ...first.shape.slice(1)];
  if (first.dtype === 'BYTES') {
    const out: Uint8Array[] = [];
    for (const p of parts) for (const e of p.data as Uint8Array[]) out.push(e);
    return { dtype: first.dtype, shape, data: out as TensorData<D> };
  }
  const adjacent = contiguousView(parts);
  if (adjacent) return { dtype: first.dtype, shape, data: adjacent as TensorData<D> };
  const row = DTYPES[first.dtype];
  const Ctor = row.array as unknown as new (...args: [number] | [ArrayBuffer, number, number]) => { set(a: ArrayLike<unknown>, o: number): void };
  let total = 0;
  for (const p of parts) total += p.data.length;
  const memory = requests && batchMemory(requests, total * row.size);
  const out = memory ? new Ctor(memory, 0, total) : new Ctor(total);
  let offset = 0;
  for (const p of parts) {
    out.set(p.data as unknown as ArrayLike<unknown>, offset);
    offset += p.data.length;
  }
  return { dtype: first.dtype, shape, data: out as unknown as TensorData<D> };
}

/**
 * When the parts already lie back to back in one buffer (as a batch arriving in a worker does), the
 * concatenation is a view over them: no copy.
 */
function contiguousView(parts: readonly Tensor[]): ArrayBufferView | undefined {
  const first = parts[0]?.data as ArrayBufferView & { length: number; BYTES_PER_ELEMENT: number };
  let end = first.byteOffset + first.byteLength;
  let length = first.length;
  for (let i = 1; i < parts.length; i++) {
    const d = (parts[i] as Tensor).data as ArrayBufferView & { length: number };
    if (d.buffer !== first.buffer || d.byteOffset !== end) return undefined;
    end += d.byteLength;
    length += d.length;
  }
  const Ctor = first.constructor as new (buffer: ArrayBufferLike, byteOffset: number, length: number) => ArrayBufferView;
  return new Ctor(first.buffer, first.byteOffset, length);
}

interface NumericView {
  subarray(begin: number, end: number): unknown;
}

/** A view of rows [start, end) of a tensor along dim 0; no copy. */
export function sliceBatch<D extends DataType>(t: Tensor<D>, start: number, end: number): Tensor<D> {
  const rows = t.shape[0] ?? 0;
  if (start === 0 && end === rows) return t;
  const perRow = rows === 0 ? 0 : t.data.length / rows;
  const data =
    t.dtype === 'BYTES'
      ? (t.data as Uint8Array[]).slice(start * perRow, end * perRow)
      : (t.data as NumericView).subarray(start * perRow, end * perRow);
  return { dtype: t.dtype, shape: [end - start, ...t.shape.slice(1)], data: data as TensorData<D> };
}
