import { Triton } from 'tstriton';
import { bindRaggedSum } from './model';

async function main(): Promise<void> {
  const triton = new Triton();
  bindRaggedSum(triton);
  process.exit(await triton.serve());
}

void main();
