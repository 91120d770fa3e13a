import type { EnumSpec, ScalarType, ValueSpec } from './text-format-schema';
import { describeToken, type SourcePosition, type TextFormatTokenizer } from './text-format-tokenizer';

/** A value spec that is not a message: what a scalar field or a map key holds. */
export type ScalarSpec = Exclude<ValueSpec, { kind: 'message' }>;

/** A scalar as the JSON form of the config holds it. */
export type ScalarValue = string | number | boolean;

/** Smallest and largest value of each integer type. */
const INTEGER_RANGES: Readonly<Partial<Record<ScalarType, readonly [bigint, bigint]>>> = {
  int32: [-(2n ** 31n), 2n ** 31n - 1n],
  sint32: [-(2n ** 31n), 2n ** 31n - 1n],
  sfixed32: [-(2n ** 31n), 2n ** 31n - 1n],
  uint32: [0n, 2n ** 32n - 1n],
  fixed32: [0n, 2n ** 32n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n],
  sint64: [-(2n ** 63n), 2n ** 63n - 1n],
  sfixed64: [-(2n ** 63n), 2n ** 63n - 1n],
  uint64: [0n, 2n ** 64n - 1n],
  fixed64: [0n, 2n ** 64n - 1n],
};

/** Decimal, hexadecimal (`0x1F`) or C octal (`017`) integer, optionally negative. */
const INTEGER = /^(-?)(?:(0[xX][0-9A-Fa-f]+)|(0[0-7]+)|(0|[1-9][0-9]*))$/;
/** Decimal float with optional exponent and `f` suffix; the suffix is C's, accepted as text format does. */
const FLOAT = /^-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fF]?$/;
const INFINITY = /^(-?)inf(?:inity)?f?$/i;
const NAN = /^-?nanf?$/i;
const TRUE = new Set(['true', 'True', 't', '1']);
const FALSE = new Set(['false', 'False', 'f', '0']);

/** A scalar as written: its text (a leading `-` joined on) and where it starts. */
interface Written {
  readonly text: string;
  readonly at: SourcePosition;
  readonly kind: 'identifier' | 'number' | 'string' | 'other';
  /** For strings: the bytes, adjacent literals concatenated. */
  readonly bytes?: Uint8Array;
}

/**
 * Reads the value of scalar field `field` (an enum, a number, a bool, a string) from `tokens`, checked against
 * its type; throws an `INVALID_CONFIG` error at the value otherwise.
 */
export function readScalar(tokens: TextFormatTokenizer, spec: ScalarSpec, field: string): ScalarValue {
  const written = readWritten(tokens);
  const fail = (message: string): never => {
    throw tokens.error(written.at, message);
  };
  if (spec.kind === 'enum') return enumName(written, spec.enum, field, fail);
  switch (spec.type) {
    case 'string':
    case 'bytes': {
      if (!written.bytes) return fail(`field '${field}' expects a string, got ${written.text}`);
      if (spec.type === 'bytes') return Buffer.from(written.bytes).toString('latin1');
      try {
        return new TextDecoder('utf-8', { fatal: true }).decode(written.bytes);
      } catch {
        return fail(`field '${field}' expects a string, got invalid UTF-8 in ${written.text}`);
      }
    }
    case 'bool':
      if (written.kind !== 'string' && TRUE.has(written.text)) return true;
      if (written.kind !== 'string' && FALSE.has(written.text)) return false;
      return fail(`field '${field}' expects a boolean, got ${written.text}`);
    case 'float':
    case 'double':
      return floatValue(written, field, fail);
    default:
      return integerValue(written, spec.type, field, fail);
  }
}

/** Checks `value` against the range of integer type `type`; the message for a value out of it, or undefined. */
export function integerProblem(value: bigint, type: ScalarType, field: string): string | undefined {
  const range = INTEGER_RANGES[type];
  if (range && (value < range[0] || value > range[1])) return `field '${field}' value ${value} is out of range for ${type}`;
  if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) {
    return `field '${field}' value ${value} is beyond Number.MAX_SAFE_INTEGER and cannot be held exactly`;
  }
  return undefined;
}

/** Parses integer text as the text format writes it; undefined when it is not one. */
export function parseInteger(text: string): bigint | undefined {
  const m = INTEGER.exec(text);
  if (!m) return undefined;
  const [, sign, hex, octal, decimal] = m;
  const magnitude = hex ? BigInt(hex) : octal ? BigInt(`0o${octal.slice(1)}`) : BigInt(decimal as string);
  return sign ? -magnitude : magnitude;
}

function integerValue(written: Written, type: ScalarType, field: string, fail: (m: string) => never): number {
  const value = written.kind === 'number' ? parseInteger(written.text) : undefined;
  if (value === undefined) return fail(`field '${field}' expects an integer, got ${written.text}`);
  const problem = integerProblem(value, type, field);
  return problem ? fail(problem) : Number(value);
}

function floatValue(written: Written, field: string, fail: (m: string) => never): number {
  const { text } = written;
  if (written.kind === 'number' && FLOAT.test(text)) return Number(text.replace(/[fF]$/, ''));
  if (written.kind === 'identifier') {
    const inf = INFINITY.exec(text);
    if (inf) return inf[1] ? -Infinity : Infinity;
    if (NAN.test(text)) return NaN;
  }
  return fail(`field '${field}' expects a number, got ${text}`);
}

function enumName(written: Written, e: EnumSpec, field: string, fail: (m: string) => never): string {
  if (written.kind === 'identifier' && !written.text.startsWith('-')) {
    if (e.numbers.has(written.text)) return written.text;
    return fail(`unknown enum value '${written.text}' for field '${field}' (${e.fullName})`);
  }
  const number = written.kind === 'number' ? parseInteger(written.text) : undefined;
  if (number === undefined) return fail(`field '${field}' expects a value of ${e.fullName}, got ${written.text}`);
  const name = number >= BigInt(-(2 ** 31)) && number < BigInt(2 ** 31) ? e.names.get(Number(number)) : undefined;
  return name ?? fail(`unknown enum value ${written.text} for field '${field}' (${e.fullName})`);
}

/** Reads one value token, a leading `-` joined to the token after it, adjacent strings joined into one. */
function readWritten(tokens: TextFormatTokenizer): Written {
  const first = tokens.next();
  const at = { line: first.line, column: first.column };
  if (first.kind === 'symbol' && first.text === '-') {
    const next = tokens.peek();
    if (next.kind !== 'number' && next.kind !== 'identifier') return { text: "'-'", at, kind: 'other' };
    tokens.next();
    return { text: `-${next.text}`, at, kind: next.kind };
  }
  if (first.kind === 'string') {
    const parts = [first.bytes as Uint8Array];
    let text = first.text;
    while (tokens.peek().kind === 'string') {
      const more = tokens.next();
      parts.push(more.bytes as Uint8Array);
      text += ` ${more.text}`;
    }
    return { text, at, kind: 'string', bytes: Buffer.concat(parts) };
  }
  return { text: describeToken(first), at, kind: first.kind === 'identifier' || first.kind === 'number' ? first.kind : 'other' };
}
