// Streams a prompt through `stream_tokens` over both protocols with the TypeScript client:
// `node dist/examples/streaming/client.js [prompt]` while `npm start` (or dist/examples/streaming/server.js)
// serves. TRITON_HTTP_URL and TRITON_GRPC_URL override the default URLs.
import { ClientError, ModelClient, type Tensor } from 'tstriton/client';

const URLS = [process.env.TRITON_HTTP_URL ?? 'http://localhost:8000', process.env.TRITON_GRPC_URL ?? 'grpc://localhost:8001'];
const PROMPT = process.argv[2] ?? 'streams arrive one token at a time from a decoupled model';

const text = (t: Tensor | undefined): string => Buffer.from((t?.data as Uint8Array[] | undefined)?.[0] ?? []).toString('utf8');

async function main(): Promise<void> {
  for (const url of URLS) {
    // Each response must come within 5 s; the whole stream may take as long as it needs.
    const client = new ModelClient(url, 'stream_tokens', { initTimeoutSeconds: 30, inferenceTimeoutSeconds: 5 });
    try {
      process.stdout.write(`${url}:`);
      for await (const response of client.stream({ PROMPT: [PROMPT] })) process.stdout.write(` ${text(response.outputs.TOKEN)}`);
      process.stdout.write('\n');

      // Leaving the loop early cancels the request on the server: the model stops producing.
      const firstThree: string[] = [];
      for await (const response of client.stream({ PROMPT: [PROMPT] })) {
        firstThree.push(text(response.outputs.TOKEN));
        if (firstThree.length === 3) break;
      }
      console.log(`${url}: stopped after`, firstThree);
    } catch (err) {
      if (!(err instanceof ClientError)) throw err;
      console.error(`\n${url} failed: ${err.code} (server status ${err.status ?? 'none'}): ${err.message}`);
      process.exitCode = 1;
    } finally {
      client.close();
    }
  }
}

void main();
