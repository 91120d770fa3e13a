import { TritonError } from '../base/errors';

/** What a token of protobuf text format is. */
export type TokenKind = 'identifier' | 'number' | 'string' | 'symbol' | 'end';

/** One token with the place it starts at (1-based line and column). */
export interface TextToken {
  readonly kind: TokenKind;
  /** The token as written in the source (quotes and escapes included); empty at the end. */
  readonly text: string;
  readonly line: number;
  readonly column: number;
  /** For strings: the bytes the literal stands for, escapes decoded. */
  readonly bytes?: Uint8Array;
}

/** Where something is in the source, for error messages. */
export interface SourcePosition {
  readonly line: number;
  readonly column: number;
}

const SYMBOLS = new Set(['{', '}', '<', '>', '[', ']', ':', ',', ';', '-']);

const IDENTIFIER = /[A-Za-z_][A-Za-z0-9_]*/y;

const SIMPLE_ESCAPES: Readonly<Record<string, number>> = {
  n: 0x0a,
  t: 0x09,
  r: 0x0d,
  a: 0x07,
  b: 0x08,
  f: 0x0c,
  v: 0x0b,
  '\\': 0x5c,
  "'": 0x27,
  '"': 0x22,
  '?': 0x3f,
};

/** The `INVALID_CONFIG` error for a problem at `at` in `file`: `file:line:column: message`. */
export function textFormatError(file: string, at: SourcePosition, message: string): TritonError {
  return new TritonError('INVALID_CONFIG', `${file}:${at.line}:${at.column}: ${message}`);
}

/** How a token reads in an error message: as written, a symbol in quotes, or "end of file". */
export function describeToken(token: TextToken): string {
  if (token.kind === 'end') return 'end of file';
  return token.kind === 'symbol' ? `'${token.text}'` : token.text;
}

/**
 * Splits protobuf text format into tokens on demand, one token of lookahead, skipping whitespace and `#`
 * comments. Lazy so that the first problem in the file is the one reported.
 */
export class TextFormatTokenizer {
  private pos = 0;
  private line = 1;
  private lineStart = 0;
  private ahead: TextToken | undefined;

  constructor(
    private readonly text: string,
    /** File name used as the prefix of error messages. */
    readonly file: string,
  ) {}

  /** The next token, without consuming it. */
  peek(): TextToken {
    this.ahead ??= this.read();
    return this.ahead;
  }

  /** Consumes and returns the next token. */
  next(): TextToken {
    const token = this.peek();
    this.ahead = undefined;
    return token;
  }

  /** Consumes the next token if it is the symbol `symbol`. */
  tryConsume(symbol: string): boolean {
    const token = this.peek();
    if (token.kind !== 'symbol' || token.text !== symbol) return false;
    this.next();
    return true;
  }

  /** An error at `at` with this file's prefix. */
  error(at: SourcePosition, message: string): TritonError {
    return textFormatError(this.file, at, message);
  }

