import { tensor, type Tensor, type Triton } from 'tstriton';
import { batch } from 'tstriton/decorators';

/** Width of the embedding. */
export const EMBEDDING_DIM = 64;

/**
 * A feature-hashing text embedding: each lower-cased word adds ±1 to one of `EMBEDDING_DIM` buckets (FNV-1a
 * of the word picks the bucket and the sign), and the vector is scaled to unit length. Deterministic: the
 * same text always gives the same vector, which is what a cached model must be.
 */
export function embed(text: string): Float32Array {
  const v = new Float32Array(EMBEDDING_DIM);
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    let h = 0x811c9dc5;
    for (let i = 0; i < word.length; i++) h = Math.imul(h ^ word.charCodeAt(i), 0x01000193) >>> 0;
    v[h % EMBEDDING_DIM]! += h & 0x80000000 ? -1 : 1;
  }
  let norm = 0;
  for (const x of v) norm += x * x;
  if (norm > 0) for (let i = 0; i < v.length; i++) v[i]! /= Math.sqrt(norm);
  return v;
}

/** `embed_text`: TEXT (BYTES, one string per row) → EMBEDDING (FP32 [64]), with the response cache on. */
export function bindEmbedText(triton: Triton): void {
  triton.bind({
    modelName: 'embed_text',
    inferFunc: batch(async (inputs: Record<string, Tensor>) => {
      const texts = inputs.TEXT!.data as Uint8Array[];
      const out = new Float32Array(texts.length * EMBEDDING_DIM);
      texts.forEach((t, i) => out.set(embed(Buffer.from(t.buffer, t.byteOffset, t.byteLength).toString('utf8')), i * EMBEDDING_DIM));
      return { EMBEDDING: tensor('FP32', [texts.length, EMBEDDING_DIM], out) };
    }),
    inputs: [{ name: 'TEXT', dtype: 'BYTES', shape: [1] }],
    outputs: [{ name: 'EMBEDDING', dtype: 'FP32', shape: [EMBEDDING_DIM] }],
    config: { maxBatchSize: 32, responseCache: true },
    strict: true,
  });
}
