/**
 * A batch's tensors between threads, one column per tensor name.
 *
 * A message carries, for each input (or output) name, every request's shape in one flat number list and
 * every request's data in one typed array, instead of an object per request and tensor: structured clone
 * then copies a handful of values per batch rather than several objects per request, which is most of the
 * cost of handing a small batch to a worker.
 *
 * Data moves with at most one copy:
 * - when the column's arrays lie back to back in one buffer they cover whole (what `@batch` and the ONNX
 *   runner return: views splitting one output), that buffer is transferred (detached on the sending side);
 * - when each array covers a buffer of its own, or lies in a buffer the sender says nobody else reads (a
 *   request body assembled by the HTTP transport), and the column holds 64 KiB or more, each buffer is
 *   transferred (a body with the rest of its bytes);
 * - otherwise (views into request bodies or Node's Buffer pool, or small arrays) the arrays are copied back
 *   to back into one new buffer, which is transferred;
 * - arrays over a SharedArrayBuffer are shared as they are.
 * BYTES elements are packed (one copy) into one buffer, unpacked on the other side as Buffer views into it.
 * Anything else (what a faulty callable may return) is sent by structured clone, for validation to report.
 */
import { types } from 'node:util';
import type { DataType } from '../../tensor/dtype';

/** Columns at least this large whose arrays own their buffers move those buffers instead of one copy. */
export const TRANSFER_THRESHOLD_BYTES = 64 * 1024;

/** How a column's data travels. */
export type ColumnData =
  /** Numeric: the present items' elements back to back (`lengths` elements each). */
  | { readonly kind: 'packed'; readonly array: ArrayBufferView; readonly lengths: readonly number[] }
  /** Numeric: one array per present item. */
  | { readonly kind: 'parts'; readonly arrays: readonly ArrayBufferView[] }
  /** BYTES: `count + 1` uint32 offsets then the bytes of every present item's elements (`lengths` each). */
  | { readonly kind: 'bytes'; readonly packed: ArrayBuffer; readonly count: number; readonly lengths: readonly number[] }
  /** Anything else: each item's value as it was (present items only). */
  | { readonly kind: 'other'; readonly values: readonly unknown[] };

/** One tensor name across the items (requests or responses) of a batch. */
export interface Column {
  readonly name: string;
  /** The dtype every present item carries (absent when they carry none). */
  readonly dtype?: DataType;
  /** Each present item's dtype, when they differ (a faulty callable's outputs, for validation to report). */
  readonly dtypes?: readonly (DataType | undefined)[];
  /** Per item: its rank, then its dims; -1 when the item lacks this name. */
  readonly shapes: readonly number[];
  readonly data: ColumnData;
}

type TypedArray = ArrayBufferView & { readonly BYTES_PER_ELEMENT: number; readonly length: number };
type TypedArrayCtor = new (buffer: ArrayBufferLike, byteOffset: number, length: number) => TypedArray;
interface TensorLike {
  readonly dtype?: DataType;
  readonly shape: readonly number[];
  readonly data: unknown;
}

/** Collects the buffers a message transfers; one per message. */
export class TransferList {
  private readonly buffers = new Set<ArrayBuffer>();

  add(buffer: ArrayBufferLike): void {
    if (!types.isSharedArrayBuffer(buffer)) this.buffers.add(buffer as ArrayBuffer);
  }

  get list(): ArrayBuffer[] {
    return [...this.buffers];
  }
}

/**
 * Encodes `items` (records of tensors by name) as columns, in the order names are first seen.
 * `copyAll` copies every array instead of moving buffers: the fallback when a buffer cannot be transferred.
 */
export function encodeColumns(
  items: readonly Readonly<Record<string, unknown>>[],
  transfers: TransferList,
  copyAll = false,
  movable?: ReadonlySet<ArrayBufferLike>,
): Column[] {
  const names: string[] = [];
  const seen = new Set<string>();
  for (const item of items) {
    for (const name in item) {
      if (!seen.has(name)) {
        seen.add(name);
        names.push(name);
      }
    }
  }
  return names.map((name) => encodeColumn(name, items, transfers, copyAll, movable));
}

