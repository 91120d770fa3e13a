// Sends vectors of many lengths to `ragged_sum` at once over both protocols with the TypeScript client:
// `node dist/examples/ragged/client.js` while `npm start` (or dist/examples/ragged/server.js) serves.
// TRITON_HTTP_URL and TRITON_GRPC_URL override the default URLs.
import { ClientError, ModelClient } from 'tstriton/client';

const URLS = [process.env.TRITON_HTTP_URL ?? 'http://localhost:8000', process.env.TRITON_GRPC_URL ?? 'grpc://localhost:8001'];

async function main(): Promise<void> {
  for (const url of URLS) {
    const client = new ModelClient(url, 'ragged_sum', { initTimeoutSeconds: 30, inferenceTimeoutSeconds: 10 });
    try {
      // Lengths 1..8 in flight together: ragged batching runs them in one execution where it can.
      const lengths = Array.from({ length: 8 }, (_, i) => i + 1);
      const sums = await Promise.all(lengths.map((n) => client.inferSample({ INPUT: Float32Array.from({ length: n }, (_, i) => i + 1) })));
      console.log(url, 'sums of 1..n for n = 1..8:', sums.map((s) => (s.SUM!.data as Float32Array)[0]));
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
