import { TritonError } from '../../base/errors';
import { setEntry } from '../../tensor/wire-value';
import type {
  InferInputTensorMessage,
  InferParameterMap,
  InferParameterMessage,
  InferRequestedOutputTensorMessage,
  InferTensorContentsMessage,
  Int64,
  ModelInferRequestMessage,
} from '../../protocol/messages';

/** Wire types: how a field's value is laid out. */
const VARINT = 0;
const FIXED64 = 1;
const LEN = 2;
const FIXED32 = 5;

/**
 * A direct protobuf decoder for `inference.ModelInferRequest`, the hot path's only inbound message. It
 * produces what @grpc/proto-loader produces with tstriton's options (`ModelInferRequestMessage`; 64-bit
 * integers as numbers when exact, decimal strings otherwise) at a fraction of the cost, and leaves
 * `raw_input_contents` as views on the received buffer. Unknown fields are skipped, as protobuf requires, and so
 * is a known field sent with another wire type than its own, as protobuf's C++ parser (Triton's) skips it rather
 * than misread its bytes. A truncated field or a length beyond its message is malformed (INVALID_ARGUMENT).
 * `memory`, when the caller knows it, is the ArrayBuffer that holds this message and nothing else.
 */
export function decodeModelInferRequest(buf: Buffer, memory?: ArrayBuffer): ModelInferRequestMessage {
  const r = new Reader(buf);
  const msg: ModelInferRequestMessage = { model_name: '', model_version: '', id: '', parameters: {}, inputs: [], outputs: [], raw_input_contents: [] };
  while (r.pos < r.end) {
    const tag = r.tag();
    switch (tag) {
      case (1 << 3) | 2:
        msg.model_name = r.string();
        break;
      case (2 << 3) | 2:
        msg.model_version = r.string();
        break;
      case (3 << 3) | 2:
        msg.id = r.string();
        break;
      case (4 << 3) | 2:
        r.mapEntry(msg.parameters as InferParameterMap);
        break;
      case (5 << 3) | 2:
        (msg.inputs as InferInputTensorMessage[]).push(r.sub(readInput));
        break;
      case (6 << 3) | 2:
        (msg.outputs as InferRequestedOutputTensorMessage[]).push(r.sub(readOutput));
        break;
      case (7 << 3) | 2:
        (msg.raw_input_contents as Uint8Array[]).push(r.bytes());
        break;
      default:
        r.skip(tag & 7);
    }
  }
  if (memory) msg.movableBuffer = memory;
  else if (ownsItsBuffer(buf)) msg.movableBuffer = buf.buffer;
  return msg;
}

/** Messages below this size are not worth moving (their inputs are copied into one buffer anyway). */
const MOVABLE_MESSAGE_BYTES = 64 * 1024;

/**
 * Whether a received message has its ArrayBuffer to itself: grpc-js assembles each message (with its 5-byte
 * frame header in front) into a buffer of its own, which large messages do not share with Node's pool.
 * Nothing but this message lies in such a buffer and grpc-js does not read it once the message is decoded.
 */
function ownsItsBuffer(buf: Buffer): boolean {
  return buf.byteLength >= MOVABLE_MESSAGE_BYTES && buf.byteOffset <= 5 && buf.buffer.byteLength === buf.byteOffset + buf.byteLength;
}

function readInput(r: Reader): InferInputTensorMessage {
  const t: InferInputTensorMessage = { name: '', datatype: '', shape: [], parameters: {}, contents: null };
  while (r.pos < r.end) {
    const tag = r.tag();
    switch (tag) {
      case (1 << 3) | LEN:
        t.name = r.string();
        break;
      case (2 << 3) | LEN:
        t.datatype = r.string();
        break;
      case (3 << 3) | LEN:
      case (3 << 3) | VARINT:
        r.repeated(tag, t.shape, () => r.int64());
        break;
      case (4 << 3) | LEN:
        r.mapEntry(t.parameters as InferParameterMap);
        break;
      case (5 << 3) | LEN:
        t.contents = r.sub(readContents);
        break;
      default:
        r.skip(tag & 7);
    }
  }
  return t;
}