function encodeColumn(
  name: string,
  items: readonly Readonly<Record<string, unknown>>[],
  transfers: TransferList,
  copyAll: boolean,
  movable: ReadonlySet<ArrayBufferLike> | undefined,
): Column {
  const shapes: number[] = [];
  /** Per item: -1 when absent, 0 when present (the shapes of an 'other' column). */
  const presence: number[] = [];
  const values: unknown[] = [];
  let dtype: DataType | undefined;
  let dtypesDiffer = false;
  let uniform = true;
  for (const item of items) {
    if (!(name in item)) {
      shapes.push(-1);
      presence.push(-1);
      continue;
    }
    const value = item[name];
    values.push(value);
    presence.push(0);
    if (!isTensorLike(value)) {
      uniform = false;
      shapes.push(0);
      continue;
    }
    if (values.length === 1) dtype = value.dtype;
    else if (value.dtype !== dtype) dtypesDiffer = true;
    shapes.push(value.shape.length, ...value.shape);
  }
  const tensors = values as TensorLike[];
  const typed = (data: ColumnData): Column => {
    if (dtypesDiffer) return { name, dtypes: tensors.map((t) => t.dtype), shapes, data };
    return dtype === undefined ? { name, shapes, data } : { name, dtype, shapes, data };
  };
  if (uniform && tensors.every((t) => isTypedArray(t.data))) {
    return typed(encodeNumeric(tensors.map((t) => t.data as TypedArray), transfers, copyAll, movable));
  }
  if (uniform && tensors.every((t) => isBytesList(t.data))) {
    const elements = tensors.flatMap((t) => t.data as (Uint8Array | string)[]);
    const packed = packBytes(elements);
    transfers.add(packed);
    return typed({ kind: 'bytes', packed, count: elements.length, lengths: tensors.map((t) => (t.data as unknown[]).length) });
  }
  return { name, shapes: presence, data: { kind: 'other', values } };
}

function encodeNumeric(arrays: TypedArray[], transfers: TransferList, copyAll: boolean, movable: ReadonlySet<ArrayBufferLike> | undefined): ColumnData {
  const mayMove = (a: TypedArray) => ownsBuffer(a) || movable?.has(a.buffer) === true;
  const first = arrays[0];
  if (!first) return { kind: 'packed', array: new Uint8Array(0), lengths: [] };
  const lengths = arrays.map((a) => a.length);
  const Ctor = ctorOf(first);
  const sameType = arrays.every((a) => ctorOf(a) === Ctor);
  if (!copyAll && sameType) {
    const run = wholeRun(arrays);
    if (run) {
      transfers.add(first.buffer);
      return { kind: 'packed', array: run, lengths };
    }
  }
  let bytes = 0;
  for (const a of arrays) bytes += a.byteLength;
  if (!sameType || arrays.some((a) => types.isSharedArrayBuffer(a.buffer)) || (!copyAll && bytes >= TRANSFER_THRESHOLD_BYTES && arrays.every(mayMove))) {
    return { kind: 'parts', arrays: arrays.map((a) => moveOrCopy(a, transfers, !copyAll && mayMove(a))) };
  }
  const arena = new ArrayBuffer(bytes);
  const target = new Uint8Array(arena);
  let offset = 0;
  for (const a of arrays) {
    target.set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), offset);
    offset += a.byteLength;
  }
  transfers.add(arena);
  return { kind: 'packed', array: new Ctor(arena, 0, bytes / first.BYTES_PER_ELEMENT), lengths };
}

/** The arrays as one array over their buffer, when they lie back to back in it and cover all of it. */
function wholeRun(arrays: TypedArray[]): TypedArray | undefined {
  const first = arrays[0] as TypedArray;
  const { buffer } = first;
  if (types.isSharedArrayBuffer(buffer) || first.byteOffset !== 0) return undefined;
  let end = 0;
  for (const a of arrays) {
    if (a.buffer !== buffer || a.byteOffset !== end) return undefined;
    end += a.byteLength;
  }
  if (end !== buffer.byteLength) return undefined;
  return arrays.length === 1 && !Buffer.isBuffer(first) ? first : new (ctorOf(first))(buffer, 0, end / first.BYTES_PER_ELEMENT);
}

function ownsBuffer(a: TypedArray): boolean {
  return a.byteOffset === 0 && a.byteLength === a.buffer.byteLength;
}

/** The array itself (its buffer transferred or shared), or a private copy of it. */
function moveOrCopy(a: TypedArray, transfers: TransferList, move: boolean): TypedArray {
  if (types.isSharedArrayBuffer(a.buffer)) return a;
  if (move) {
    transfers.add(a.buffer);
    return a;
  }
  const copy = new (ctorOf(a))(new ArrayBuffer(a.byteLength), 0, a.length);
  new Uint8Array(copy.buffer).set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
  transfers.add(copy.buffer);
  return copy;
}

/** Rebuilds the items' values of `columns`: one record per item, with the names that item had. */
export function decodeColumns(columns: readonly Column[], count: number): Record<string, unknown>[] {
  const items: Record<string, unknown>[] = new Array(count);
  for (let i = 0; i < count; i++) items[i] = {};
  for (const column of columns) decodeColumn(column, items);
  return items;
}

