import { Triton } from 'tstriton';
import { bindSequenceAccumulate } from './model';

async function main(): Promise<void> {
  const triton = new Triton();
  bindSequenceAccumulate(triton);
  process.exit(await triton.serve());
}

void main();
