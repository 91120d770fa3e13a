/**
 * The blocks of docs/performance.md: each benchmark owns the text between its `<!-- <key>:start -->` and
 * `<!-- <key>:end -->` markers and rewrites it on every run; the rest of the file is left as it is.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { repoRoot } from './repo-root';

const NEW_DOC = '# Performance\n\nMeasured performance of tstriton, each section written by its benchmark script; rerun the script to refresh its section.\n';

/** The block `body` makes under `key`, markers included. */
export function docBlock(key: string, body: string): string {
  return `<!-- ${key}:start -->\n${body.replace(/\n+$/, '')}\n<!-- ${key}:end -->`;
}

/** Replaces the `key` block (markers kept) in docs/`page` (performance.md by default), or appends it; returns the file's path. */
export function writeDocBlock(key: string, body: string, page = 'performance.md'): string {
  const doc = path.join(repoRoot(), 'docs', page);
  const start = `<!-- ${key}:start -->`;
  const end = `<!-- ${key}:end -->`;
  mkdirSync(path.dirname(doc), { recursive: true });
  let text = existsSync(doc) ? readFileSync(doc, 'utf8') : NEW_DOC;
  const s = text.indexOf(start);
  const e = text.indexOf(end);
  if (s >= 0 && e > s) text = text.slice(0, s) + docBlock(key, body) + text.slice(e + end.length);
  else text = `${text.replace(/\n*$/, '\n')}\n${docBlock(key, body)}\n`;
  writeFileSync(doc, text);
  return doc;
}

/** The machine a run measured: CPU model, CPU count, Node and OS. */
export function machine(): string {
  const cpu = os.cpus()[0]?.model.trim() ?? 'unknown CPU';
  return `${cpu}, nproc ${os.availableParallelism()}, Node ${process.version}, ${os.type()} ${os.release()}`;
}

/** The date to the second, in UTC. */
export function isoDate(d: Date): string {
  return d.toISOString().replace(/\.\d+Z$/, 'Z');
}

/** Where a block's figures come from. */
export interface Provenance {
  startedAt: Date;
  /** How the run was started, e.g. `node dist/bench/grpc/run.js`. */
  command: string;
  /** The script and anything said beside it, e.g. `bench/onnx/run.ts, 127 s`. */
  source: string;
  /** 1-minute load average before and after the run. */
  loads: [number, number];
  /** What the load average means, in parentheses at the end of the second line. */
  loadNote: string;
}

/** The two lines that open every block: when, by what and on what it was measured, and how busy the machine was. */
export function provenanceLines(p: Provenance): string[] {
  return [
    `Measured ${isoDate(p.startedAt)} by \`${p.command}\` (${p.source}) on ${machine()};`,
    `1-minute load average ${p.loads[0].toFixed(1)} before the run and ${p.loads[1].toFixed(1)} after it (${p.loadNote}).`,
  ];
}