function readOutput(r: Reader): InferRequestedOutputTensorMessage {
  const o: InferRequestedOutputTensorMessage = { name: '', parameters: {} };
  while (r.pos < r.end) {
    const tag = r.tag();
    if (tag === ((1 << 3) | 2)) o.name = r.string();
    else if (tag === ((2 << 3) | 2)) r.mapEntry(o.parameters as InferParameterMap);
    else r.skip(tag & 7);
  }
  return o;
}

function readContents(r: Reader): InferTensorContentsMessage {
  const c = {
    bool_contents: [] as boolean[],
    int_contents: [] as number[],
    int64_contents: [] as Int64[],
    uint_contents: [] as number[],
    uint64_contents: [] as Int64[],
    fp32_contents: [] as number[],
    fp64_contents: [] as number[],
    bytes_contents: [] as Uint8Array[],
  };
  while (r.pos < r.end) {
    const tag = r.tag();
    // Each repeated scalar comes packed (LEN) or one element per tag (its own wire type).
    switch (tag) {
      case (1 << 3) | LEN:
      case (1 << 3) | VARINT:
        r.repeated(tag, c.bool_contents, () => r.uint32() !== 0);
        break;
      case (2 << 3) | LEN:
      case (2 << 3) | VARINT:
        r.repeated(tag, c.int_contents, () => r.uint32() | 0);
        break;
      case (3 << 3) | LEN:
      case (3 << 3) | VARINT:
        r.repeated(tag, c.int64_contents, () => r.int64());
        break;
      case (4 << 3) | LEN:
      case (4 << 3) | VARINT:
        r.repeated(tag, c.uint_contents, () => r.uint32());
        break;
      case (5 << 3) | LEN:
      case (5 << 3) | VARINT:
        r.repeated(tag, c.uint64_contents, () => r.uint64());
        break;
      case (6 << 3) | LEN:
      case (6 << 3) | FIXED32:
        r.repeated(tag, c.fp32_contents, () => r.float());
        break;
      case (7 << 3) | LEN:
      case (7 << 3) | FIXED64:
        r.repeated(tag, c.fp64_contents, () => r.double());
        break;
      case (8 << 3) | LEN:
        c.bytes_contents.push(r.bytes());
        break;
      default:
        r.skip(tag & 7);
    }
  }
  return c;
}

function readParameter(r: Reader): InferParameterMessage {
  const p: InferParameterMessage = {};
  while (r.pos < r.end) {
    const tag = r.tag();
    switch (tag) {
      case (1 << 3) | 0:
        p.bool_param = r.uint32() !== 0;
        p.parameter_choice = 'bool_param';
        break;
      case (2 << 3) | 0:
        p.int64_param = r.int64();
        p.parameter_choice = 'int64_param';
        break;
      case (3 << 3) | 2:
        p.string_param = r.string();
        p.parameter_choice = 'string_param';
        break;
      case (4 << 3) | 1:
        p.double_param = r.double();
        p.parameter_choice = 'double_param';
        break;
      case (5 << 3) | 0:
        p.uint64_param = r.uint64();
        p.parameter_choice = 'uint64_param';
        break;
      default:
        r.skip(tag & 7);
    }
  }
  return p;
}

const TWO_32 = 2 ** 32;

/** A cursor over protobuf wire bytes; `end` bounds the message being read. */
class Reader {
  pos = 0;
  end: number;

  constructor(private readonly buf: Buffer) {
    this.end = buf.length;
  }

  /** A field's tag (number and wire type); field number 0 does not exist, as protobuf's own parsers hold. */
  tag(): number {
    const tag = this.uint32();
    if (tag >>> 3 === 0) throw malformed('field number 0');
    return tag;
  }

  /** A varint of up to 32 bits (tags, lengths, bools, 32-bit ints); longer ones keep their low 32 bits. */
  uint32(): number {
    const buf = this.buf;
    let result = 0;
    let shift = 0;
    for (;;) {
      if (this.pos >= this.end) throw malformed('varint');
      const b = buf[this.pos++] as number;
      if (shift < 32) result |= (b & 0x7f) << shift;
      if (b < 0x80) return result >>> 0;
      shift += 7;
      if (shift >= 70) throw malformed('varint');
    }
  }

