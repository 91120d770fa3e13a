import { isUtf8 } from 'node:buffer';
import { TritonError, invalidArgument } from '../base/errors';
import { literalFloat32, literalFloat64, literalValue, scanNumber } from './json-number';
import { setEntry } from './wire-value';

/**
 * JSON parsing that keeps integers beyond 2^53 exact, as BigInt.
 *
 * `JSON.parse` rounds such integers, which corrupts INT64/UINT64 data. Texts without an integer literal of
 * 16 or more digits cannot hold one, so they take the fast native path (fraction digits of floats do not
 * count); the rest go through a small parser that returns unsafe integers as BigInt. Both paths enforce a
 * nesting depth limit.
 */
export function parseJson(text: string, maxDepth: number): unknown {
  let value: unknown;
  if (!LONG_INTEGER.test(text)) {
    try {
      value = JSON.parse(text);
    } catch (err) {
      throw invalidArgument(`failed to parse the request JSON buffer: ${(err as Error).message}`);
    }
    // Every level opens a bracket and closes it: a text this short cannot nest deeper than the limit.
    if (text.length > 2 * maxDepth) withinStack(() => checkDepth(value, maxDepth));
    return value;
  }
  const bytes = Buffer.from(text, 'utf8');
  return withinStack(() => new Parser(bytes, maxDepth, false).parseDocument());
}

/** Fatal: a malformed sequence throws instead of becoming U+FFFD. The BOM is kept, for JSON.parse to refuse as before. */
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * The text of a UTF-8 JSON document. Bytes that are not UTF-8 (a stray 0xFF, a cut-off or overlong sequence, an
 * encoded surrogate) are INVALID_ARGUMENT: replacing them with U+FFFD would hand the model text the client never
 * sent (RFC 8259 requires UTF-8).
 */
export function decodeUtf8(bytes: Uint8Array): string {
  try {
    return UTF8.decode(bytes);
  } catch {
    throw invalidUtf8();
  }
}

function invalidUtf8(): TritonError {
  return invalidArgument('failed to parse the request JSON buffer: the document is not valid UTF-8 (expected JSON text encoded in UTF-8)');
}

/**
 * Parses UTF-8 JSON bytes as `parseJson` parses their text, without decoding them to one string first: the
 * same values (BigInt for integers beyond 2^53) and, for malformed or too deep documents, the same errors.
 *
 * With `floatData`, the document is an infer request (`{"inputs":[{...,"data":[...]}]}`): the `data` of an
 * input whose `datatype` (FP32 or FP64) comes before it, and which holds numbers only, is read straight into
 * that typed array and returned as `JsonFloats`; `decodeJsonData` takes it without another pass.
 */
export function parseJsonBytes(bytes: Buffer, maxDepth: number, floatData = false): unknown {
  // Checked once here: the parser then decodes strings from bytes it knows are UTF-8.
  if (!isUtf8(bytes)) throw invalidUtf8();
  try {
    return new Parser(bytes, maxDepth, floatData).parseDocument();
  } catch {
    // The text path words every error as before (a syntax error before a depth error, and V8's message).
    return parseJson(bytes.toString('utf8'), maxDepth);
  }
}

/**
 * The `data` array of an FP32 or FP64 input, read straight into its typed array by `parseJsonBytes`. `elements()`
 * gives the array JSON.parse would have given, for any other use (another datatype named later in the object).
 */
export class JsonFloats {
  constructor(
    /** The datatype `values` were read for. */
    readonly dtype: 'FP32' | 'FP64',
    /** The numbers, flattened in row-major order. */
    readonly values: Float32Array | Float64Array,
    private readonly source: Parser,
    private readonly start: number,
    private readonly depth: number,
  ) {}

  /** The array as JSON.parse gives it (nested as it was sent). */
  elements(): unknown[] {
    return this.source.valueAt(this.start, this.depth) as unknown[];
  }
}

/**
 * Runs a recursive walk, turning a stack overflow into INVALID_ARGUMENT: with a large configured `jsonMaxDepth`,
 * a document can nest deeper than the stack goes before the limit is reached.
 */
function withinStack<T>(walk: () => T): T {
  try {
    return walk();
  } catch (err) {
    if (err instanceof RangeError) throw invalidArgument('failed to parse the request JSON buffer: nesting too deep to parse');
    throw err;
  }
}

