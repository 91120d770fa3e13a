// Classifies images by colour through `color_ensemble`: `node dist/examples/ensemble/client.js IMAGE...`
// while `npm start` serves (TRITON_URL overrides http://localhost:8000).
import { readFileSync } from 'node:fs';
import { ModelClient, tensor } from 'tstriton/client';

async function main(): Promise<void> {
  const files = process.argv.slice(2);
  const client = new ModelClient(process.env.TRITON_URL ?? 'http://localhost:8000', 'color_ensemble', { initTimeoutSeconds: 30 });
  try {
    // One request carrying every image as a batch: each row is one encoded image.
    const images = files.map((f) => readFileSync(f));
    const out = await client.inferBatch({ IMAGE: tensor('BYTES', [images.length, 1], images) });
    const labels = (out.LABEL!.data as Uint8Array[]).map((l) => Buffer.from(l).toString());
    files.forEach((f, i) => console.log(`${f}: ${labels[i]} (${(out.SCORE!.data as Float32Array)[i]!.toFixed(3)})`));
  } finally {
    client.close();
  }
}

void main();
