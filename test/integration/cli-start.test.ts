import { spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, copyFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect, type Server as NetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { FLAGS } from '../../lib/cli/flags';
import { FLAG_SECTIONS } from '../../lib/cli/help';
import { spawnTracked } from '../helpers/resources';

// How `tstriton serve` starts and fails to start, in a process of its own as a user runs it: Triton's flags
// (--exit-on-error, --disable-auto-complete-config, --backend-config, --log-format, --model-load-thread-count),
// what it prints while it starts (the "Started ... at" lines, the model table, the load times) and what a failed
// start says. Every server listens on port 0.
// Each test runs one or two server processes, each up to 30-35 s to start on a busy 2-core machine.
jest.setTimeout(150_000);

const ROOT = join(__dirname, '..', '..');
const CLI = ['--require', join(ROOT, 'lib/instances/worker/register-ts.js'), join(ROOT, 'lib/cli/main.ts')];
const ONNX = join(ROOT, 'test/fixtures/onnx/identity_fp32.onnx');
const PORTS = ['--http-address', '127.0.0.1', '--http-port', '0', '--grpc-port', '0', '--metrics-port', '0'];

/** A `tstriton` process: its stdout lines as they come, its stderr, and its exit. */
interface Cli {
  child: ChildProcess;
  lines: string[];
  stderr: () => string;
  exited: Promise<number | null>;
  /** Resolves with the first line `match` takes; rejects if the process exits first. */
  line: (match: (line: string) => boolean) => Promise<string>;
}

function cli(args: readonly string[], env: NodeJS.ProcessEnv = {}): Cli {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TSTRITON_')));
  const child = spawnTracked(process.execPath, [...CLI, ...args], { cwd: ROOT, env: { ...clean, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const waiters: (() => void)[] = [];
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  const closed = new Promise<void>((resolve) => child.stdout?.once('close', resolve));
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (l) => {
    lines.push(l);
    for (const w of waiters) w();
  });
  // The exit, once every line before it has been read.
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => void closed.then(() => resolve(code))));
  const line = (match: (l: string) => boolean) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const found = lines.find(match);
        if (found !== undefined) resolve(found);
      };
      waiters.push(check);
      check();
      void exited.then((code) => {
        check();
        reject(new Error(`tstriton exited with ${code} before the line: ${stderr}\n${lines.join('\n')}`));
      });
    });
  return { child, lines, stderr: () => stderr, exited, line };
}

type Entry = Record<string, unknown> & { msg?: string };
const json = (lines: readonly string[]): Entry[] => lines.map((l) => JSON.parse(l) as Entry);
const isServing = (l: string) => l.includes('"msg":"serving"');

/** Stops a server with SIGTERM and expects it to exit 0. */
async function stop(server: Cli): Promise<void> {
  server.child.kill('SIGTERM');
  expect(await server.exited).toBe(0);
}

/**
 * Runs `tstriton serve` until it exits or serves; one that serves is stopped, and the test fails on `served`
 * (a start that should have failed).
 */
