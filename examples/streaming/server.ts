import { Triton } from 'tstriton';
import { bindStreamTokens } from './model';

async function main(): Promise<void> {
  const triton = new Triton();
  bindStreamTokens(triton);
  process.exit(await triton.serve());
}

void main();
