import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// capMallocArenas() in a real process: an entry script that calls it first restarts once, in place, under
// MALLOC_ARENA_MAX=2, with its arguments and node's flags; where the environment sets the cap it runs once as it is.
// (tstriton serve's own restart is in cli-start.test.ts.)
jest.setTimeout(60_000);

const ROOT = join(__dirname, '..', '..');

let dir: string;
let runs = 0;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tstriton-arenas-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

interface Seen {
  pid: number;
  arenas: string | undefined;
  argv: string[];
  execArgv: string[];
}

/**
 * Runs an entry script that notes each start in a file, calls capMallocArenas, then prints what it runs with;
 * resolves with the starts, what it printed and the pid node was started as.
 */
function entry(env: NodeJS.ProcessEnv): { starts: number; seen: Seen[]; pid: number | undefined; status: number | null; stderr: string } {
  const starts = join(dir, `starts-${++runs}`);
  const script = join(dir, 'entry.js');
  writeFileSync(
    script,
    [
      `require(${JSON.stringify(join(ROOT, 'lib/instances/worker/register-ts.js'))});`,
      `require('node:fs').appendFileSync(${JSON.stringify(starts)}, 'start\\n');`,
      `require(${JSON.stringify(join(ROOT, 'lib/base/malloc-arenas.ts'))}).capMallocArenas();`,
      'console.log(JSON.stringify({ pid: process.pid, arenas: process.env.MALLOC_ARENA_MAX, argv: process.argv.slice(2), execArgv: process.execArgv }));',
    ].join('\n'),
  );
  const { MALLOC_ARENA_MAX: _a, GLIBC_TUNABLES: _t, ...base } = process.env;
  const run = spawnSync(process.execPath, ['--max-old-space-size=200', script, 'one', 'two words'], { env: { ...base, ...env }, encoding: 'utf8', timeout: 45_000 });
  const lines = run.stdout.split('\n').filter((l) => l !== '');
  return {
    starts: readFileSync(starts, 'utf8').split('\n').filter((l) => l === 'start').length,
    seen: lines.map((l) => JSON.parse(l) as Seen),
    pid: run.pid,
    status: run.status,
    stderr: run.stderr,
  };
}

const onGlibcLinux = process.platform === 'linux' && (process.report.getReport() as { header: { glibcVersionRuntime?: string } }).header.glibcVersionRuntime !== undefined;

(onGlibcLinux ? describe : describe.skip)('capMallocArenas', () => {
  it('with no cap set: starts twice in the same process, the second time under MALLOC_ARENA_MAX=2 with the same arguments and flags', () => {
    const run = entry({});
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.starts).toBe(2);
    expect(run.seen).toEqual([{ pid: run.pid, arenas: '2', argv: ['one', 'two words'], execArgv: ['--max-old-space-size=200'] }]);
  });

  it('with MALLOC_ARENA_MAX or the glibc tunable set: starts once, with the value given', () => {
    const given = entry({ MALLOC_ARENA_MAX: '5' });
    expect(given.status).toBe(0);
    expect(given.starts).toBe(1);
    expect(given.seen).toEqual([{ pid: given.pid, arenas: '5', argv: ['one', 'two words'], execArgv: ['--max-old-space-size=200'] }]);
    const tunable = entry({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=3' });
    expect(tunable.starts).toBe(1);
    expect(tunable.seen.map((s) => s.arenas)).toEqual([undefined]);
  });
});
