import { execFile, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { parseModelConfigText } from '../../lib/config/model-config-text';
import { exitingWithParent, spawnTracked, track } from '../helpers/resources';

// `tstriton analyze` in a process of its own, from the sources with the TypeScript hook, as cli.test.ts runs the
// command line. Each candidate is a `tstriton serve` child of it that compiles the CLI from TypeScript: 30-35 s to
// serve on a 2-core machine at load 9 (measured), so a run of a few candidates takes minutes.
jest.setTimeout(480_000);

const ROOT = join(__dirname, '..', '..');
const CLI = ['--require', join(ROOT, 'lib/instances/worker/register-ts.js'), join(ROOT, 'lib/cli/main.ts')];
const MODULE = join(ROOT, 'test/fixtures/cli/models.ts');
/** A small search: max_batch_size 1, 2 and 4, one instance, one thread, no queue delay; a short sweep. */
const SMALL = [
  '--module', MODULE, '--model', 'double', '--shape', 'INPUT0:4', '--latency-budget-ms', '50',
  '--search', 'brute', '--max-model-batch-size', '4', '--max-instance-count', '1', '--queue-delays', '0', '--http-thread-counts', '1',
  '--concurrency', '1,4', '--measurement-interval', '300', '--warmup', '200', '--stability-percentage', '50',
];

let out: string;
beforeEach(() => {
  out = mkdtempSync(join(tmpdir(), 'tstriton-analyze-'));
});
afterEach(() => rmSync(out, { recursive: true, force: true }));

/** The environment without the caller's TSTRITON_* variables. */
function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TSTRITON_')));
}

function runAnalyze(args: string[], nodeArgs: string[] = []): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [...nodeArgs, ...CLI, 'analyze', ...args], { cwd: ROOT, env: exitingWithParent(cleanEnv()), maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, stdout, stderr });
    });
    track(child);
  });
}

/** The rows of a CSV file without quoted commas, as objects by column. */
function readCsv(file: string): Record<string, string>[] {
  const [header, ...rows] = readFileSync(file, 'utf8').trim().split('\n');
  const names = (header as string).split(',');
  return rows.map((row) => Object.fromEntries(row.split(',').map((cell, i) => [names[i] as string, cell])));
}

/** Parses an SVG as XML and returns its text: the root must be an <svg> element. */
function parseSvg(file: string): string {
  const text = readFileSync(file, 'utf8');
  expect(XMLValidator.validate(text)).toBe(true);
  const doc = new XMLParser({ ignoreAttributes: false }) .parse(text) as Record<string, unknown>;
  expect(Object.keys(doc)).toEqual(['svg']);
  return text;
}

