// Serves `echo_chat` and `embed_text` over the OpenAI-compatible API on the HTTP port (8000) and KServe v2:
// `node dist/examples/chat/server.js`.
import { Triton } from 'tstriton';
import { bindEchoChat } from './model';
import { bindEmbedText } from '../response-cache/model';

async function main(): Promise<void> {
  const triton = new Triton({ openai: true, responseCacheByteSize: 16 * 1024 * 1024 });
  bindEchoChat(triton);
  bindEmbedText(triton);
  process.exit(await triton.serve());
}

void main();
