import { Triton } from 'tstriton';
import { bindAddSub } from './model';

async function main(): Promise<void> {
  const triton = new Triton();
  bindAddSub(triton);
  process.exit(await triton.serve());
}

void main();
