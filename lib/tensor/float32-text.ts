/**
 * The JSON text of FP32 elements: for each value, the fewest significant digits (at most 9) whose decimal number,
 * read as a double and stored as a float32, gives the value back — what numpy prints for a float32. Written
 * straight as bytes, without a string per number.
 */

/** Powers of ten 10^0 … 10^60; exact up to 10^22. */
const POW10: readonly number[] = Array.from({ length: 61 }, (_, k) => Number(`1e${k}`));

/** Exact powers of ten reach 10^22: a decimal with an exponent in ±22 reads as one correctly rounded operation. */
const EXACT_POW10 = 22;

/** The longest text `writeFloat32` writes: `-123456789000000000000` (positional up to 10^21). */
export const MAX_FLOAT32_TEXT = 22;

/**
 * Writes the JSON text of float32 value `x` at `pos` and returns the position after it. Non-finite values have no
 * JSON literal and are written `null` (as Triton does); -0 is written `-0.0` so its sign survives. Numbers from
 * 1e-6 up to 1e21 are written in positional notation, others with an exponent, as JavaScript writes numbers.
 */
export function writeFloat32(out: Uint8Array, pos: number, x: number): number {
  if (x !== x || x === Infinity || x === -Infinity) {
    out[pos] = 0x6e; // null
    out[pos + 1] = 0x75;
    out[pos + 2] = 0x6c;
    out[pos + 3] = 0x6c;
    return pos + 4;
  }
  if (x === 0) {
    if (1 / x > 0) {
      out[pos] = 0x30;
      return pos + 1;
    }
    out[pos] = 0x2d; // -0.0
    out[pos + 1] = 0x30;
    out[pos + 2] = 0x2e;
    out[pos + 3] = 0x30;
    return pos + 4;
  }
  if (x < 0) {
    out[pos++] = 0x2d;
    x = -x;
  }
  // Nine significant digits always read back to the same float32: m in [10^8, 10^9), x ≈ m × 10^(e-8).
  let e = Math.floor(Math.log10(x));
  let m = Math.round(scaled(x, 8 - e));
  if (m >= 1e9) {
    e++;
    m = Math.round(scaled(x, 8 - e));
  } else if (m < 1e8) {
    e--;
    m = Math.round(scaled(x, 8 - e));
  }
  if (m === 1e9) {
    m = 1e8;
    e++;
  }
  let digits = 9;
  while (m % 10 === 0) {
    m /= 10;
    digits--;
  }
  // Fewer digits while they still read back. Each try rounds x itself (rounding the last try again could miss the
  // nearest shorter decimal); the check is the one rounding a reader's parse makes, exact where the power of ten is.
  const f = Math.fround(x);
  for (let p = digits - 1; p >= 1; p--) {
    let shorter = Math.round(scaled(x, p - 1 - e));
    let shorterE = e;
    if (shorter === POW10[p]) {
      shorter = POW10[p - 1]!;
      shorterE++;
    }
    const power = shorterE - (p - 1);
    // Beyond the exact powers (below 1e-13 or above 1e22: rare in tensors), the reader's own parse decides.
    const exact = power >= -EXACT_POW10 && power <= EXACT_POW10;
    const value = !exact ? Number(`${shorter}e${power}`) : power < 0 ? shorter / POW10[-power]! : shorter * POW10[power]!;
    if (Math.fround(value) !== f) break;
    m = shorter;
    e = shorterE;
    digits = p;
    while (digits > 1 && m % 10 === 0) {
      m /= 10;
      digits--;
    }
    if (digits < p) p = digits;
  }
  return writeDecimal(out, pos, m, digits, e);
}

/** x × 10^k, within a few units in the last place (enough for nine digits of a float32). */
function scaled(x: number, k: number): number {
  if (k >= 0) return k <= 60 ? x * POW10[k]! : x * POW10[60]! * POW10[k - 60]!;
  return -k <= 60 ? x / POW10[-k]! : x / POW10[60]! / POW10[-k - 60]!;
}

/** Writes d1.d2…dn × 10^e, where m holds the n digits. */
function writeDecimal(out: Uint8Array, pos: number, m: number, n: number, e: number): number {
  if (e >= 0 && e < 21) {
    if (n <= e + 1) {
      pos = writeDigits(out, pos, m, n);
      for (let k = n; k <= e; k++) out[pos++] = 0x30;
      return pos;
    }
    // The digits with the point after e + 1 of them.
    const end = pos + n + 1;
    let i = end - 1;
    for (let k = 0; k < n - e - 1; k++) {
      out[i--] = 0x30 + (m % 10);
      m = (m / 10) | 0;
    }
    out[i--] = 0x2e;
    while (i >= pos) {
      out[i--] = 0x30 + (m % 10);
      m = (m / 10) | 0;
    }
    return end;
  }
  if (e < 0 && e >= -6) {
    out[pos++] = 0x30;
    out[pos++] = 0x2e;
    for (let k = -1; k > e; k--) out[pos++] = 0x30;
    return writeDigits(out, pos, m, n);
  }
  // d[.ddd]e±x
  const lead = Math.floor(m / POW10[n - 1]!);
  out[pos++] = 0x30 + lead;
  if (n > 1) {
    out[pos++] = 0x2e;
    pos = writeDigits(out, pos, m - lead * POW10[n - 1]!, n - 1);
  }
  out[pos++] = 0x65;
  out[pos++] = e < 0 ? 0x2d : 0x2b;
  const exponent = e < 0 ? -e : e;
  return writeDigits(out, pos, exponent, exponent >= 10 ? 2 : 1);
}

/** Writes the n decimal digits of m (below 2^31: integer division; zero-padded on the left). */
function writeDigits(out: Uint8Array, pos: number, m: number, n: number): number {
  for (let i = pos + n - 1; i >= pos; i--) {
    out[i] = 0x30 + (m % 10);
    m = (m / 10) | 0;
  }
  return pos + n;
}

const scratch = Buffer.allocUnsafe(MAX_FLOAT32_TEXT);

/** The text `writeFloat32` writes, as a string. */
export function float32Text(x: number): string {
  return scratch.toString('latin1', 0, writeFloat32(scratch, 0, x));
}
