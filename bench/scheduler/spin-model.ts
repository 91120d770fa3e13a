/**
 * A compute-bound callable for worker instances: a fixed CPU loop per row (xorshift32, `context.data.iterations`
 * steps). INPUT0 FP32 [rows, 1] seeds each row's loop; OUTPUT0 FP32 [rows, 1] is a value derived from it.
 */
import { instanceFactory, type Request, type Response } from 'tstriton';

/** The per-row work: `iterations` xorshift32 steps; returns something that depends on every step. */
export function spin(seed: number, iterations: number): number {
  let x = (Math.imul(seed | 0, 2654435761) ^ 0x9e3779b9) >>> 0 || 1;
  let acc = 0;
  for (let i = 0; i < iterations; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    acc = (acc + (x & 1023)) | 0;
  }
  return acc;
}

export default instanceFactory((context) => {
  const { iterations } = context.data as { iterations: number };
  return (requests: Request[]): Response[] =>
    requests.map((r) => {
      const input = r.inputs.INPUT0;
      if (!input) throw new Error('INPUT0 is missing');
      const rows = input.shape[0] ?? 1;
      const seeds = input.data as Float32Array;
      const out = new Float32Array(rows);
      for (let i = 0; i < rows; i++) out[i] = spin(Math.round((seeds[i] ?? 0) * 8), iterations) % 1024;
      return { OUTPUT0: { dtype: 'FP32', shape: [rows, 1], data: out } };
    });
});