  /** A 64-bit varint as (low 32 bits, high 32 bits). */
  private varint64(): [number, number] {
    const buf = this.buf;
    let lo = 0;
    let hi = 0;
    let shift = 0;
    for (;;) {
      if (this.pos >= this.end) throw malformed('varint');
      const b = buf[this.pos++] as number;
      const bits = b & 0x7f;
      if (shift < 28) lo |= bits << shift;
      else if (shift === 28) {
        lo |= (bits & 0x0f) << 28;
        hi |= bits >>> 4;
      } else if (shift < 64) hi |= bits << (shift - 32);
      if (b < 0x80) return [lo >>> 0, hi >>> 0];
      shift += 7;
      if (shift >= 70) throw malformed('varint');
    }
  }

  /** int64: a number when exact, a decimal string otherwise. */
  int64(): Int64 {
    const [lo, hi] = this.varint64();
    if (hi < 0x200000) return hi * TWO_32 + lo; // below 2^53
    if (hi >= 0xffe00000 && (hi !== 0xffe00000 || lo !== 0)) return (hi - TWO_32) * TWO_32 + lo; // above -2^53
    return BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(lo)).toString();
  }

  /** uint64: a number when exact, a decimal string otherwise. */
  uint64(): Int64 {
    const [lo, hi] = this.varint64();
    if (hi < 0x200000) return hi * TWO_32 + lo;
    return ((BigInt(hi) << 32n) | BigInt(lo)).toString();
  }

  float(): number {
    if (this.pos + 4 > this.end) throw malformed('float');
    const v = this.buf.readFloatLE(this.pos);
    this.pos += 4;
    return v;
  }

  double(): number {
    if (this.pos + 8 > this.end) throw malformed('double');
    const v = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }

  /** A length: the whole varint counts (a length of 2^32 + 3 is not 3). */
  private length(): number {
    const [len, high] = this.varint64();
    if (high !== 0 || this.pos + len > this.end) throw malformed('length-delimited field');
    return len;
  }

  string(): string {
    const len = this.length();
    const s = this.buf.toString('utf8', this.pos, this.pos + len);
    this.pos += len;
    return s;
  }

  /** A view on the bytes, not a copy. */
  bytes(): Buffer {
    const len = this.length();
    const b = this.buf.subarray(this.pos, this.pos + len);
    this.pos += len;
    return b;
  }

  /** Reads an embedded message with `read`, bounded by its length. */
  sub<T>(read: (r: Reader) => T): T {
    const len = this.length();
    const outer = this.end;
    this.end = this.pos + len;
    const value = read(this);
    if (this.pos !== this.end) throw malformed('embedded message');
    this.end = outer;
    return value;
  }

  /** A repeated scalar, packed (one length-delimited run) or not (one element per tag). */
  repeated<T>(tag: number, into: T[], read: () => T): void {
    if ((tag & 7) !== LEN) {
      into.push(read());
      return;
    }
    const len = this.length();
    const outer = this.end;
    this.end = this.pos + len;
    while (this.pos < this.end) into.push(read());
    this.end = outer;
  }

  /** One `map<string, InferParameter>` entry. */
  mapEntry(into: InferParameterMap): void {
    this.sub((r) => {
      let key = '';
      let value: InferParameterMessage = {};
      while (r.pos < r.end) {
        const tag = r.tag();
        if (tag === ((1 << 3) | 2)) key = r.string();
        else if (tag === ((2 << 3) | 2)) value = r.sub(readParameter);
        else r.skip(tag & 7);
      }
      setEntry(into, key, value);
    });
  }

  /** Skips a field of an unknown number. */
  skip(wireType: number): void {
    switch (wireType) {
      case 0:
        this.varint64();
        return;
      case 1:
        this.pos += 8;
        break;
      case 2: {
        // Read the length before adding: `this.pos += this.length()` would add to the old position.
        const len = this.length();
        this.pos += len;
        break;
      }
      case 5:
        this.pos += 4;
        break;
      default:
        throw malformed(`wire type ${wireType}`);
    }
    if (this.pos > this.end) throw malformed('skipped field');
  }
}

function malformed(what: string): TritonError {
  return new TritonError('INVALID_ARGUMENT', `malformed ModelInferRequest: truncated or invalid ${what}`);
}
