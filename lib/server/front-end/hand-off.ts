import { Staging, type HandOff } from './messages';

/**
 * The hand-off between a front-end thread and the core thread, one direction of it: what one turn of the sender's
 * event loop produced (requests one way, responses the other) is written as binary records into a ring of shared
 * memory, and the message that tells the receiver is the ring's new end, a number. A structured clone of objects
 * and a transfer of buffers cost the sender and the receiver several microseconds per request; a record costs a
 * copy of its bytes. What a record cannot carry (a large tensor, a BigInt, binary metadata) crosses as before, as
 * a structured clone beside the number, its place in the order kept by a record that points to it; a turn that
 * does not fit the ring moves its records in a buffer of their own.
 */

/** A record's first byte: the item itself, or a pointer to the next structured-clone item of the message. */
const ITEM = 1;
const EXTRA = 2;

/** The size a writer's buffer starts at, and goes back to after a turn that needed more. */
const SCRATCH_BYTES = 16 * 1024;

/** A ring's default size: a power of two. Turns larger than a quarter of it move their records in a buffer. */
const RING_BYTES = 1 << 20;

/** The shared memory of one ring: its bytes, and the receiver's read position (the sender owns the write position). */
export interface RingMemory {
  readonly data: SharedArrayBuffer;
  readonly control: SharedArrayBuffer;
}

export function ringMemory(bytes = RING_BYTES): RingMemory {
  if (!(bytes >= 64 && (bytes & (bytes - 1)) === 0)) throw new RangeError(`a ring's size is a power of two ≥ 64, not ${bytes}`);
  return { data: new SharedArrayBuffer(bytes), control: new SharedArrayBuffer(4) };
}

/**
 * Binary records in a growable buffer of the sender's own: little-endian numbers, strings as their UTF-8 length
 * and bytes, tensor bytes 8-byte aligned (from the start of the turn, which the ring and the receiver keep).
 */
export class RecordWriter {
  bytes = Buffer.allocUnsafeSlow(SCRATCH_BYTES);
  private view = new DataView(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);
  at = 0;
  /** The names sent so far, by their number: the receiver numbers them in the same order. */
  private readonly names = new Map<string, number>();
  private readonly order: string[] = [];

  /** Gives back the memory a burst grew the buffer to (call between turns). */
  shrink(): void {
    if (this.at > 0 || this.bytes.length <= SCRATCH_BYTES) return;
    this.bytes = Buffer.allocUnsafeSlow(SCRATCH_BYTES);
    this.view = new DataView(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);
  }

  private room(n: number): void {
    if (this.at + n <= this.bytes.length) return;
    const grown = Buffer.allocUnsafeSlow(Math.max(this.bytes.length * 2, this.at + n));
    this.bytes.copy(grown, 0, 0, this.at);
    this.bytes = grown;
    this.view = new DataView(grown.buffer, grown.byteOffset, grown.byteLength);
  }

  u8(v: number): void {
    this.room(1);
    this.bytes[this.at++] = v;
  }

  u32(v: number): void {
    this.room(4);
    this.view.setUint32(this.at, v, true);
    this.at += 4;
  }

  f64(v: number): void {
    this.room(8);
    this.view.setFloat64(this.at, v, true);
    this.at += 8;
  }

  /**
   * A string that recurs (a model's name, its version, a tensor's name): written out the first time, with the
   * number both sides then know it by; after that, the number alone.
   */
  name(s: string | undefined): void {
    if (s === undefined) return this.u32(NONE);
    const known = this.names.get(s);
    if (known !== undefined) return this.u32(NAMED | known);
    if (this.order.length >= MAX_NAMES || s.length > MAX_NAME_LENGTH) return this.str(s);
    this.names.set(s, this.order.length);
    this.order.push(s);
    this.str(s, DEFINES);
  }

  /** How many names are known: `forget(count)` takes back those a rewound record defined. */
  get named(): number {
    return this.order.length;
  }

  forget(count: number): void {
    while (this.order.length > count) this.names.delete(this.order.pop() as string);
  }

