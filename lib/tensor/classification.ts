import { invalidArgument } from '../base/errors';
import type { Tensor } from './tensor';

/** How one output is answered as classifications. */
export interface Classification {
  /** How many classes per row, highest value first. */
  readonly count: number;
  /** Whether dim 0 is the batch dim (one row per batch entry) or the whole tensor is one row. */
  readonly batched: boolean;
  /** Class labels by index, when the output declares them. */
  readonly labels?: readonly string[];
}

/**
 * Triton's classification extension: replaces an output by its top `count` classes per row as BYTES
 * strings `<value>:<index>[:<label>]`, highest value first (ties keep index order). The result has shape
 * [rows, count] for a batched output and [count] otherwise; `count` is capped at the classes a row has.
 * Float values print with six decimals, as Triton prints them; integers as they are.
 */
export function classify(t: Tensor, output: string, c: Classification): Tensor<'BYTES'> {
  if (t.dtype === 'BYTES') throw invalidArgument(`output '${output}': classification needs a numeric output, not BYTES`);
  const values = numbersOf(t);
  const rows = c.batched ? (t.shape[0] ?? 0) : 1;
  const perRow = rows > 0 ? values.length / rows : 0;
  const count = Math.min(c.count, perRow);
  const float = t.dtype.startsWith('FP') || t.dtype === 'BF16';
  const data: Uint8Array[] = [];
  const order = Array.from({ length: perRow }, (_, i) => i);
  for (let r = 0; r < rows; r++) {
    const base = r * perRow;
    const ranked = order.slice().sort((a, b) => compare(values[base + b] as number | bigint, values[base + a] as number | bigint) || a - b);
    for (let k = 0; k < count; k++) {
      const index = ranked[k] as number;
      const v = values[base + index] as number | bigint;
      const label = c.labels?.[index];
      const text = `${float ? (v as number).toFixed(6) : String(v)}:${index}${label !== undefined ? `:${label}` : ''}`;
      data.push(Buffer.from(text, 'utf8'));
    }
  }
  return { dtype: 'BYTES', shape: c.batched ? [rows, count] : [count], data };
}

function compare(a: number | bigint, b: number | bigint): number {
  return a > b ? 1 : a < b ? -1 : 0;
}

/** Element values as numbers (bigints for 64-bit integers); FP16 and BF16 widened to float. */
function numbersOf(t: Tensor): ArrayLike<number | bigint> {
  if (t.dtype === 'FP16') return Array.from(t.data as Uint16Array, halfToFloat);
  if (t.dtype === 'BF16') return Array.from(t.data as Uint16Array, (h) => new Float32Array(new Uint32Array([h << 16]).buffer)[0] as number);
  return t.data as unknown as ArrayLike<number | bigint>;
}

function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * 2 ** -14 * (frac / 1024);
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * 2 ** (exp - 15) * (1 + frac / 1024);
}
