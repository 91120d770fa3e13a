/** The statistics and number formats every benchmark reports with. */

/** The median; NaN for no values. */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

/** `lo–hi` of the values, with `digits` decimals; empty for fewer than two values. */
export function range(xs: readonly number[], digits = 2): string {
  return xs.length > 1 ? `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}` : '';
}

/** Latencies (µs) of the responses in a measurement window. */
export interface LatencyStats {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  mean: number;
  max: number;
}

/** Count, nearest-rank percentiles (rounding down), mean and max; sorts `xs` in place. */
export function latencyStats(xs: number[]): LatencyStats {
  xs.sort((a, b) => a - b);
  const pick = (q: number) => xs[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? NaN;
  let sum = 0;
  for (const x of xs) sum += x;
  return { count: xs.length, p50: pick(0.5), p90: pick(0.9), p99: pick(0.99), mean: xs.length ? sum / xs.length : NaN, max: xs[xs.length - 1] ?? NaN };
}

/** A whole number with thousands separators (`12,460`). */
export const fmtInt = (x: number): string => Math.round(x).toLocaleString('en-US');
/** Microseconds, rounded; `–` when there is no figure. */
export const fmtUs = (x: number): string => (Number.isFinite(x) ? `${Math.round(x)}` : '–');
