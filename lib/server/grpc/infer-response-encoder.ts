import type { InferOutputTensorMessage, InferParameterMap, InferParameterMessage, Int64, ModelInferResponseMessage, ModelStreamInferResponseMessage } from '../../protocol/messages';

/**
 * Direct protobuf encoders for `inference.ModelInferResponse` and `ModelStreamInferResponse`, the hot
 * path's outbound messages: one pass computes the size, a second writes into one buffer, copying each
 * `raw_output_contents` entry once. Fields at their proto3 default are left out, except raw output
 * entries, which are always written so that they stay index-aligned with `outputs`. `contents` is never
 * written (Triton never sends it).
 */
export function encodeModelInferResponse(msg: ModelInferResponseMessage): Buffer {
  const w = new Writer(responseSize(msg));
  writeResponse(w, msg);
  return w.finish();
}

/** Raw outputs at least this large are written where they lie rather than copied into the message. */
const WRITTEN_IN_PLACE_BYTES = 64 * 1024;

/**
 * Encodes a ModelInferResponse as a gRPC length-prefixed message (the 5-byte frame header first), in pieces
 * to write one after another: large `raw_output_contents` entries are pieces of their own, the tensors' bytes
 * as they are, so a 4 MB output is sent without being copied; everything else shares one buffer.
 */
export function encodeFramedModelInferResponse(msg: ModelInferResponseMessage): { pieces: Uint8Array[]; messageLength: number } {
  const messageLength = responseSize(msg);
  let inPlace = 0;
  for (const raw of msg.raw_output_contents) if (raw.byteLength >= WRITTEN_IN_PLACE_BYTES) inPlace += raw.byteLength;
  const w = new Writer(5 + messageLength - inPlace);
  w.frameHeader(messageLength);
  const pieces: Uint8Array[] = [];
  let from = 0;
  writeResponse(w, msg, (raw) => {
    if (raw.byteLength < WRITTEN_IN_PLACE_BYTES) return false;
    pieces.push(w.slice(from), raw);
    from = w.position;
    return true;
  });
  pieces.push(w.slice(from));
  w.finish();
  return { pieces, messageLength };
}

/** Encodes a stream response: `error_message`, and the embedded response when there is one. */
export function encodeModelStreamInferResponse(msg: ModelStreamInferResponseMessage): Buffer {
  const inner = msg.infer_response ? responseSize(msg.infer_response) : -1;
  const w = new Writer(stringField(msg.error_message) + (inner >= 0 ? 1 + varintSize(inner) + inner : 0));
  w.string(1, msg.error_message);
  if (msg.infer_response) {
    w.tag(2, 2);
    w.varint(inner);
    writeResponse(w, msg.infer_response);
  }
  return w.finish();
}

function responseSize(m: ModelInferResponseMessage): number {
  let n = nameField(m.model_name) + nameField(m.model_version) + stringField(m.id) + mapSize(m.parameters);
  for (const o of m.outputs) n += embedded(outputSize(o));
  for (const raw of m.raw_output_contents) n += 1 + varintSize(raw.byteLength) + raw.byteLength;
  return n;
}

/** Writes `m`; `elsewhere` may take a raw output entry to send apart, after its tag and length (true when it does). */
function writeResponse(w: Writer, m: ModelInferResponseMessage, elsewhere?: (raw: Uint8Array) => boolean): void {
  w.name(1, m.model_name);
  w.name(2, m.model_version);
  w.string(3, m.id);
  w.map(4, m.parameters);
  for (const o of m.outputs) {
    w.tag(5, 2);
    w.varint(outputSize(o));
    w.name(1, o.name);
    w.name(2, o.datatype);
    if (o.shape.length > 0) {
      w.tag(3, 2);
      w.varint(shapeSize(o.shape));
      for (const d of o.shape) w.int64(d);
    }
    w.map(4, o.parameters);
  }
  for (const raw of m.raw_output_contents) {
    w.tag(6, 2);
    w.varint(raw.byteLength);
    if (!elsewhere?.(raw)) w.raw(raw);
  }
}

function outputSize(o: InferOutputTensorMessage): number {
  const shape = o.shape.length > 0 ? embedded(shapeSize(o.shape)) : 0;
  return nameField(o.name) + nameField(o.datatype) + shape + mapSize(o.parameters);
}

function shapeSize(shape: readonly Int64[]): number {
  let n = 0;
  for (const d of shape) n += int64Size(d);
  return n;
}

function mapSize(map: InferParameterMap | undefined): number {
  if (!map) return 0;
  let n = 0;
  for (const key of Object.keys(map)) n += embedded(entrySize(key, map[key] as InferParameterMessage));
  return n;
}

function entrySize(key: string, p: InferParameterMessage): number {
  return nameField(key) + embedded(parameterSize(p));
}

/** The field of an InferParameter that is set: `parameter_choice` when given, else the first present. */
function choice(p: InferParameterMessage): keyof InferParameterMessage | undefined {
  if (p.parameter_choice) return p.parameter_choice as keyof InferParameterMessage;
  if (p.bool_param !== undefined) return 'bool_param';
  if (p.int64_param !== undefined) return 'int64_param';
  if (p.string_param !== undefined) return 'string_param';
  if (p.double_param !== undefined) return 'double_param';
  if (p.uint64_param !== undefined) return 'uint64_param';
  return undefined;
}

function parameterSize(p: InferParameterMessage): number {
  switch (choice(p)) {
    case 'bool_param':
      return 2;
    case 'int64_param':
      return 1 + int64Size(p.int64_param as Int64);
    case 'string_param':
      return 1 + lengthDelimited(Buffer.byteLength(p.string_param as string));
    case 'double_param':
      return 9;
    case 'uint64_param':
      return 1 + int64Size(p.uint64_param as Int64);
    default:
      return 0;
  }
}