describe('tstriton analyze', () => {
  it('measures each candidate in a server of its own and writes the report, the CSV, the plots and the best config', async () => {
    const { code, stdout, stderr } = await runAnalyze([...SMALL, '--time-budget', '150s', '--output-dir', out]);
    expect({ code, stderr: code === 0 ? '' : stderr }).toEqual({ code: 0, stderr: '' });
    const measuredLines = stderr.split('\n').filter((l) => l.startsWith('measured double: '));
    const counted = Number(/double: (\d+) candidates measured/.exec(stdout)?.[1]);
    // The model as bound and at least one candidate of the grid (more when the machine is quick enough).
    expect(counted).toBeGreaterThanOrEqual(2);
    expect(measuredLines).toHaveLength(counted);

    const rows = readCsv(join(out, 'results.csv'));
    expect(rows).toHaveLength(counted);
    expect(rows.filter((r) => r.as_bound === 'true').map((r) => r.max_batch_size)).toEqual(['8']);
    for (const r of rows.filter((r) => r.as_bound === 'false')) expect(['1', '2', '4']).toContain(r.max_batch_size);
    expect(new Set(rows.map((r) => r.config)).size).toBe(rows.length);
    // What the server and the load generator (tstriton perf's threads in the analyze process) used, side by side.
    for (const r of rows.filter((r) => r.throughput_infer_per_s !== '')) {
      expect(Number(r.server_cpu_percent)).toBeGreaterThan(0);
      expect(Number(r.load_cpu_percent)).toBeGreaterThan(0);
    }

    const report = readFileSync(join(out, 'report.md'), 'utf8');
    expect(report).toContain('## double');
    expect(report).toContain('### Pareto front');
    // The best of the search is measured again beside the model as bound, unless the model as bound is the best.
    expect(report).toMatch(/Measured again back to back \(windows of 900 ms\): .* (The gain holds|The search's best did not hold its gain)|The model as bound is the best of the candidates measured/);
    expect(report).toContain('p95 latency within 50 ms');
    expect(report).toMatch(/The machine has \d+ cores?, which the server and the load generator shared\./);
    for (const r of rows) expect(report).toContain(`| ${r.config} |`);

    // A best config exists when a candidate met the budget; on this loopback model at 50 ms one always does.
    const config = parseModelConfigText(readFileSync(join(out, 'double', 'config.pbtxt'), 'utf8'), 'config.pbtxt');
    expect(config.name).toBe('double');
    const searchBest = rows.filter((r) => r.meets_objective === 'true').sort((a, b) => Number(b.throughput_infer_per_s) - Number(a.throughput_infer_per_s))[0];
    // The search's best, unless measuring it again beside the model as bound did not hold its gain (the report says
    // so): then the model as bound is the config written.
    const best = report.includes("The search's best did not hold its gain") ? rows.find((r) => r.as_bound === 'true') : searchBest;
    expect(config.max_batch_size).toBe(Number(best?.max_batch_size));
    const bind = readFileSync(join(out, 'double', 'bind-options.ts'), 'utf8');
    expect(bind).toContain(`maxBatchSize: ${best?.max_batch_size}`);
    expect(bind).toContain('httpThreadCount: 1');
    // Its header says what the search measured and, where the best was measured again, what that found.
    expect(bind).toMatch(/^\/\/ double: the best config tstriton analyze found\.\n\/\/ .* infer\/s at concurrency \d+/);
    expect(bind.includes('\n// Measured again back to back')).toBe(report.includes('Measured again back to back'));

    const throughputLatency = parseSvg(join(out, 'double', 'throughput-latency.svg'));
    expect(throughputLatency).toContain('role-mark');
    expect(throughputLatency).toContain('p95 latency (ms)');
    expect(throughputLatency).toContain('throughput (infer/s)');
    // One line per config: each config whose best step is in results.csv is named in the plot's marks.
    for (const r of rows.filter((r) => r.throughput_infer_per_s !== '')) expect(throughputLatency).toContain(`config: ${r.config};`);
    const concurrency = parseSvg(join(out, 'double', 'concurrency.svg'));
    expect(concurrency).toContain('concurrency');
    expect(concurrency).toContain('p95 latency (ms)');
    expect(report).toContain('![double/concurrency.svg](double/concurrency.svg)');
  });

  it('serves a repository model with its config.pbtxt rewritten for each candidate', async () => {
    // An ONNX model without config.pbtxt: auto-completed as bound (max_batch_size 4), then 2 instances and max 8.
    const repository = join(out, 'models');
    mkdirSync(join(repository, 'identity', '1'), { recursive: true });
    copyFileSync(join(ROOT, 'test/fixtures/onnx/identity_fp32.onnx'), join(repository, 'identity', '1', 'model.onnx'));
    const args = [
      '--model-repository', repository, '--model', 'identity', '--latency-budget-ms', '50', '--search', 'brute',
      '--min-model-batch-size', '8', '--max-model-batch-size', '8', '--queue-delays', '100', '--min-instance-count', '2', '--max-instance-count', '2',
      '--http-thread-counts', '1', '--concurrency', '1,4', '--measurement-interval', '300', '--warmup', '200', '--time-budget', '150s',
    ];
    const { code, stderr } = await runAnalyze([...args, '--output-dir', join(out, 'report')]);
    expect({ code, stderr: code === 0 ? '' : stderr }).toEqual({ code: 0, stderr: '' });
    const rows = readCsv(join(out, 'report', 'results.csv'));
    expect(rows.map((r) => [r.config, r.max_batch_size, r.instance_count, r.error])).toEqual([
      ['as bound', '4', '1', ''],
      ['mbs=8 delay=100us inst=2xcpu', '8', '2', ''],
    ]);
    expect(rows.every((r) => Number(r.throughput_infer_per_s) > 0)).toBe(true);
    // The source repository is left as it was.
    expect(existsSync(join(repository, 'identity', 'config.pbtxt'))).toBe(false);
  });

  it('writes the report of what was measured when SIGINT stops it, and exits 130', async () => {
    const child: ChildProcess = spawnTracked(process.execPath, [...CLI, 'analyze', ...SMALL, '--time-budget', '10m', '--output-dir', out], { cwd: ROOT, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const measured: string[] = [];
    let interrupted = false;
    createInterface({ input: child.stderr as NodeJS.ReadableStream }).on('line', (line) => {
      if (!line.startsWith('measured double: ')) return;
      measured.push(line);
      // The first candidate measured: stop during the second.
      if (!interrupted) {
        interrupted = true;
        setTimeout(() => child.kill('SIGINT'), 3_000);
      }
    });
    expect(await exited).toBe(130);
    expect(interrupted).toBe(true);
    const rows = readCsv(join(out, 'results.csv'));
    expect(rows.length).toBeGreaterThanOrEqual(1);
    expect(rows).toHaveLength(measured.length);
    expect(rows[0]?.as_bound).toBe('true');
    const report = readFileSync(join(out, 'report.md'), 'utf8');
    expect(report).toContain('interrupted (SIGINT)');
    expect(existsSync(join(out, '.servers'))).toBe(false);
  });

  it('writes the report without plots, and says how to add them, where vega is not installed', async () => {
    const hide = ['--require', join(ROOT, 'test/fixtures/analyze/without-vega.js')];
    const { code, stderr } = await runAnalyze([...SMALL, '--max-model-batch-size', '1', '--time-budget', '120s', '--output-dir', out], hide);
    expect(code).toBe(0);
    const notes = stderr.split('\n').filter((l) => l.startsWith('tstriton: '));
    expect(notes).toEqual(['tstriton: plots left out: vega and vega-lite are not installed (npm install vega vega-lite)']);
    expect(readFileSync(join(out, 'report.md'), 'utf8')).toContain('plots left out: vega and vega-lite are not installed (npm install vega vega-lite)');
    expect(existsSync(join(out, 'results.csv'))).toBe(true);
    expect(existsSync(join(out, 'double', 'throughput-latency.svg'))).toBe(false);
  });

  it.each([
    ['an unknown model', ['--module', MODULE, '--model', 'nope'], /^tstriton: unknown model "nope": --module .* serves "double"$/],
    ['a module that does not load', ['--module', join(ROOT, 'test/fixtures/cli/no-such-module.ts'), '--model', 'double'], /^tstriton: --module .*no-such-module\.ts does not serve: .+$/],
    ['bounds that leave no candidate', ['--module', MODULE, '--model', 'double', '--min-model-batch-size', '64', '--max-model-batch-size', '8'], /^tstriton: no candidate to measure: no power of two lies between --min-model-batch-size 64 and --max-model-batch-size 8$/],
    ['no model', ['--module', MODULE], /^tstriton: give the model to analyze: --model name/],
    ['a bad time budget', ['--module', MODULE, '--model', 'double', '--time-budget', 'soon'], /^tstriton: --time-budget expects seconds or a duration such as 90s, 10m or 1h, got "soon"$/],
  ])('refuses %s with one line and exit code 2', async (_what, args, message) => {
    const { code, stdout, stderr } = await runAnalyze([...args, '--output-dir', out]);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    const lines = stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(message);
    expect(existsSync(join(out, 'report.md'))).toBe(false);
  });
});
