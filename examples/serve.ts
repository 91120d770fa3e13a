// Serves every example model on Triton's ports (HTTP 8000, with the OpenAI-compatible API under /v1; gRPC 8001; metrics 8002): `npm start`.
import { Triton, capMallocArenas } from 'tstriton';
import { bindAddSub } from './add-sub/model';
import { bindIdentity } from './identity/model';
import { bindColorEnsemble } from './ensemble/model';
import { bindOcr } from './ocr/model';
import { bindStreamTokens } from './streaming/model';
import { bindEmbedText } from './response-cache/model';
import { bindSequenceAccumulate } from './sequence/model';
import { bindRaggedSum } from './ragged/model';
import { bindEchoChat } from './chat/model';

/** The response cache `embed_text` uses, unless TSTRITON_RESPONSE_CACHE_BYTE_SIZE says otherwise. */
const CACHE_BYTES = 16 * 1024 * 1024;

async function main(): Promise<void> {
  // Under glibc's arena cap unless the environment sets one: restarts the process in place, before it serves.
  capMallocArenas();
  const triton = new Triton({
    ...(!process.env.TSTRITON_RESPONSE_CACHE_BYTE_SIZE && { responseCacheByteSize: CACHE_BYTES }),
    // The OpenAI-compatible API (/v1/...) on the HTTP port, unless TSTRITON_OPENAI says otherwise.
    ...(!process.env.TSTRITON_OPENAI && { openai: true }),
  });
  bindAddSub(triton);
  bindIdentity(triton);
  bindOcr(triton);
  bindColorEnsemble(triton);
  bindStreamTokens(triton);
  bindEmbedText(triton);
  bindSequenceAccumulate(triton);
  bindRaggedSum(triton);
  bindEchoChat(triton);
  process.exit(await triton.serve());
}

void main();
