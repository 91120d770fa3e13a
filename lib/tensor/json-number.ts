/**
 * JSON number literals read straight from UTF-8 bytes: the grammar check, the value JSON.parse would give, and
 * the value a float tensor stores, without a string per number.
 */

/** The parts of the last literal `scanNumber` read (one shared record: no allocation per number). */
export const literal = {
  /** The literal starts with '-'. */
  negative: false,
  /** The significant digits as an integer; exact while `exact`, rounded beyond 2^53. */
  mantissa: 0,
  /** `mantissa` holds the digits exactly (it never passed 2^53). */
  exact: true,
  /** Significant digits read (leading zeros left out). */
  digits: 0,
  /** The power of ten `mantissa` is scaled by (fraction digits and the exponent folded in). */
  exponent: 0,
  /** No fraction and no exponent: an integer literal. */
  integer: true,
};

/** 2^53: integers up to here are exact in a double. */
const EXACT_LIMIT = 9007199254740992;

/**
 * Reads the JSON number literal at `pos` into `literal` and returns the position after it, or -1 when the bytes
 * there are not a number in JSON's grammar (`-? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)?`). The JSON text
 * ends where `b` ends.
 */
export function scanNumber(b: Uint8Array, pos: number): number {
  let i = pos;
  // Past the end a typed array reads undefined, which matches no byte below: no bounds check per digit.
  let c = b[i]!;
  let negative = false;
  if (c === 45) {
    negative = true;
    c = b[++i]!;
  }
  let mantissa = 0;
  let digits = 0;
  let exponent = 0;
  let exact = true;
  if (c === 48) {
    c = b[++i]!;
  } else if (c >= 49 && c <= 57) {
    do {
      mantissa = mantissa * 10 + (c - 48);
      digits++;
      c = b[++i]!;
    } while (c >= 48 && c <= 57);
  } else {
    return -1;
  }
  let integer = true;
  if (c === 46) {
    integer = false;
    c = b[++i]!;
    if (!(c >= 48 && c <= 57)) return -1;
    do {
      if (digits > 0 || c !== 48) {
        mantissa = mantissa * 10 + (c - 48);
        digits++;
      }
      exponent--;
      c = b[++i]!;
    } while (c >= 48 && c <= 57);
  }
  if (c === 101 || c === 69) {
    integer = false;
    c = b[++i]!;
    let sign = 1;
    if (c === 45 || c === 43) {
      if (c === 45) sign = -1;
      c = b[++i]!;
    }
    if (!(c >= 48 && c <= 57)) return -1;
    let e = 0;
    do {
      // Beyond any double's range either way; capping keeps the sum finite.
      if (e < 1e6) e = e * 10 + (c - 48);
      c = b[++i]!;
    } while (c >= 48 && c <= 57);
    exponent += sign * e;
  }
  if (mantissa > EXACT_LIMIT) exact = false;
  literal.negative = negative;
  literal.mantissa = mantissa;
  literal.exact = exact;
  literal.digits = digits;
  literal.exponent = exponent;
  literal.integer = integer;
  return i;
}

/** Powers of ten 10^0 … 10^308, each the double nearest to it. */
const POW10: readonly number[] = Array.from({ length: 309 }, (_, k) => Number(`1e${k}`));

/** Exact powers of ten reach 10^22. */
const EXACT_POW10 = 22;

/**
 * The value of the literal `scanNumber` just read at [start, end), as JSON.parse gives it (the nearest double),
 * except that an integer literal beyond 2^53 is a BigInt.
 */
export function literalValue(b: Uint8Array, start: number, end: number): number | bigint {
  const { mantissa, exponent } = literal;
  if (literal.integer) {
    // Fifteen digits and fewer are always exact and safe.
    if (literal.digits <= 15) return literal.negative ? -mantissa : mantissa;
    const text = latin1(b, start, end);
    const n = Number(text);
    return Number.isSafeInteger(n) ? n : BigInt(text);
  }
  // One rounding of exact operands is the nearest double (Clinger's fast path).
  if (literal.exact && exponent >= -EXACT_POW10 && exponent <= EXACT_POW10) {
    const v = exponent < 0 ? mantissa / POW10[-exponent]! : mantissa * POW10[exponent]!;
    return literal.negative ? -v : v;
  }
  return Number(latin1(b, start, end));
}

/** Relative error bound of `approximate`, with room to spare: 2^-44. */
const APPROXIMATION_ERROR = 5.7e-14;

/**
 * The float32 value of the literal `scanNumber` just read at [start, end): what storing JSON.parse's double in
 * a Float32Array gives. The double is approximated from the digits (within 2^-44 of the exact value, for up to
 * 40 significant digits), and taken when every double that close rounds to the same float32; only a literal
 * that lands on the edge between two float32 values is parsed exactly.
 */
export function literalFloat32(b: Uint8Array, start: number, end: number): number {
  const { mantissa, exponent } = literal;
  if (literal.exact && exponent >= -EXACT_POW10 && exponent <= EXACT_POW10) {
    const v = exponent < 0 ? mantissa / POW10[-exponent]! : mantissa * POW10[exponent]!;
    return Math.fround(literal.negative ? -v : v);
  }
  if (literal.digits <= 40 && exponent >= -290 && exponent <= 290) {
    const v = exponent < 0 ? mantissa / POW10[-exponent]! : mantissa * POW10[exponent]!;
    // Far from the subnormal doubles (where the relative error grows) and from overflow.
    if (v === 0 || (v > 1e-280 && v < 1e280)) {
      const margin = v * APPROXIMATION_ERROR;
      const f = Math.fround(v);
      // Rounding is monotonic: if both ends of the interval round to f, so does the exact double inside it.
      if (Math.fround(v - margin) === f && Math.fround(v + margin) === f) return literal.negative ? -f : f;
    }
  }
  return Math.fround(Number(latin1(b, start, end)));
}

/** The double of the literal at [start, end), for a Float64Array: JSON.parse's value, BigInt literals as numbers. */
export function literalFloat64(b: Uint8Array, start: number, end: number): number {
  const { mantissa, exponent } = literal;
  if (literal.exact && exponent >= -EXACT_POW10 && exponent <= EXACT_POW10) {
    const v = exponent < 0 ? mantissa / POW10[-exponent]! : mantissa * POW10[exponent]!;
    return literal.negative ? -v : v;
  }
  return Number(latin1(b, start, end));
}

function latin1(b: Uint8Array, start: number, end: number): string {
  return Buffer.prototype.latin1Slice.call(b, start, end) as string;
}