function decodeColumn(column: Column, items: Record<string, unknown>[]): void {
  const { name, shapes, data } = column;
  let pos = 0;
  let present = 0;
  let elementOffset = 0;
  let bytes: Buffer[] | undefined;
  const Ctor = data.kind === 'packed' ? localCtor(data.array) : undefined;
  for (const item of items) {
    const rank = shapes[pos++] as number;
    if (rank === -1) continue;
    const index = present++;
    if (data.kind === 'other') {
      item[name] = data.values[index];
      continue;
    }
    const shape = shapes.slice(pos, pos + rank);
    pos += rank;
    let value: unknown;
    if (data.kind === 'packed') {
      const length = data.lengths[index] as number;
      const { array } = data;
      value = new (Ctor as TypedArrayCtor)(array.buffer, array.byteOffset + elementOffset * (array as TypedArray).BYTES_PER_ELEMENT, length);
      elementOffset += length;
    } else if (data.kind === 'parts') {
      value = inThisRealm(data.arrays[index] as ArrayBufferView);
    } else {
      bytes ??= unpackBytes(data.packed, data.count);
      const length = data.lengths[index] as number;
      value = bytes.slice(elementOffset, elementOffset + length);
      elementOffset += length;
    }
    const dtype = column.dtypes ? column.dtypes[index] : column.dtype;
    item[name] = dtype === undefined ? { shape, data: value } : { dtype, shape, data: value };
  }
}

/** Packs BYTES elements (byte arrays, or strings encoded as UTF-8) into one new buffer: offsets, then bytes. */
export function packBytes(elements: readonly (Uint8Array | string)[]): ArrayBuffer {
  const n = elements.length;
  const head = 4 * (n + 1);
  let total = 0;
  for (const e of elements) total += typeof e === 'string' ? Buffer.byteLength(e, 'utf8') : e.byteLength;
  const packed = new ArrayBuffer(head + total);
  const offsets = new Uint32Array(packed, 0, n + 1);
  const bytes = Buffer.from(packed, head, total);
  let pos = 0;
  for (let i = 0; i < n; i++) {
    const e = elements[i] as Uint8Array | string;
    offsets[i] = pos;
    if (typeof e === 'string') pos += bytes.write(e, pos, 'utf8');
    else {
      bytes.set(e, pos);
      pos += e.byteLength;
    }
  }
  offsets[n] = pos;
  return packed;
}

/** Unpacks `packBytes`' buffer into `count` elements, each a Buffer view into it (no copy). */
export function unpackBytes(packed: ArrayBuffer, count: number): Buffer[] {
  const offsets = new Uint32Array(packed, 0, count + 1);
  const base = 4 * (count + 1);
  const out: Buffer[] = new Array(count);
  for (let i = 0; i < count; i++) {
    const start = offsets[i] as number;
    out[i] = Buffer.from(packed, base + start, (offsets[i + 1] as number) - start);
  }
  return out;
}

/** A Buffer travels as a Uint8Array anyway; other arrays keep their type. */
function ctorOf(a: TypedArray): TypedArrayCtor {
  return (Buffer.isBuffer(a) ? Uint8Array : a.constructor) as TypedArrayCtor;
}

/**
 * Node deserialises messages in its main context; under a vm context (jest) typed arrays then fail
 * `instanceof Float32Array`, which output validation relies on. Views are made with this context's
 * constructor: no copy, and the same constructor outside such contexts.
 */
function localCtor(view: ArrayBufferView): TypedArrayCtor {
  const Ctor = (globalThis as unknown as Record<string, unknown>)[view.constructor.name];
  return (typeof Ctor === 'function' ? Ctor : view.constructor) as TypedArrayCtor;
}

function inThisRealm(view: ArrayBufferView): ArrayBufferView {
  const Ctor = localCtor(view);
  return view instanceof Ctor ? view : new Ctor(view.buffer, view.byteOffset, (view as TypedArray).length);
}

function isTensorLike(value: unknown): value is TensorLike {
  if (typeof value !== 'object' || value === null) return false;
  const { shape } = value as { shape?: unknown };
  if (!Array.isArray(shape)) return false;
  for (const d of shape) if (typeof d !== 'number') return false;
  return true;
}

function isTypedArray(data: unknown): data is TypedArray {
  return ArrayBuffer.isView(data) && !(data instanceof DataView);
}

function isBytesList(data: unknown): data is (Uint8Array | string)[] {
  if (!Array.isArray(data)) return false;
  for (const e of data) if (typeof e !== 'string' && !(e instanceof Uint8Array)) return false;
  return true;
}
