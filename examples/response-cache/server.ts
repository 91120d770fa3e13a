// Serves `embed_text` with a 16 MiB response cache: `node dist/examples/response-cache/server.js`.
import { Triton } from 'tstriton';
import { bindEmbedText } from './model';

async function main(): Promise<void> {
  const triton = new Triton({ responseCacheByteSize: 16 * 1024 * 1024 });
  bindEmbedText(triton);
  process.exit(await triton.serve());
}

void main();
