import { TritonError, invalidArgument } from '../errors';
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
  return withinStack(() => new Parser(text, maxDepth).parseDocument());
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

const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;

/** A run of 16+ digits that is not the fraction or exponent of a number (strings may match: harmless). */
const LONG_INTEGER = /(?:^|[^\d.eE+-])-?\d{16,}(?![\d.eE])/;

class Parser {
  private pos = 0;

  constructor(
    private readonly text: string,
    private readonly maxDepth: number,
  ) {}

  parseDocument(): unknown {
    const v = this.value(1);
    this.ws();
    if (this.pos !== this.text.length) this.fail('unexpected data after the JSON value');
    return v;
  }

  private fail(what: string): never {
    throw invalidArgument(`failed to parse the request JSON buffer: ${what} at offset ${this.pos}`);
  }

  private ws(): void {
    const t = this.text;
    while (this.pos < t.length) {
      const c = t.charCodeAt(this.pos);
      if (c === 32 || c === 9 || c === 10 || c === 13) this.pos++;
      else break;
    }
  }

  private value(depth: number): unknown {
    this.ws();
    const c = this.text[this.pos];
    if (c === '{' || c === '[') {
      if (depth > this.maxDepth) throw tooDeep(this.maxDepth);
      return c === '{' ? this.object(depth) : this.array(depth);
    }
    if (c === '"') return this.string();
    if (this.text.startsWith('true', this.pos)) return (this.pos += 4), true;
    if (this.text.startsWith('false', this.pos)) return (this.pos += 5), false;
    if (this.text.startsWith('null', this.pos)) return (this.pos += 4), null;
    return this.number();
  }

  private object(depth: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    this.pos++;
    this.ws();
    if (this.text[this.pos] === '}') return this.pos++, out;
    for (;;) {
      this.ws();
      if (this.text[this.pos] !== '"') this.fail('expected a string key');
      const key = this.string();
      this.ws();
      if (this.text[this.pos] !== ':') this.fail("expected ':'");
      this.pos++;
      setEntry(out, key, this.value(depth + 1));
      this.ws();
      const c = this.text[this.pos++];
      if (c === '}') return out;
      if (c !== ',') this.fail("expected ',' or '}'");
    }
  }

  private array(depth: number): unknown[] {
    const out: unknown[] = [];
    this.pos++;
    this.ws();
    if (this.text[this.pos] === ']') return this.pos++, out;
    for (;;) {
      out.push(this.value(depth + 1));
      this.ws();
      const c = this.text[this.pos++];
      if (c === ']') return out;
      if (c !== ',') this.fail("expected ',' or ']'");
    }
  }

  private string(): string {
    // Find the closing quote, skipping escapes, then let JSON.parse decode the literal.
    const start = this.pos;
    let i = start + 1;
    const t = this.text;
    while (i < t.length) {
      const c = t.charCodeAt(i);
      if (c === 92) i += 2;
      else if (c === 34) break;
      else i++;
    }
    if (i >= t.length) this.fail('unterminated string');
    this.pos = i + 1;
    try {
      return JSON.parse(t.slice(start, i + 1)) as string;
    } catch {
      return this.fail('invalid string');
    }
  }

  private number(): number | bigint {
    NUMBER.lastIndex = this.pos;
    const m = NUMBER.exec(this.text);
    if (!m) this.fail('unexpected character');
    this.pos += m[0].length;
    const n = Number(m[0]);
    if (m[1] === undefined && m[2] === undefined && !Number.isSafeInteger(n)) return BigInt(m[0]);
    return n;
  }
}