async function failedStart(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stderr: string; lines: string[]; served: boolean }> {
  const run = cli(['serve', ...args, ...PORTS], env);
  const served = await Promise.race([run.line(isServing).then(() => true), run.exited.then(() => false)]).catch(() => false);
  if (served) run.child.kill('SIGTERM');
  const code = await run.exited;
  return { code, stderr: run.stderr(), lines: run.lines, served };
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tstriton-start-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** `<repo>/<name>/<version>/model.onnx` for each version, with `config` as its config.pbtxt when given. */
function onnxModel(repo: string, name: string, versions: readonly number[], config?: string): void {
  for (const v of versions) {
    mkdirSync(join(repo, name, String(v)), { recursive: true });
    copyFileSync(ONNX, join(repo, name, String(v), 'model.onnx'));
  }
  if (config !== undefined) writeFileSync(join(repo, name, 'config.pbtxt'), config);
}

/** A tstriton (script) model whose load runs `initialize` (the body of an async function of `args`). */
function scriptModel(repo: string, name: string, initialize: string): void {
  mkdirSync(join(repo, name, '1'), { recursive: true });
  writeFileSync(
    join(repo, name, 'config.pbtxt'),
    'backend: "tstriton"\ninput [ { name: "x" data_type: TYPE_FP32 dims: [ -1 ] } ]\noutput [ { name: "y" data_type: TYPE_FP32 dims: [ -1 ] } ]\n',
  );
  writeFileSync(
    join(repo, name, '1', 'model.js'),
    [
      "const fs = require('fs');",
      "const path = require('path');",
      'module.exports = class Model {',
      `  async initialize(args) { ${initialize} }`,
      '  execute(requests) { return requests.map((r) => ({ y: { shape: r.inputs.x.shape, data: r.inputs.x.data } })); }',
      '};',
    ].join('\n'),
  );
}

const BROKEN_CONFIG = 'bogus_field: 1\n';

describe('--exit-on-error', () => {
  it('by default, a model that does not load stops the start: exit 1 with the model and its reason, and no "stopped" line with code 0', async () => {
    onnxModel(dir, 'ident', [1]);
    onnxModel(dir, 'broken', [1], BROKEN_CONFIG);
    const { code, stderr, lines, served } = await failedStart(['--model-repository', dir]);
    expect(served).toBe(false);
    expect(code).toBe(1);
    expect(stderr).toMatch(/^tstriton: a model failed to load, and exit-on-error stops the start: 'broken': .*config\.pbtxt:1:1: unknown field 'bogus_field'/);
    const entries = json(lines);
    expect(entries.find((e) => e.msg === 'failed to start')).toMatchObject({ exitCode: 1, err: expect.stringContaining("'broken'") });
    expect(entries.find((e) => e.msg === 'stopped')).toMatchObject({ exitCode: 1 });
    expect(lines.join('\n')).not.toContain('"exitCode":0');
    // The table says which model failed and why, and that the other loaded.
    const table = entries.find((e) => e.msg === 'models')?.models as Entry[];
    expect(table).toEqual([
      { name: 'broken', version: '', state: 'UNAVAILABLE', reason: expect.stringContaining("unknown field 'bogus_field'") },
      { name: 'ident', version: '1', state: 'READY' },
    ]);
  });

  it('with --exit-on-error=false, serves the models that loaded, not ready, the others listed with their reason', async () => {
    onnxModel(dir, 'ident', [1]);
    onnxModel(dir, 'broken', [1], BROKEN_CONFIG);
    const server = cli(['serve', '--model-repository', dir, '--exit-on-error=false', ...PORTS]);
    try {
      const serving = JSON.parse(await server.line(isServing)) as Entry & { ports: { http: number } };
      expect(serving).toMatchObject({ ready: false, models: [{ name: 'ident', version: '1' }], unavailable: ['broken'] });
      const base = `http://127.0.0.1:${serving.ports.http}`;
      expect((await fetch(`${base}/v2/health/ready`)).status).toBe(400);
      const body = { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) }] };
      expect((await fetch(`${base}/v2/models/ident/infer`, { method: 'POST', body: JSON.stringify(body) })).status).toBe(200);
      const index = (await (await fetch(`${base}/v2/repository/index`, { method: 'POST' })).json()) as Entry[];
      expect(index.find((e) => e.name === 'broken')).toMatchObject({ state: 'UNAVAILABLE', reason: expect.stringContaining("unknown field 'bogus_field'") });
    } finally {
      await stop(server);
    }
  });
});

describe('a start that fails', () => {
  let busy: NetServer;
  afterEach(() => new Promise<void>((resolve) => busy.close(() => resolve())));

  it('says why and exits with the code it logged (a port in use)', async () => {
    busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const port = (busy.address() as { port: number }).port;
    const run = cli(['serve', ONNX, '--http-address', '127.0.0.1', '--http-port', String(port), '--grpc-port', '0', '--metrics-port', '0']);
    const code = await run.exited;
    expect(code).toBe(1);
    expect(run.stderr()).toMatch(/^tstriton: .*EADDRINUSE/);
    const entries = json(run.lines);
    expect(entries.find((e) => e.msg === 'failed to start')).toMatchObject({ exitCode: 1, err: expect.stringContaining('EADDRINUSE') });
    expect(entries.filter((e) => e.msg === 'stopped')).toEqual([expect.objectContaining({ exitCode: 1 })]);
  });
});

