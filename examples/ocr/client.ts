// Reads the text in images through the served `ocr` pipeline: `node dist/examples/ocr/client.js IMAGE...`
// while `npm start` serves (TRITON_URL overrides http://localhost:8000; grpc://host:8001 works as well).
import { readFileSync } from 'node:fs';
import { ClientError, ModelClient, tensor } from 'tstriton/client';

async function main(): Promise<void> {
  const files = process.argv.slice(2);
  if (files.length === 0) {
    console.error('usage: node dist/examples/ocr/client.js IMAGE.png [IMAGE.jpg ...]');
    process.exitCode = 2;
    return;
  }
  const client = new ModelClient(process.env.TRITON_URL ?? 'http://localhost:8000', 'ocr', { initTimeoutSeconds: 30 });
  try {
    for (const file of files) {
      // `ocr` does not batch (max_batch_size 0): IMAGE is one encoded image, shape [1].
      const out = await client.inferSample({ IMAGE: tensor('BYTES', [1], [readFileSync(file)]) });
      const texts = (out.TEXTS!.data as Uint8Array[]).map((t) => Buffer.from(t).toString('utf8'));
      const boxes = out.BOXES!.data as Float32Array;
      console.log(`${file}: ${texts.length} region(s)`);
      texts.forEach((t, i) => console.log(`  [${Array.from(boxes.subarray(i * 4, i * 4 + 4)).join(', ')}] ${t}`));
    }
  } catch (err) {
    if (!(err instanceof ClientError)) throw err;
    console.error(`failed: ${err.code}: ${err.message}`);
    process.exitCode = 1;
  } finally {
    client.close();
  }
}

void main();
