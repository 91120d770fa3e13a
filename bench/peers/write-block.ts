/**
 * Writes the peers block of docs/performance.md for bench/peers/run.py, through the same harness as the other
 * benches (bench/harness/doc-block.ts): the block's title, the provenance lines, then the body run.py made.
 *
 *   node dist/bench/peers/write-block.js [--print] [--block KEY] [--page PAGE] < block.json
 *
 * block.json: `{ title, startedAt, command, source, loads: [before, after], loadNote, body, level? }`; `level` is the
 * title's heading level (2 by default; a block inside a section of its page takes 3). With `--print` the
 * block goes to stdout and the file is left as it is. `--block` names the block (default `peers`; bench/peers/floor.py
 * writes `peers-floor`); `--page` the page of docs/ (default performance.md; bench/perf/compare.py writes perf.md).
 */
import { readFileSync } from 'node:fs';
import { docBlock, provenanceLines, writeDocBlock } from '../harness/doc-block';

/** What run.py sends on stdin. */
interface PeersBlock {
  title: string;
  startedAt: string;
  command: string;
  source: string;
  loads: [number, number];
  loadNote: string;
  body: string;
  level?: number;
}

function main(): void {
  const input = JSON.parse(readFileSync(0, 'utf8')) as PeersBlock;
  const text = [
    `${'#'.repeat(input.level ?? 2)} ${input.title}`,
    '',
    ...provenanceLines({
      startedAt: new Date(input.startedAt),
      command: input.command,
      source: input.source,
      loads: input.loads,
      loadNote: input.loadNote,
    }),
    '',
    input.body,
  ].join('\n');
  const at = process.argv.indexOf('--block');
  const key = at >= 0 ? (process.argv[at + 1] ?? 'peers') : 'peers';
  const pageAt = process.argv.indexOf('--page');
  const page = pageAt >= 0 ? process.argv[pageAt + 1] : undefined;
  if (process.argv.includes('--print')) process.stdout.write(`${docBlock(key, text)}\n`);
  else process.stdout.write(`${writeDocBlock(key, text, page)}\n`);
}

main();