describe('--disable-auto-complete-config', () => {
  it('refuses a model without a complete config, with the reason; --strict-model-config is its older name; without either the model loads', async () => {
    onnxModel(dir, 'ident', [1]);
    for (const flag of ['--disable-auto-complete-config', '--strict-model-config']) {
      const { code, stderr, served } = await failedStart(['--model-repository', dir, flag]);
      expect(served).toBe(false);
      expect(code).toBe(1);
      expect(stderr).toContain("'ident': model 'ident' (");
      expect(stderr).toContain('config.pbtxt is missing, and auto-complete is disabled (--disable-auto-complete-config or --strict-model-config), so the model needs one');
    }
    const server = cli(['serve', '--model-repository', dir, ...PORTS]);
    try {
      const serving = JSON.parse(await server.line(isServing)) as Entry;
      expect(serving).toMatchObject({ ready: true, models: [{ name: 'ident', version: '1' }] });
    } finally {
      await stop(server);
    }
  });
});

describe('--backend-config=onnxruntime,default-max-batch-size=8', () => {
  const ENSEMBLE = [
    'platform: "ensemble"',
    'max_batch_size: 8',
    'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]',
    'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]',
    'ensemble_scheduling { step [ { model_name: "ident" model_version: -1 input_map { key: "INPUT0" value: "INPUT0" } output_map { key: "OUTPUT0" value: "OUTPUT0" } } ] }',
    '',
  ].join('\n');

  it('gives an auto-completed ONNX step max_batch_size 8, so the ensemble with max_batch_size 8 over it loads; without it, it does not', async () => {
    onnxModel(dir, 'ident', [1]);
    mkdirSync(join(dir, 'pipeline', '1'), { recursive: true });
    writeFileSync(join(dir, 'pipeline', 'config.pbtxt'), ENSEMBLE);

    const without = await failedStart(['--model-repository', dir]);
    expect(without.served).toBe(false);
    expect(without.code).toBe(1);
    expect(without.stderr).toContain("'pipeline': ");
    expect(without.stderr).toContain("takes batches of at most 4, less than the ensemble's max_batch_size 8");

    const server = cli(['serve', '--model-repository', dir, '--backend-config=onnxruntime,default-max-batch-size=8', ...PORTS]);
    try {
      const serving = JSON.parse(await server.line(isServing)) as Entry & { ports: { http: number } };
      expect(serving).toMatchObject({ ready: true });
      const base = `http://127.0.0.1:${serving.ports.http}`;
      expect(((await (await fetch(`${base}/v2/models/ident/config`)).json()) as { max_batch_size: number }).max_batch_size).toBe(8);
      const data = Array.from({ length: 8 * 16 }, (_, i) => i);
      const res = await fetch(`${base}/v2/models/pipeline/infer`, { method: 'POST', body: JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [8, 16], data }] }) });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { outputs: { shape: number[]; data: number[] }[] }).outputs[0]).toMatchObject({ shape: [8, 16], data });
    } finally {
      await stop(server);
    }
  });
});

describe('--model-load-thread-count', () => {
  // Each model's load waits (up to 4 s) until both models have begun to load, and writes how many it saw.
  const BARRIER = [
    "fs.writeFileSync(path.join(args.modelRepository, 'started'), '');",
    'const root = path.dirname(args.modelRepository);',
    "const seen = () => ['a', 'b'].filter((m) => fs.existsSync(path.join(root, m, 'started'))).length;",
    'const until = Date.now() + 4000;',
    'while (seen() < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));',
    "fs.writeFileSync(path.join(args.modelRepository, 'seen'), String(seen()));",
  ].join(' ');
  const seen = (name: string) => readFileSync(join(dir, name, 'seen'), 'utf8');

  it.each([
    [2, ['2', '2']],
    [1, ['1', '2']],
  ])('with %i, loads that many models at once', async (count, expected) => {
    scriptModel(dir, 'a', BARRIER);
    scriptModel(dir, 'b', BARRIER);
    const server = cli(['serve', '--model-repository', dir, '--model-load-thread-count', String(count), ...PORTS]);
    try {
      expect(JSON.parse(await server.line(isServing))).toMatchObject({ ready: true });
      // One at a time, the first to load sees only itself; the second sees both.
      expect([seen('a'), seen('b')].sort()).toEqual(expected);
    } finally {
      await stop(server);
    }
  });
});