  private read(): TextToken {
    this.skipBlank();
    const { text } = this;
    const start = this.pos;
    const at = { line: this.line, column: start - this.lineStart + 1 };
    if (start >= text.length) return { kind: 'end', text: '', ...at };
    const c = text[start] as string;
    if (/[A-Za-z_]/.test(c)) {
      IDENTIFIER.lastIndex = start;
      const m = IDENTIFIER.exec(text) as RegExpExecArray;
      return this.take('identifier', m[0].length, at);
    }
    if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(text[start + 1] ?? ''))) return this.take('number', this.numberLength(start), at);
    if (c === '"' || c === "'") return this.readString(c, at);
    if (SYMBOLS.has(c)) return this.take('symbol', 1, at);
    throw this.error(at, `unexpected character '${c}'`);
  }

  private take(kind: TokenKind, length: number, at: SourcePosition): TextToken {
    const token = { kind, text: this.text.slice(this.pos, this.pos + length), ...at };
    this.pos += length;
    return token;
  }

  /**
   * Length of a number token: greedy over letters, digits, dots and an exponent's sign, so that `12abc` or
   * `1.2.3` is one bad token (reported whole) rather than a number followed by a surprise.
   */
  private numberLength(start: number): number {
    const { text } = this;
    const hex = /^0[xX]/.test(text.slice(start, start + 2));
    let i = start;
    while (i < text.length) {
      const c = text[i] as string;
      if (/[0-9A-Za-z_.]/.test(c)) i++;
      else if ((c === '+' || c === '-') && !hex && /[eE]/.test(text[i - 1] ?? '')) i++;
      else break;
    }
    return i - start;
  }

  private readString(quote: string, at: SourcePosition): TextToken {
    const { text } = this;
    const start = this.pos;
    const bytes: number[] = [];
    let i = start + 1;
    for (;;) {
      if (i >= text.length || text[i] === '\n') throw this.error(at, 'unterminated string');
      const c = text[i] as string;
      if (c === quote) break;
      if (c !== '\\') {
        const code = text.codePointAt(i) as number;
        pushUtf8(bytes, code);
        i += code > 0xffff ? 2 : 1;
        continue;
      }
      i = this.readEscape(i, bytes);
    }
    const token: TextToken = { kind: 'string', text: text.slice(start, i + 1), ...at, bytes: Uint8Array.from(bytes) };
    this.pos = i + 1;
    return token;
  }

  /** Decodes the escape at `i` (a backslash) into `out`; returns the index after it. */
  private readEscape(i: number, out: number[]): number {
    const { text } = this;
    const at = { line: this.line, column: i - this.lineStart + 1 };
    const c = text[i + 1] ?? '';
    const simple = SIMPLE_ESCAPES[c];
    if (simple !== undefined) {
      out.push(simple);
      return i + 2;
    }
    let m: RegExpExecArray | null;
    if ((m = /^[0-7]{1,3}/.exec(text.slice(i + 1, i + 4)))) {
      const value = parseInt(m[0], 8);
      if (value > 0xff) throw this.error(at, `octal escape '\\${m[0]}' is beyond a byte`);
      out.push(value);
      return i + 1 + m[0].length;
    }
    if ((c === 'x' || c === 'X') && (m = /^[0-9A-Fa-f]{1,2}/.exec(text.slice(i + 2, i + 4)))) {
      out.push(parseInt(m[0], 16));
      return i + 2 + m[0].length;
    }
    const width = c === 'u' ? 4 : c === 'U' ? 8 : 0;
    if (width > 0 && (m = new RegExp(`^[0-9A-Fa-f]{${width}}`).exec(text.slice(i + 2, i + 2 + width)))) {
      const code = parseInt(m[0], 16);
      if (code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) throw this.error(at, `escape '\\${c}${m[0]}' is not a Unicode code point`);
      pushUtf8(out, code);
      return i + 2 + width;
    }
    throw this.error(at, `invalid escape '\\${c}' in string`);
  }

  private skipBlank(): void {
    const { text } = this;
    while (this.pos < text.length) {
      const c = text[this.pos];
      if (c === '\n') {
        this.pos++;
        this.line++;
        this.lineStart = this.pos;
      } else if (c === ' ' || c === '\t' || c === '\r' || c === '\f' || c === '\v') {
        this.pos++;
      } else if (c === '#') {
        while (this.pos < text.length && text[this.pos] !== '\n') this.pos++;
      } else {
        break;
      }
    }
  }
}

function pushUtf8(out: number[], code: number): void {
  if (code < 0x80) out.push(code);
  else if (code < 0x800) out.push(0xc0 | (code >> 6), 0x80 | (code & 0x3f));
  else if (code < 0x10000) out.push(0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f));
  else out.push(0xf0 | (code >> 18), 0x80 | ((code >> 12) & 0x3f), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f));
}