  /** A string, or undefined. ASCII is copied here; anything else by Buffer's UTF-8 encoder. */
  str(s: string | undefined, flags = 0): void {
    if (s === undefined) return this.u32(NONE);
    const n = s.length;
    this.room(4 + n * 3);
    const start = this.at + 4;
    let i = 0;
    for (; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) break;
      this.bytes[start + i] = c;
    }
    const length = i === n ? n : this.bytes.write(s, start, 'utf8');
    this.view.setUint32(this.at, length | flags, true);
    this.at = start + length;
  }

  /** The bytes of `view`, 8-byte aligned (a typed array's elements are read back as a view in place). */
  data(view: ArrayBufferView): void {
    this.align();
    this.raw(view);
  }

  /** The bytes of `view`, where the record is. */
  raw(view: ArrayBufferView): void {
    const n = view.byteLength;
    this.room(n);
    this.bytes.set(new Uint8Array(view.buffer, view.byteOffset, n), this.at);
    this.at += n;
  }

  align(): void {
    const to = (this.at + 7) & ~7;
    this.room(to - this.at);
    this.bytes.fill(0, this.at, to);
    this.at = to;
  }
}

/**
 * A string's header: its UTF-8 length, NONE for undefined, or flagged: NAMED (the number of a name sent before)
 * or DEFINES (a string that is that name's first appearance).
 */
const NONE = 0xffffffff;
const NAMED = 0x80000000;
const DEFINES = 0x40000000;
const LENGTH = 0x3fffffff;
/** The names a writer numbers, and the longest; other strings are written out each time. */
const MAX_NAMES = 4096;
const MAX_NAME_LENGTH = 256;

/** Reads the records of one turn, from a buffer of the receiver's own: tensors are views on it, not copies. */
export class RecordReader {
  at = 0;
  private readonly view: DataView;
  private text: Buffer | undefined;

  /** `names`: the strings the writer numbered, in order; the reader adds those this turn defines. */
  constructor(
    readonly buffer: ArrayBuffer,
    private readonly names: string[] = [],
  ) {
    this.view = new DataView(buffer);
  }

  get end(): number {
    return this.buffer.byteLength;
  }

  u8(): number {
    return this.view.getUint8(this.at++);
  }

  u32(): number {
    const v = this.view.getUint32(this.at, true);
    this.at += 4;
    return v;
  }

  f64(): number {
    const v = this.view.getFloat64(this.at, true);
    this.at += 8;
    return v;
  }

  /** A string written by `str` or `name`. */
  str(): string | undefined {
    const header = this.u32();
    if (header === NONE) return undefined;
    if (header & NAMED) return this.names[header & LENGTH];
    const n = header & LENGTH;
    let s = '';
    if (n > 0) {
      this.text ??= Buffer.from(this.buffer);
      s = this.text.toString('utf8', this.at, this.at + n);
      this.at += n;
    }
    if (header & DEFINES) this.names.push(s);
    return s;
  }

  /** The next `bytes` bytes, 8-byte aligned, as a view of `Ctor`'s type on this turn's buffer. */
  data<V>(Ctor: new (buffer: ArrayBuffer, offset: number, length: number) => V, elementSize: number, bytes: number): V {
    this.align();
    const v = new Ctor(this.buffer, this.at, bytes / elementSize);
    this.at += bytes;
    return v;
  }

  /** The next `n` bytes, where they are, as a Uint8Array on this turn's buffer. */
  bytes(n: number): Uint8Array {
    const v = new Uint8Array(this.buffer, this.at, n);
    this.at += n;
    return v;
  }

  align(): void {
    this.at = (this.at + 7) & ~7;
  }
}

/** Writes a record of `item`, or returns false (the writer is then rewound) when a record cannot carry it. */
export type Encode<T> = (w: RecordWriter, item: T) => boolean;
/** The item a record carries. */
export type Decode<T> = (r: RecordReader) => T;

/** The sending half: records and structured-clone items gathered over a turn, then posted as one `HandOff`. */
export class Outbox<T, P> {
  private readonly writer = new RecordWriter();
  private extras: P[] = [];
  private readonly staging = new Staging();
  private readonly ring: Uint8Array;
  private readonly read: Int32Array;
  private head = 0;