function checkDepth(value: unknown, maxDepth: number, depth = 1): void {
  if (depth > maxDepth) throw tooDeep(maxDepth);
  if (Array.isArray(value)) {
    for (const v of value) if (typeof v === 'object' && v !== null) checkDepth(v, maxDepth, depth + 1);
  } else if (typeof value === 'object' && value !== null) {
    for (const k in value) {
      const v = (value as Record<string, unknown>)[k];
      if (typeof v === 'object' && v !== null) checkDepth(v, maxDepth, depth + 1);
    }
  }
}

function tooDeep(maxDepth: number): TritonError {
  return invalidArgument(`failed to parse the request JSON buffer: nesting deeper than ${maxDepth} levels`);
}

/** A run of 16+ digits that is not the fraction or exponent of a number (strings may match: harmless). */
const LONG_INTEGER = /(?:^|[^\d.eE+-])-?\d{16,}(?![\d.eE])/;

/** Where the parser is in an infer request, for `floatData`. */
const enum Place {
  Other,
  /** The document's top-level object. */
  Request,
  /** The request's `inputs` array. */
  Inputs,
  /** One input object. */
  Input,
}

/** JSON over UTF-8 bytes; integer literals beyond 2^53 become BigInt. */
class Parser {
  private pos = 0;
  private readonly end: number;

  constructor(
    private readonly b: Buffer,
    private readonly maxDepth: number,
    private readonly floatData: boolean,
  ) {
    this.end = b.length;
  }

  parseDocument(): unknown {
    const v = this.value(1, this.floatData ? Place.Request : Place.Other);
    this.ws();
    if (this.pos !== this.end) this.fail('unexpected data after the JSON value');
    return v;
  }

  /** The value at `pos` (one this parser has read before), read again. */
  valueAt(pos: number, depth: number): unknown {
    this.pos = pos;
    return this.value(depth, Place.Other);
  }

  private fail(what: string): never {
    throw invalidArgument(`failed to parse the request JSON buffer: ${what} at offset ${this.pos}`);
  }

  private ws(): void {
    const b = this.b;
    let i = this.pos;
    while (i < this.end) {
      const c = b[i]!;
      if (c === 32 || c === 10 || c === 13 || c === 9) i++;
      else break;
    }
    this.pos = i;
  }

  private value(depth: number, place: Place): unknown {
    this.ws();
    const c = this.pos < this.end ? this.b[this.pos]! : -1;
    if (c === 123 || c === 91) {
      if (depth > this.maxDepth) throw tooDeep(this.maxDepth);
      return c === 123 ? this.object(depth, place) : this.array(depth, place);
    }
    if (c === 34) return this.string();
    if (c === 116) return this.word('true', true);
    if (c === 102) return this.word('false', false);
    if (c === 110) return this.word('null', null);
    const start = this.pos;
    const end = scanNumber(this.b, start);
    if (end < 0) this.fail('unexpected character');
    this.pos = end;
    return literalValue(this.b, start, end);
  }

  private word<T>(text: string, v: T): T {
    for (let k = 0; k < text.length; k++) {
      if (this.b[this.pos + k] !== text.charCodeAt(k)) this.fail('unexpected character');
    }
    this.pos += text.length;
    return v;
  }

