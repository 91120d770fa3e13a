// Serves every example model on Triton's ports (HTTP 8000, gRPC 8001, metrics 8002): `npm start`.
import { Triton } from 'tstriton';
import { bindAddSub } from './add-sub/model';
import { bindIdentity } from './identity/model';
import { bindColorEnsemble } from './ensemble/model';
import { bindOcr } from './ocr/model';
import { bindStreamTokens } from './streaming/model';

async function main(): Promise<void> {
  const triton = new Triton();
  bindAddSub(triton);
  bindIdentity(triton);
  bindOcr(triton);
  bindColorEnsemble(triton);
  bindStreamTokens(triton);
  process.exit(await triton.serve());
}

void main();
