/**
 * Moving tensors between threads with at most one copy of their bytes.
 *
 * Numeric data is sent as its typed array. When the arrays of a message cover their whole ArrayBuffer, the
 * buffer is transferred (no copy; it is detached on the sending side). When an array is a view into a larger
 * buffer (a request body, Node's Buffer pool), transferring would move or clone the whole buffer, so the view
 * is copied once into a private ArrayBuffer, which is transferred (the copies of one input across a batch
 * share one buffer). SharedArrayBuffers are shared as they are.
 * BYTES elements, usually views into a request body, are packed (the one copy) into one buffer that is
 * transferred, with their offsets, and unpacked on the other side as views into it.
 */
import { types } from 'node:util';
import type { DataType } from '../../tensor/dtype';

/** A numeric tensor or output value on the wire. */
export interface WireNumeric {
  readonly kind: 'numeric';
  readonly dtype?: DataType;
  readonly shape: readonly number[];
  readonly data: ArrayBufferView;
}

/** A BYTES tensor or output value on the wire: `count + 1` uint32 offsets, then the elements' bytes. */
export interface WireBytes {
  readonly kind: 'bytes';
  readonly dtype?: DataType;
  readonly shape: readonly number[];
  readonly count: number;
  readonly packed: ArrayBuffer;
}

/** Anything else a callable returned, sent by structured clone (validation on the main thread reports it). */
export interface WireOther {
  readonly kind: 'other';
  readonly value: unknown;
}

/** A tensor or output value on the wire. */
export type WireValue = WireNumeric | WireBytes | WireOther;

type TypedArray = ArrayBufferView & { readonly BYTES_PER_ELEMENT: number; readonly length: number };

/**
 * Builds the transfer list of one message; create one per message. Values are noted, then encoded, by group
 * (the input or output name): the private copies of one group are packed back to back, in order, into one
 * buffer, so a batch's copies of an input need one transfer and lie contiguous for a callable that
 * concatenates them.
 */
export class TensorMover {
  private readonly covered = new Map<ArrayBufferLike, number>();
  private readonly groups = new Map<string, ArrayBufferView[]>();
  private readonly copies = new Map<ArrayBufferView, ArrayBufferView>();
  private readonly moved = new Set<ArrayBuffer>();

  /** @param copyAll copy every array instead of transferring its buffer (the fallback for untransferable buffers). */
  constructor(private readonly copyAll = false) {}

  /** The buffers to pass as `transferList`. */
  get transferList(): ArrayBuffer[] {
    return [...this.moved];
  }

  /** First pass: records a value's numeric data and how much of its buffer it covers. */
  noteValue(value: unknown, group: string): void {
    const data = dataOf(value);
    if (!isTypedArray(data)) return;
    this.covered.set(data.buffer, (this.covered.get(data.buffer) ?? 0) + data.byteLength);
    const views = this.groups.get(group);
    if (views) views.push(data);
    else this.groups.set(group, [data]);
  }

  /** Second pass: encodes one tensor or output value noted in `group`. */
  encode(value: unknown, group: string): WireValue {
    const data = dataOf(value);
    const v = value as { dtype?: DataType; shape: readonly number[] };
    if (isTypedArray(data)) return { kind: 'numeric', dtype: v.dtype, shape: v.shape, data: this.move(data, group) };
    if (isBytesList(data)) {
      const packed = packBytes(data);
      this.moved.add(packed);
      return { kind: 'bytes', dtype: v.dtype, shape: v.shape, count: data.length, packed };
    }
    return { kind: 'other', value };
  }

  /** The array to send: itself (its buffer listed for transfer, or shared) or its private copy. */
  private move(view: TypedArray, group: string): ArrayBufferView {
    if (!this.needsCopy(view)) {
      // SharedArrayBuffer: both threads see the same memory.
      if (!types.isSharedArrayBuffer(view.buffer)) this.moved.add(view.buffer as ArrayBuffer);
      return view;
    }
    if (!this.copies.has(view)) this.copyGroup(group);
    return this.copies.get(view) as ArrayBufferView;
  }

  /** True unless the array's buffer is shared or is covered whole by the message's arrays (util.types works across realms, as under jest). */
  private needsCopy(view: ArrayBufferView): boolean {
    if (types.isSharedArrayBuffer(view.buffer)) return false;
    return this.copyAll || (this.covered.get(view.buffer) ?? 0) < view.buffer.byteLength;
  }

  /** Copies every array of the group that needs it into one new buffer, each aligned to its element size. */
  private copyGroup(group: string): void {
    const views = [...new Set(this.groups.get(group))].filter((v) => this.needsCopy(v) && !this.copies.has(v)) as TypedArray[];
    const offsets: number[] = [];
    let size = 0;
    for (const v of views) {
      const offset = Math.ceil(size / v.BYTES_PER_ELEMENT) * v.BYTES_PER_ELEMENT;
      offsets.push(offset);
      size = offset + v.byteLength;
    }
    const arena = new ArrayBuffer(size);
    views.forEach((v, i) => {
      const offset = offsets[i] as number;
      new Uint8Array(arena, offset, v.byteLength).set(new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
      // A Buffer arrives as a Uint8Array anyway; keep the other types.
      const Ctor = (Buffer.isBuffer(v) ? Uint8Array : v.constructor) as new (buffer: ArrayBuffer, byteOffset: number, length: number) => ArrayBufferView;
      this.copies.set(v, new Ctor(arena, offset, v.length));
    });
    this.moved.add(arena);
  }
}

/** Rebuilds a value sent with `TensorMover.encode`. */
export function decodeValue(wire: WireValue): unknown {
  switch (wire.kind) {
    case 'numeric':
      return withDtype(wire.dtype, { shape: wire.shape, data: inThisRealm(wire.data) });
    case 'bytes':
      return withDtype(wire.dtype, { shape: wire.shape, data: unpackBytes(wire.packed, wire.count) });
    default:
      return wire.value;
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

/**
 * Node deserialises messages in its main context; under a vm context (jest) typed arrays then fail
 * `instanceof Float32Array`, which output validation relies on. Re-view them with this context's
 * constructor: no copy, and a no-op outside such contexts.
 */
function inThisRealm(view: ArrayBufferView): ArrayBufferView {
  const Ctor = (globalThis as unknown as Record<string, unknown>)[view.constructor.name];
  if (typeof Ctor !== 'function' || view instanceof Ctor) return view;
  return new (Ctor as new (buffer: ArrayBufferLike, byteOffset: number, length: number) => ArrayBufferView)(view.buffer, view.byteOffset, (view as TypedArray).length);
}

function withDtype(dtype: DataType | undefined, value: { shape: readonly number[]; data: unknown }): unknown {
  return dtype === undefined ? value : { dtype, ...value };
}

function dataOf(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || !Array.isArray((value as { shape?: unknown }).shape)) return undefined;
  return (value as { data?: unknown }).data;
}

function isTypedArray(data: unknown): data is TypedArray {
  return ArrayBuffer.isView(data) && !(data instanceof DataView);
}

function isBytesList(data: unknown): data is (Uint8Array | string)[] {
  if (!Array.isArray(data)) return false;
  for (const e of data) if (typeof e !== 'string' && !(e instanceof Uint8Array)) return false;
  return true;
}