  constructor(
    memory: RingMemory,
    private readonly encode: Encode<T>,
    /** The item as a structured clone, its bytes staged to move (or copied) with the message. */
    private readonly pack: (item: T, staging: Staging) => P,
  ) {
    this.ring = new Uint8Array(memory.data);
    this.read = new Int32Array(memory.control);
  }

  /** Adds `item` now: its bytes are copied (or moved) here, so the buffers it points to may change after. */
  add(item: T): void {
    const w = this.writer;
    const mark = w.at;
    const named = w.named;
    w.u8(ITEM);
    let encoded = false;
    try {
      encoded = this.encode(w, item);
    } catch {
      // Something no record was made for (a cycle among a request's fields): the clone may carry it.
    }
    if (!encoded) {
      w.at = mark;
      w.forget(named);
      const packed = this.pack(item, this.staging);
      w.u8(EXTRA);
      this.extras.push(packed);
    }
    w.align();
  }

  /** The message for what was added since the last one, and the buffers it transfers; undefined when nothing was. */
  take(): { message: HandOff<P>; transfer: ArrayBuffer[] } | undefined {
    const n = this.writer.at;
    if (n === 0) return undefined;
    this.writer.at = 0;
    const extras = this.extras.length > 0 ? this.extras : undefined;
    if (extras) this.extras = [];
    const transfer = this.staging.take();
    if (this.put(n)) return { message: extras ? { end: this.head, extras } : this.head, transfer };
    const bytes = new ArrayBuffer(n);
    new Uint8Array(bytes).set(this.writer.bytes.subarray(0, n));
    transfer.push(bytes);
    this.writer.shrink();
    return { message: { bytes, extras }, transfer };
  }

  /** Copies the turn's records into the ring if they fit in a quarter of it and it has room. */
  private put(n: number): boolean {
    const size = this.ring.length;
    const used = (this.head - Atomics.load(this.read, 0)) >>> 0;
    if (n > size / 4 || used + n > size) return false;
    const at = this.head & (size - 1);
    const first = Math.min(n, size - at);
    this.ring.set(this.writer.bytes.subarray(0, first), at);
    if (first < n) this.ring.set(this.writer.bytes.subarray(first, n), 0);
    this.head = (this.head + n) >>> 0;
    return true;
  }
}

/** The receiving half: each message's items, in the order they were added. */
export class Inbox<T, P> {
  private readonly ring: Uint8Array;
  private readonly read: Int32Array;
  private tail = 0;
  /** The names the sender numbered (`RecordWriter.name`). */
  private readonly names: string[] = [];

  constructor(
    memory: RingMemory,
    private readonly decode: Decode<T>,
    private readonly unpack: (packed: P) => T,
  ) {
    this.ring = new Uint8Array(memory.data);
    this.read = new Int32Array(memory.control);
  }

  /** Calls `each` with every item of `message`, in order. */
  open(message: HandOff<P>, each: (item: T) => void): void {
    const end = typeof message === 'number' ? message : message.end;
    const extras = typeof message === 'number' ? undefined : message.extras;
    const buffer = end !== undefined ? this.take(end) : (message as { bytes: ArrayBuffer }).bytes;
    const r = new RecordReader(buffer, this.names);
    let k = 0;
    while (r.at < r.end) {
      const tag = r.u8();
      if (tag === ITEM) each(this.decode(r));
      else if (tag === EXTRA && extras !== undefined && k < extras.length) each(this.unpack(extras[k++] as P));
      else throw new Error(`hand-off: record ${tag} at ${r.at - 1} of ${r.end}`);
      r.align();
    }
  }

  /** The ring's bytes up to `end`, copied into a buffer of this thread's own; the ring's room is then free again. */
  private take(end: number): ArrayBuffer {
    const size = this.ring.length;
    const n = (end - this.tail) >>> 0;
    const out = new ArrayBuffer(n);
    const bytes = new Uint8Array(out);
    const at = this.tail & (size - 1);
    const first = Math.min(n, size - at);
    bytes.set(this.ring.subarray(at, at + first));
    if (first < n) bytes.set(this.ring.subarray(0, n - first), first);
    this.tail = end >>> 0;
    Atomics.store(this.read, 0, this.tail | 0);
    return out;
  }
}