describe('start-up output', () => {
  /** Two versions of an ONNX model, and a model whose load takes 6 s. */
  function repository(): void {
    onnxModel(dir, 'ident', [1, 2], 'version_policy: { all: {} }\n');
    scriptModel(dir, 'slow', 'await new Promise((r) => setTimeout(r, 6000));');
  }

  it('--log-format default: the "Started ... at" lines with the bound ports, load times and progress, and the model table, one row per version', async () => {
    repository();
    const server = cli(['serve', '--model-repository', dir, '--log-format', 'default', ...PORTS]);
    try {
      const head = String.raw`^I\d{4} \d\d:\d\d:\d\d\.\d{3} \d+\] `;
      await server.line((l) => /\] serving 3 model versions$/.test(l));
      const started = (service: string, address: string) => {
        const line = server.lines.find((l) => new RegExp(`${head}Started ${service} at ${address.replace(/\./g, '\\.')}:(\\d+)$`).test(l));
        expect(line).toBeDefined();
        return Number(/:(\d+)$/.exec(line as string)?.[1]);
      };
      const http = started('HTTPService', '127.0.0.1');
      const grpc = started('GRPCInferenceService', '0.0.0.0');
      const metrics = started('Metrics Service', '0.0.0.0');
      // The ports are the ones bound (port 0 resolved): each answers.
      expect((await fetch(`http://127.0.0.1:${http}/v2/health/ready`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${metrics}/metrics`)).status).toBe(200);
      const socket = connect(grpc, '127.0.0.1');
      await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
      socket.destroy();
      const text = server.lines.join('\n');
      expect(text).toMatch(new RegExp(`${head}successfully loaded 'ident' versions 1, 2 in \\d+ ms$`, 'm'));
      expect(text).toMatch(new RegExp(`${head}still loading 'slow' version 1 \\(\\d+ s\\)$`, 'm'));
      expect(text).toMatch(new RegExp(`${head}successfully loaded 'slow' version 1 in \\d+ ms$`, 'm'));
      expect(text).toMatch(/^\| Model +\| Version \| Status +\| Reason +\|$/m);
      expect(text).toMatch(/^\| ident +\| 1 +\| READY +\| +\|$/m);
      expect(text).toMatch(/^\| ident +\| 2 +\| READY +\| +\|$/m);
      expect(text).toMatch(/^\| slow +\| 1 +\| READY +\| +\|$/m);
      expect(text).not.toMatch(/^\{/m);
    } finally {
      await stop(server);
    }
  });

  // A terminal for the server's stdout: util-linux's `script` runs it on a pseudo-terminal.
  const hasScript = spawnSync('script', ['--version']).status === 0;
  (hasScript ? it : it.skip)('on a terminal, without --log-format: the plain lines, with the "Started ... at" lines and the model table', async () => {
    onnxModel(dir, 'ident', [1, 2], 'version_policy: { all: {} }\n');
    const command = [process.execPath, ...CLI, 'serve', '--model-repository', dir, ...PORTS].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TSTRITON_')));
    const terminal = spawnTracked('script', ['-qfec', command, '/dev/null'], { cwd: ROOT, env: clean, stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    terminal.stdout?.on('data', (c: Buffer) => (text += c.toString().replace(/\r/g, '')));
    const exited = new Promise<void>((resolve) => terminal.once('exit', () => resolve()));
    try {
      await Promise.race([
        new Promise<void>((resolve) => terminal.stdout?.on('data', () => /\] serving 2 model versions$/m.test(text) && resolve())),
        exited.then(() => Promise.reject(new Error(`the server exited before serving: ${text}`))),
      ]);
      const head = String.raw`^I\d{4} \d\d:\d\d:\d\d\.\d{3} \d+\] `;
      expect(text).toMatch(new RegExp(`${head}Started HTTPService at 127\\.0\\.0\\.1:\\d+$`, 'm'));
      expect(text).toMatch(new RegExp(`${head}Started GRPCInferenceService at 0\\.0\\.0\\.0:\\d+$`, 'm'));
      expect(text).toMatch(new RegExp(`${head}Started Metrics Service at 0\\.0\\.0\\.0:\\d+$`, 'm'));
      expect(text).toMatch(/^\| ident +\| 1 +\| READY +\| +\|$/m);
      expect(text).toMatch(/^\| ident +\| 2 +\| READY +\| +\|$/m);
      expect(text).not.toMatch(/^\{/m);
    } finally {
      terminal.kill('SIGTERM');
      await exited;
    }
  });

  it('--log-format json: the same facts as fields', async () => {
    repository();
    const server = cli(['serve', '--model-repository', dir, '--log-format', 'json', ...PORTS]);
    try {
      const serving = JSON.parse(await server.line(isServing)) as Entry & { ports: Record<string, number> };
      const entries = json(server.lines);
      for (const [transport, service, address] of [['http', 'HTTPService', '127.0.0.1'], ['grpc', 'GRPCInferenceService', '0.0.0.0'], ['metrics', 'Metrics Service', '0.0.0.0']] as const) {
        const port = serving.ports[transport] as number;
        expect(port).toBeGreaterThan(0);
        expect(entries).toContainEqual(expect.objectContaining({ msg: `Started ${service} at ${address}:${port}`, service, address, port }));
      }
      expect(entries).toContainEqual(expect.objectContaining({ msg: 'model loaded', model: 'ident', versions: ['1', '2'], ms: expect.any(Number) }));
      expect(entries).toContainEqual(expect.objectContaining({ msg: 'still loading model', model: 'slow', versions: ['1'], seconds: expect.any(Number) }));
      expect(entries.find((e) => e.msg === 'models')?.models).toEqual([
        { name: 'ident', version: '1', state: 'READY' },
        { name: 'ident', version: '2', state: 'READY' },
        { name: 'slow', version: '1', state: 'READY' },
      ]);
      expect(serving).toMatchObject({ ready: true, models: [{ name: 'ident', version: '1' }, { name: 'ident', version: '2' }, { name: 'slow', version: '1' }] });
    } finally {
      await stop(server);
    }
  });

  it('--log-format ISO8601: lines led by the UTC time, severity and pid', async () => {
    const server = cli(['serve', ONNX, '--log-format', 'ISO8601', ...PORTS]);
    try {
      const line = await server.line((l) => l.includes('Started HTTPService at'));
      expect(line).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ I \d+\] Started HTTPService at 127\.0\.0\.1:\d+$/);
      await server.line((l) => /\] serving 1 model version$/.test(l));
    } finally {
      await stop(server);
    }
  });
});

describe('tstriton with no command, and --help', () => {
  it('a bare tstriton prints the usage on stderr and exits 2', async () => {
    const run = cli([]);
    expect(await run.exited).toBe(2);
    expect(run.lines).toEqual([]);
    expect(run.stderr()).toMatch(/^Usage: tstriton <command> \[flags\]\n/);
    expect(run.stderr()).toContain('Run `tstriton --help` for every flag');
  });

  it('--help lists the flags in sections, every flag in its own', async () => {
    const run = cli(['--help']);
    expect(await run.exited).toBe(0);
    const help = run.lines.join('\n');
    const sections = FLAG_SECTIONS.map((s) => s.title);
    for (const title of ['Models', 'Server', 'HTTP', 'gRPC', 'Metrics', 'Logging']) expect(sections).toContain(title);
    expect(help).not.toContain('\nOther:');
    for (const section of FLAG_SECTIONS) {
      const start = help.indexOf(`\n${section.title}:\n`);
      expect(start).toBeGreaterThan(0);
      const end = help.indexOf('\n\n', start + 1);
      const body = help.slice(start, end < 0 ? undefined : end);
      for (const name of section.flags) expect(body).toContain(`--${name} `);
    }
    expect(FLAGS.filter((f) => !FLAG_SECTIONS.some((s) => s.flags.includes(f.name))).map((f) => f.name)).toEqual([]);
  });
});

describe("glibc's arena cap", () => {
  /** MALLOC_ARENA_MAX in a running process's environment, as the kernel holds it (what glibc read at its start). */
  const arenaMax = (pid: number) =>
    readFileSync(`/proc/${pid}/environ`, 'utf8')
      .split('\0')
      .find((v) => v.startsWith('MALLOC_ARENA_MAX='));

  it('tstriton serve runs under MALLOC_ARENA_MAX=2 in the same process, and under the value its environment gives', async () => {
    onnxModel(dir, 'ident', [1]);
    for (const [env, expected] of [[{ MALLOC_ARENA_MAX: undefined, GLIBC_TUNABLES: undefined }, 'MALLOC_ARENA_MAX=2'], [{ MALLOC_ARENA_MAX: '6' }, 'MALLOC_ARENA_MAX=6']] as const) {
      const server = cli(['serve', '--model-repository', dir, ...PORTS], env);
      try {
        const serving = JSON.parse(await server.line(isServing)) as Entry & { ports: { http: number } };
        expect(serving).toMatchObject({ ready: true });
        // The pid the test started is the one serving: the restart replaced the process in place.
        expect(arenaMax(server.child.pid as number)).toBe(expected);
        expect((await fetch(`http://127.0.0.1:${serving.ports.http}/v2/health/live`)).status).toBe(200);
      } finally {
        await stop(server);
      }
    }
  });
});
