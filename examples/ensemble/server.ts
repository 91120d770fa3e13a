import { Triton } from 'tstriton';
import { bindColorEnsemble } from './model';

async function main(): Promise<void> {
  const triton = new Triton();
  bindColorEnsemble(triton);
  process.exit(await triton.serve());
}

void main();