  private object(depth: number, place: Place): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    this.pos++;
    this.ws();
    if (this.b[this.pos] === 125) return this.pos++, out;
    for (;;) {
      this.ws();
      if (this.b[this.pos] !== 34) this.fail('expected a string key');
      const key = this.string();
      this.ws();
      if (this.b[this.pos] !== 58) this.fail("expected ':'");
      this.pos++;
      let v: unknown;
      if (place === Place.Input && key === 'data') v = this.inputData(depth + 1, out.datatype, out.shape);
      else v = this.value(depth + 1, place === Place.Request && key === 'inputs' ? Place.Inputs : Place.Other);
      setEntry(out, key, v);
      this.ws();
      const c = this.b[this.pos++];
      if (c === 125) return out;
      if (c !== 44) this.fail("expected ',' or '}'");
    }
  }

  private array(depth: number, place: Place): unknown[] {
    const out: unknown[] = [];
    const inner = place === Place.Inputs ? Place.Input : Place.Other;
    this.pos++;
    this.ws();
    if (this.b[this.pos] === 93) return this.pos++, out;
    for (;;) {
      out.push(this.value(depth + 1, inner));
      this.ws();
      const c = this.b[this.pos++];
      if (c === 93) return out;
      if (c !== 44) this.fail("expected ',' or ']'");
    }
  }

  private string(): string {
    const b = this.b;
    const start = this.pos;
    let i = start + 1;
    let escaped = false;
    for (;;) {
      if (i >= this.end) this.fail('unterminated string');
      const c = b[i]!;
      if (c === 34) break;
      if (c === 92) {
        escaped = true;
        i += 2;
      } else {
        // Control characters must be escaped; JSON.parse of the literal refuses them below.
        if (c < 32) escaped = true;
        i++;
      }
    }
    this.pos = i + 1;
    if (!escaped) return b.toString('utf8', start + 1, i);
    try {
      return JSON.parse(b.toString('utf8', start, i + 1)) as string;
    } catch {
      return this.fail('invalid string');
    }
  }

  /** An input's `data`: read straight into a typed array when the input named FP32 or FP64 before it. */
  private inputData(depth: number, datatype: unknown, shape: unknown): unknown {
    // Whitespace may come after the ':' (Python's json.dumps writes ": ").
    this.ws();
    if (this.b[this.pos] === 91 && (datatype === 'FP32' || datatype === 'FP64')) {
      const start = this.pos;
      const floats = this.floats(depth, datatype, shape);
      if (floats) return floats;
      this.pos = start;
    }
    return this.value(depth, Place.Other);
  }

  /**
   * A (possibly nested) array of numbers at `pos`, read into a Float32Array or Float64Array; undefined (with
   * `pos` anywhere) when it holds anything but numbers and arrays.
   */
  private floats(depth: number, dtype: 'FP32' | 'FP64', shape: unknown): JsonFloats | undefined {
    const b = this.b;
    const end = this.end;
    const fp32 = dtype === 'FP32';
    const start = this.pos;
    // Every element takes at least two bytes ("1,"): a shape that promises more is not believed.
    let out: Float32Array | Float64Array = new (fp32 ? Float32Array : Float64Array)(Math.min(expectedCount(shape), (end - start) >> 1));
    let n = 0;
    let level = 0;
    let pos = start;
    let expectValue = true;
    for (;;) {
      // Past the end a typed array reads undefined, which matches no byte: no bounds check per byte.
      let c = b[pos]!;
      while (c === 32 || c === 10 || c === 13 || c === 9) c = b[++pos]!;
      if (expectValue) {
        if (c === 91) {
          if (depth + level > this.maxDepth) throw tooDeep(this.maxDepth);
          level++;
          pos++;
          c = b[pos]!;
          while (c === 32 || c === 10 || c === 13 || c === 9) c = b[++pos]!;
          // An empty array is a complete value.
          if (c === 93) expectValue = false;
          continue;
        }
        const after = scanNumber(b, pos);
        if (after < 0) {
          if (c === 34 || c === 116 || c === 102 || c === 110 || c === 123) return undefined;
          this.pos = pos;
          this.fail('unexpected character');
        }
        if (n === out.length) out = grow(out);
        out[n++] = fp32 ? literalFloat32(b, pos, after) : literalFloat64(b, pos, after);
        pos = after;
        expectValue = false;
      } else if (c === 44) {
        pos++;
        expectValue = true;
      } else if (c === 93) {
        pos++;
        if (--level === 0) break;
      } else {
        this.pos = pos;
        this.fail("expected ',' or ']'");
      }
    }
    this.pos = pos;
    return new JsonFloats(dtype, n === out.length ? out : out.subarray(0, n), this, start, depth);
  }
}

/** The element count a `shape` value promises (0 when it is not a plain list of dims). */
function expectedCount(shape: unknown): number {
  if (!Array.isArray(shape)) return 0;
  let n = 1;
  for (const d of shape) {
    if (typeof d !== 'number' || !Number.isInteger(d) || d < 0) return 0;
    n *= d;
  }
  return n;
}

function grow<T extends Float32Array | Float64Array>(a: T): T {
  const bigger = new (a.constructor as new (n: number) => T)(a.length * 2 + 16);
  bigger.set(a);
  return bigger;
}
