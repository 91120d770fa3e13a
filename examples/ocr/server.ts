import { Triton } from 'tstriton';
import { bindOcr } from './model';

async function main(): Promise<void> {
  const triton = new Triton();
  bindOcr(triton);
  process.exit(await triton.serve());
}

void main();
