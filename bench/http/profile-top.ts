/**
 * Prints the functions with the most self time in a V8 `.cpuprofile` (from `npm run bench:http -- --profile`).
 *
 *   node dist/bench/http/profile-top.js /tmp/tstriton-bench-http-prof/CPU.*.cpuprofile [count]
 */
import { readFileSync } from 'node:fs';

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

const [file, countArg] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: profile-top <file.cpuprofile> [count]\n');
  process.exit(1);
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map<string, number>();
let total = 0;
profile.samples.forEach((id, i) => {
  const dt = profile.timeDeltas[i] ?? 0;
  const n = byId.get(id);
  if (!n) return;
  const f = n.callFrame;
  const where = f.url ? `${f.url.replace(/^.*\/(node_modules|dist)\//, '$1/')}:${f.lineNumber + 1}` : '';
  const key = `${f.functionName || '(anonymous)'} ${where}`.trim();
  self.set(key, (self.get(key) ?? 0) + dt);
  total += dt;
});
const idle = self.get('(idle)') ?? 0;
process.stdout.write(`total ${(total / 1000).toFixed(0)} ms, idle ${((idle / total) * 100).toFixed(1)} %\n`);
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(countArg ?? 30))) {
  process.stdout.write(`${((v / total) * 100).toFixed(1).padStart(5)} %  ${k}\n`);
}
