// Runs two interleaved sequences on `sequence_accumulate` over both protocols with the TypeScript client:
// `node dist/examples/sequence/client.js` while `npm start` (or dist/examples/sequence/server.js) serves.
// TRITON_HTTP_URL and TRITON_GRPC_URL override the default URLs.
import { ClientError, ModelClient } from 'tstriton/client';

const URLS = [process.env.TRITON_HTTP_URL ?? 'http://localhost:8000', process.env.TRITON_GRPC_URL ?? 'grpc://localhost:8001'];

async function main(): Promise<void> {
  for (const url of URLS) {
    const client = new ModelClient(url, 'sequence_accumulate', { initTimeoutSeconds: 30, inferenceTimeoutSeconds: 10 });
    try {
      // Sequence ids are Triton's request parameters; an integer and a string id, their requests interleaved.
      const sequences: [number | string, number[]][] = [
        [1001, [1, 2, 3]],
        [`walk-${url.slice(0, 4)}`, [10, 20, 30]],
      ];
      for (let i = 0; i < 3; i++) {
        for (const [id, values] of sequences) {
          const parameters = { sequence_id: id, sequence_start: i === 0, sequence_end: i === values.length - 1 };
          const out = await client.inferSample({ INPUT: Int32Array.of(values[i]!) }, { parameters });
          console.log(url, 'sequence', id, 'running sum', (out.OUTPUT!.data as Int32Array)[0]);
        }
      }
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