/** Size of a tag (fields 1-15) plus a length-prefixed body. */
function embedded(size: number): number {
  return 1 + varintSize(size) + size;
}

function lengthDelimited(size: number): number {
  return varintSize(size) + size;
}

/** A string field, left out when empty. */
function stringField(s: string): number {
  return s === '' ? 0 : 1 + lengthDelimited(Buffer.byteLength(s));
}

/**
 * UTF-8 bytes of the names every response repeats (model, version, output names, datatypes, parameter
 * keys), encoded once. Bounded: a server with more distinct names than this just re-encodes.
 */
const NAMES = new Map<string, Buffer>();
const MAX_NAMES = 4096;

function utf8Name(s: string): Buffer {
  let b = NAMES.get(s);
  if (b === undefined) {
    if (NAMES.size >= MAX_NAMES) NAMES.clear();
    b = Buffer.from(s, 'utf8');
    NAMES.set(s, b);
  }
  return b;
}

/** A string field of a repeated name, left out when empty. */
function nameField(s: string): number {
  return s === '' ? 0 : 1 + lengthDelimited(utf8Name(s).length);
}

function varintSize(n: number): number {
  if (n < 0x80) return 1;
  if (n < 0x4000) return 2;
  if (n < 0x200000) return 3;
  if (n < 0x10000000) return 4;
  let size = 5;
  for (let v = Math.floor(n / 2 ** 35); v > 0; v = Math.floor(v / 128)) size++;
  return size;
}

function int64Size(v: Int64): number {
  const n = typeof v === 'number' ? v : Number(v);
  if (Number.isSafeInteger(n) && n >= 0) return varintSize(n);
  return bigVarintBytes(BigInt(v)).length;
}

/** A 64-bit integer (two's complement when negative) as varint bytes. */
function bigVarintBytes(v: bigint): number[] {
  let u = BigInt.asUintN(64, v);
  const out: number[] = [];
  while (u >= 0x80n) {
    out.push(Number(u & 0x7fn) | 0x80);
    u >>= 7n;
  }
  out.push(Number(u));
  return out;
}

class Writer {
  private readonly buf: Buffer;
  private pos = 0;

  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(size);
  }

  get position(): number {
    return this.pos;
  }

  /** The bytes written from `from` on, as a view (valid while this writer's buffer is). */
  slice(from: number): Buffer {
    return this.buf.subarray(from, this.pos);
  }

  /** gRPC's message prefix: not compressed, then the length, big-endian. */
  frameHeader(length: number): void {
    this.buf[this.pos++] = 0;
    this.buf.writeUInt32BE(length, this.pos);
    this.pos += 4;
  }

  finish(): Buffer {
    if (this.pos !== this.buf.length) throw new Error(`protobuf encoder wrote ${this.pos} bytes, sized ${this.buf.length}`);
    return this.buf;
  }

  tag(field: number, wireType: number): void {
    this.buf[this.pos++] = (field << 3) | wireType;
  }

  varint(n: number): void {
    const buf = this.buf;
    while (n >= 0x80) {
      buf[this.pos++] = (n % 128) | 0x80;
      n = Math.floor(n / 128);
    }
    buf[this.pos++] = n;
  }

  int64(v: Int64): void {
    const n = typeof v === 'number' ? v : Number(v);
    if (Number.isSafeInteger(n) && n >= 0) {
      this.varint(n);
      return;
    }
    for (const b of bigVarintBytes(BigInt(v))) this.buf[this.pos++] = b;
  }

  /** A string field; nothing when empty. */
  string(field: number, s: string): void {
    if (s === '') return;
    this.tag(field, 2);
    const len = Buffer.byteLength(s);
    this.varint(len);
    this.buf.write(s, this.pos, 'utf8');
    this.pos += len;
  }

  /** A string field of a repeated name (see `utf8Name`); nothing when empty. */
  name(field: number, s: string): void {
    if (s === '') return;
    const b = utf8Name(s);
    this.tag(field, 2);
    this.varint(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }

  raw(bytes: Uint8Array): void {
    this.buf.set(bytes, this.pos);
    this.pos += bytes.byteLength;
  }

  map(field: number, map: InferParameterMap | undefined): void {
    if (!map) return;
    for (const key of Object.keys(map)) {
      const p = map[key] as InferParameterMessage;
      this.tag(field, 2);
      this.varint(entrySize(key, p));
      this.name(1, key);
      this.tag(2, 2);
      this.varint(parameterSize(p));
      this.parameter(p);
    }
  }

  private parameter(p: InferParameterMessage): void {
    switch (choice(p)) {
      case 'bool_param':
        this.tag(1, 0);
        this.buf[this.pos++] = p.bool_param ? 1 : 0;
        return;
      case 'int64_param':
        this.tag(2, 0);
        this.int64(p.int64_param as Int64);
        return;
      case 'string_param': {
        const s = p.string_param as string;
        this.tag(3, 2);
        const len = Buffer.byteLength(s);
        this.varint(len);
        this.buf.write(s, this.pos, 'utf8');
        this.pos += len;
        return;
      }
      case 'double_param':
        this.tag(4, 1);
        this.buf.writeDoubleLE(p.double_param as number, this.pos);
        this.pos += 8;
        return;
      case 'uint64_param':
        this.tag(5, 0);
        this.int64(p.uint64_param as Int64);
        return;
      default:
        return;
    }
  }
}
