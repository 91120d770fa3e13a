import { Triton } from 'tstriton';
import { bindIdentity } from './model';

async function main(): Promise<void> {
  const triton = new Triton();
  bindIdentity(triton);
  process.exit(await triton.serve());
}

void main();
