import { tensor, type Tensor } from 'tstriton';
import { batch } from 'tstriton/decorators';

/** Features per request row, and scores out. */
export const FEATURES = 1024;
export const SCORES = 1024;

/**
 * `scorer`'s instance, in a worker thread: a dense layer (`scores = relu(features · W)`, a million multiply-adds a
 * row, about a millisecond on one core) in plain JavaScript, CPU-bound. The weights (4 MiB) are read once per batch:
 * each weight row is used for every row of the batch while it is in the cache, so a batch of many rows costs less
 * per row than one row alone.
 */
class Scorer {
  private readonly weights = new Float32Array(FEATURES * SCORES).map((_, i) => Math.sin(i) / FEATURES);

  @batch
  async infer(inputs: Record<string, Tensor>) {
    const x = inputs.features!.data as Float32Array;
    const rows = x.length / FEATURES;
    const out = new Float32Array(rows * SCORES);
    for (let i = 0; i < FEATURES; i++) {
      const w = this.weights.subarray(i * SCORES, (i + 1) * SCORES);
      for (let r = 0; r < rows; r++) {
        const xi = x[r * FEATURES + i]!;
        const o = r * SCORES;
        for (let j = 0; j < SCORES; j++) out[o + j]! += xi * w[j]!;
      }
    }
    for (let k = 0; k < out.length; k++) if (out[k]! < 0) out[k] = 0;
    return { scores: tensor('FP32', [rows, SCORES], out) };
  }
}

export default Scorer;
