// Calls `add_sub` over both protocols with the TypeScript client: `node dist/examples/add-sub/client.js`
// while `npm start` (or dist/examples/add-sub/server.js) serves. TRITON_HTTP_URL and TRITON_GRPC_URL
// override the default URLs.
import { ClientError, ModelClient, tensor } from 'tstriton/client';

const URLS = [process.env.TRITON_HTTP_URL ?? 'http://localhost:8000', process.env.TRITON_GRPC_URL ?? 'grpc://localhost:8001'];

async function main(): Promise<void> {
  for (const url of URLS) {
    const client = new ModelClient(url, 'add_sub', { initTimeoutSeconds: 30, inferenceTimeoutSeconds: 10 });
    try {
      // One sample: the client adds the batch dimension and removes it from the outputs.
      const sample = await client.inferSample({ a: Float32Array.of(1, 2, 3, 4), b: Float32Array.of(1, 1, 1, 1) });
      console.log(url, 'sample add', Array.from(sample.add!.data as Float32Array), 'sub', Array.from(sample.sub!.data as Float32Array));

      // A batch of two rows, inputs by position (the model's order: a, b), only the `sub` output.
      const a = tensor('FP32', [2, 3], Float32Array.of(1, 2, 3, 4, 5, 6));
      const b = tensor('FP32', [2, 3], Float32Array.of(6, 5, 4, 3, 2, 1));
      const batch = await client.inferBatch([a, b], { outputs: ['sub'] });
      console.log(url, 'batch sub', batch.sub!.shape, Array.from(batch.sub!.data as Float32Array));
    } catch (err) {
      if (!(err instanceof ClientError)) throw err;
      console.error(url, `failed: ${err.code} (server status ${err.status ?? 'none'}): ${err.message}`);
      process.exitCode = 1;
    } finally {
      client.close();
    }
  }
}

void main();
