/**
 * The functions with the most self time in V8 `.cpuprofile` files (from a benchmark's `--profile`, which runs
 * our server under `node --cpu-prof`: one file per thread), and the code areas their time goes to.
 *
 *   node dist/bench/harness/profile-top.js FILE.cpuprofile [more...] [--top N]
 */
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const readProfile = (file: string): Profile => JSON.parse(readFileSync(file, 'utf8')) as Profile;

/** Self time by function, summed over the files, as text lines: share of the busy (non-idle) time. */
export function summarizeProfiles(files: readonly string[], top = 30): string {
  const self = new Map<string, number>();
  let total = 0;
  for (const file of files) {
    const profile = readProfile(file);
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    profile.samples.forEach((id, i) => {
      const dt = profile.timeDeltas[i] ?? 0;
      const f = byId.get(id)?.callFrame;
      if (!f) return;
      const where = f.url ? `${f.url.replace(/^.*\/(node_modules|dist)\//, '$1/')}:${f.lineNumber + 1}` : '';
      const key = `${f.functionName || '(anonymous)'} ${where}`.trim();
      self.set(key, (self.get(key) ?? 0) + dt);
      total += dt;
    });
  }
  const idle = self.get('(idle)') ?? 0;
  const busy = total - idle;
  const lines = [`total ${(total / 1000).toFixed(0)} ms, idle ${((idle / total) * 100).toFixed(1)} %; shares of the busy time:`];
  for (const [k, v] of [...self].filter(([k]) => k !== '(idle)').sort((a, b) => b[1] - a[1]).slice(0, top)) {
    lines.push(`${((v / busy) * 100).toFixed(1).padStart(5)} %  ${k}`);
  }
  return `${lines.join('\n')}\n`;
}

const STARTUP = new Set(['Module._load', 'compileForInternalLoader', 'wrapSafe', 'loadExport', 'initOrt']);

/**
 * Busy time by the code responsible (start-up, i.e. module loading, left out): each sample goes to the nearest
 * frame of ours up its stack (by directory: lib/server/http, lib/scheduler, ...; bench and example code by
 * file), else to Node's own code by module, else to GC or native code. Shows which part of the server a
 * request's time goes to.
 */
export function summarizeByArea(files: readonly string[]): string {
  const areas = new Map<string, number>();
  let busy = 0;
  for (const file of files) {
    const profile = readProfile(file);
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    const areaOf = new Map<number, string>();
    const classify = (id: number): string => {
      const known = areaOf.get(id);
      if (known) return known;
      let area: string | undefined;
      let nodeArea: string | undefined;
      for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
        const frame = byId.get(cur)?.callFrame;
        // Loading modules is start-up, not serving: left out.
        if (frame && STARTUP.has(frame.functionName)) {
          areaOf.set(id, '(start-up)');
          return '(start-up)';
        }
        if (area) continue;
        const url = frame?.url ?? '';
        const m = /\/dist\/(lib\/[^/]+(?:\/[^/]+(?=\/))?|bench\/[^/]+\/[^/]+|examples\/[^/]+\/[^/]+|decorators)/.exec(url);
        if (m) area = m[1] as string;
        else if (!nodeArea && url.startsWith('node:')) nodeArea = `node: ${url.slice(5).replace(/^internal\//, '').split('/')[0]}`;
        else if (!nodeArea && url.includes('node_modules/')) nodeArea = `npm: ${url.split('node_modules/').pop()?.split('/')[0]}`;
      }
      const f = byId.get(id)?.callFrame.functionName ?? '';
      const result = area ?? nodeArea ?? (f === '(garbage collector)' || f === '(program)' || f === '(idle)' ? f : `native: ${f || '(anonymous)'}`);
      areaOf.set(id, result);
      return result;
    };
    profile.samples.forEach((id, i) => {
      const area = classify(id);
      if (area === '(idle)' || area === '(start-up)') return;
      const dt = profile.timeDeltas[i] ?? 0;
      areas.set(area, (areas.get(area) ?? 0) + dt);
      busy += dt;
    });
  }
  const lines = [`busy ${(busy / 1000).toFixed(0)} ms (start-up left out), by the nearest code responsible:`];
  for (const [k, v] of [...areas].sort((a, b) => b[1] - a[1]).slice(0, 20)) lines.push(`${((v / busy) * 100).toFixed(1).padStart(5)} %  ${k}`);
  return `${lines.join('\n')}\n`;
}

/** Where a benchmark's `--profile` run leaves the server's CPU profiles (emptied first), and the node flags that write them. */
export class CpuProfiles {
  readonly dir: string;
  /** Node arguments for the profiled child; none when profiling is off. */
  readonly nodeArgs: string[];

  constructor(bench: string, enabled: boolean) {
    this.dir = path.join(os.tmpdir(), `tstriton-bench-${bench}-prof`);
    this.nodeArgs = enabled ? ['--cpu-prof', `--cpu-prof-dir=${this.dir}`] : [];
    if (enabled) {
      rmSync(this.dir, { recursive: true, force: true });
      mkdirSync(this.dir, { recursive: true });
    }
  }

  /** Each profile's file name and top functions. */
  summaries(top: number): string {
    const files = readdirSync(this.dir).filter((f) => f.endsWith('.cpuprofile'));
    return files.map((f) => `\n${f}\n${summarizeProfiles([path.join(this.dir, f)], top)}`).join('');
  }
}

if (require.main === module) {
  const { values, positionals } = parseArgs({ options: { top: { type: 'string' } }, allowPositionals: true });
  // A trailing count (`profile-top FILE 40`) is the --top of the older form.
  const last = positionals[positionals.length - 1];
  const count = last !== undefined && /^\d+$/.test(last) ? positionals.pop() : undefined;
  const top = Number(values.top ?? count ?? 30);
  if (positionals.length === 0 || !(top > 0)) {
    process.stderr.write('usage: profile-top FILE.cpuprofile [more...] [--top N]\n');
    process.exit(1);
  }
  process.stdout.write(summarizeProfiles(positionals, top));
  process.stdout.write(summarizeByArea(positionals));
}
