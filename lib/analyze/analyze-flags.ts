import * as path from 'node:path';
import { availableParallelism } from 'node:os';
import { invalidConfig } from '../base/errors';
import type { AnalyzeOptions } from './analyze-types';
import { PERCENTILES, type Percentile } from './objective';
import { checkBounds } from './search-space';

/** How `tstriton analyze` measures: with `tstriton perf`'s runPerf, or with Triton's perf_analyzer. */
export type MeasureWith = 'tstriton' | 'perf_analyzer';

/** The command line of `tstriton analyze`, parsed. */
export interface AnalyzeCommandLine {
  readonly help: boolean;
  readonly options: AnalyzeOptions;
  readonly outputDir: string;
  readonly measureWith: MeasureWith;
}

type Kind = 'string' | 'integer' | 'number' | 'list' | 'integers';

/** One flag of `tstriton analyze`. */
interface AnalyzeFlag {
  readonly name: string;
  readonly kind: Kind;
  readonly repeatable?: true;
  readonly placeholder: string;
  readonly default: string;
  readonly summary: string;
}

/**
 * The concurrency sweep by default: powers of two up to 1024, Model Analyzer's `run_config_search_max_concurrency`.
 * A batch of `max_batch_size` rows forms only with that many requests in flight, so the sweep reaches past the largest
 * batch searched; a candidate's sweep stops once latency passes the budget or throughput stops growing.
 */
export const DEFAULT_CONCURRENCY: readonly number[] = Array.from({ length: 11 }, (_, i) => 2 ** i);

/** The flags of `tstriton analyze`, in the order `--help` lists them; the names follow Model Analyzer's and perf_analyzer's. */
export const ANALYZE_FLAGS: readonly AnalyzeFlag[] = [
  { name: 'module', kind: 'string', repeatable: true, placeholder: 'file', default: 'none', summary: 'serve the models this module binds (as tstriton serve --module)' },
  { name: 'model-repository', kind: 'string', repeatable: true, placeholder: 'dir', default: 'none', summary: 'serve the models of this repository (as tstriton serve --model-repository)' },
  { name: 'model', kind: 'string', repeatable: true, placeholder: 'name', default: '(required)', summary: 'a model to analyze; each is searched in turn' },
  { name: 'output-dir', kind: 'string', placeholder: 'dir', default: './analyze-results', summary: 'where report.md, results.csv, the plots and the best configs go' },
  { name: 'search', kind: 'string', placeholder: 'quick|brute', default: 'quick', summary: 'quick: a coarse sweep, then refinement around the best; brute: the full grid' },
  { name: 'time-budget', kind: 'string', placeholder: 'secs|Nm', default: '10m', summary: 'the whole run, in seconds or with a unit (90s, 10m, 1h)' },
  { name: 'latency-budget-ms', kind: 'number', placeholder: 'ms', default: 'none', summary: 'objective: the most throughput with latency at --percentile within this' },
  { name: 'min-throughput', kind: 'number', placeholder: 'infer/s', default: 'none', summary: 'objective: the least latency serving at least this many inferences/s' },
  { name: 'percentile', kind: 'string', placeholder: 'p50|p90|p95|p99', default: 'p95', summary: 'the latency the objective is judged at' },
  { name: 'min-model-batch-size', kind: 'integer', placeholder: 'n', default: '1', summary: 'smallest max_batch_size tried (powers of two between the bounds)' },
  { name: 'max-model-batch-size', kind: 'integer', placeholder: 'n', default: '128', summary: 'largest max_batch_size tried' },
  { name: 'queue-delays', kind: 'integers', placeholder: 'us,...', default: '0,100,500,2000', summary: 'max_queue_delay_microseconds values tried' },
  { name: 'min-instance-count', kind: 'integer', placeholder: 'n', default: '1', summary: 'fewest instances tried' },
  { name: 'max-instance-count', kind: 'integer', placeholder: 'n', default: '4', summary: 'most instances tried' },
  { name: 'kind', kind: 'list', repeatable: true, placeholder: 'cpu|gpu:N', default: 'cpu and each GPU nvidia-smi lists', summary: 'where the instances run' },
  { name: 'http-thread-counts', kind: 'integers', placeholder: 'n,...', default: '1 to min(4, cores)', summary: 'front-end thread counts tried (--http-thread-count)' },
  { name: 'concurrency', kind: 'integers', placeholder: 'n,...', default: '1,2,4,...,1024', summary: 'the concurrency sweep of each candidate (stops early past the budget or once throughput stops growing)' },
  { name: 'protocol', kind: 'string', placeholder: 'http|grpc', default: 'http', summary: 'what the load is sent over (-i)' },
  { name: 'batch-size', kind: 'integer', placeholder: 'n', default: '1', summary: 'rows per request (-b)' },
  { name: 'shape', kind: 'string', repeatable: true, placeholder: 'name:d1,d2', default: 'none', summary: 'the shape of an input with variable dims (--shape)' },
  { name: 'input-data', kind: 'string', placeholder: 'zero|random|file|dir', default: 'random', summary: 'the input values (--input-data)' },
  { name: 'measurement-interval', kind: 'integer', placeholder: 'ms', default: '1000', summary: 'length of each measurement window (-p)' },
  { name: 'max-trials', kind: 'integer', placeholder: 'n', default: '3 (perf_analyzer: 10)', summary: 'windows per step at most, until the last three agree (-r)' },
  { name: 'stability-percentage', kind: 'number', placeholder: '%', default: '10', summary: 'how close the windows must agree (-s)' },
  { name: 'warmup', kind: 'integer', placeholder: 'ms', default: '1000', summary: 'load before measuring each candidate' },
  { name: 'measure-with', kind: 'string', placeholder: 'tstriton|perf_analyzer', default: 'tstriton', summary: "tstriton perf's measurement, or Triton's perf_analyzer (on the PATH)" },
  { name: 'start-timeout', kind: 'integer', placeholder: 'secs', default: '120', summary: 'how long a candidate\'s server may take to serve' },
];

const BY_NAME = new Map(ANALYZE_FLAGS.map((f) => [f.name, f]));

/** The usage and flags of `tstriton analyze`, for `--help`. */
export function analyzeHelp(): string {
  const rows = ANALYZE_FLAGS.map((f) => {
    const usage = `--${f.name} <${f.placeholder}>${f.repeatable ? ' ...' : ''}`;
    return `  ${usage.padEnd(40)}${f.summary} (default ${f.default})`;
  });
  return [
    'Usage: tstriton analyze (--module file | --model-repository dir) --model name [flags]',
    '',
    'Finds the max_batch_size, queue delay, instances and front-end threads that serve a model best: each candidate',
    'runs in a fresh server and is measured over a concurrency sweep. Writes report.md, results.csv, plots and the',
    'best config (config.pbtxt and bind() options) to --output-dir. SIGINT writes the report of what was measured.',
    '',
    '  tstriton analyze --module ./models.ts --model add_sub --shape a:16 --shape b:16 --latency-budget-ms 5 --time-budget 5m',
    '',
    ...rows,
    `  ${'--help'.padEnd(40)}this help`,
    '',
  ].join('\n');
}

/**
 * Parses the arguments after `tstriton analyze` (`--flag value` or `--flag=value`) into the run's options.
 *
 * @throws TritonError `INVALID_CONFIG` with one line naming the flag and what it expects.
 */
export function parseAnalyzeArgs(argv: readonly string[], cwd = process.cwd()): AnalyzeCommandLine {
  const values = new Map<string, string[]>();
  let help = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--help' || arg === '-h') {
      help = true;
      continue;
    }
    if (!arg.startsWith('--')) throw invalidConfig(`unexpected argument "${arg}" (see tstriton analyze --help)`);
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq < 0 ? undefined : eq);
    const flag = BY_NAME.get(name);
    if (!flag) throw invalidConfig(`unknown flag --${name} of tstriton analyze (see tstriton analyze --help)`);
    const value = eq >= 0 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined || (eq < 0 && value.startsWith('--'))) throw invalidConfig(`--${name} expects ${flag.placeholder}, got nothing`);
    values.set(name, [...(flag.repeatable ? (values.get(name) ?? []) : []), value]);
  }
  const read = new FlagReader(values);
  if (help) return { help, ...readOptions(read, cwd) };
  const modules = read.strings('module').map((m) => path.resolve(cwd, m));
  const repositories = read.strings('model-repository').map((r) => path.resolve(cwd, r));
  if (modules.length === 0 && repositories.length === 0) throw invalidConfig('nothing to analyze: give --module or --model-repository (see tstriton analyze --help)');
  const models = read.strings('model');
  if (models.length === 0) throw invalidConfig('give the model to analyze: --model name (see tstriton analyze --help)');
  const line = { help, ...readOptions(read, cwd, { modules, repositories, models }) };
  checkBounds(line.options.bounds);
  return line;
}

/** The run's options from the flags, with the served source and models (empty for `--help`). */
function readOptions(
  read: FlagReader,
  cwd: string,
  served: { modules: string[]; repositories: string[]; models: string[] } = { modules: [], repositories: [], models: [] },
): Omit<AnalyzeCommandLine, 'help'> {
  const search = read.oneOf('search', ['quick', 'brute'] as const, 'quick');
  const percentileText = read.string('percentile') ?? 'p95';
  const percentile = (/^p/.test(percentileText) ? percentileText : `p${percentileText}`) as Percentile;
  if (!PERCENTILES.includes(percentile)) throw invalidConfig(`--percentile expects one of ${PERCENTILES.join(', ')}, got "${percentileText}"`);
  const latencyBudgetMs = read.positive('latency-budget-ms');
  const minThroughput = read.positive('min-throughput');
  const inputData = read.string('input-data') ?? 'random';
  const outputDir = path.resolve(cwd, read.string('output-dir') ?? 'analyze-results');
  const cores = availableParallelism();
  const measureWith = read.oneOf('measure-with', ['tstriton', 'perf_analyzer'] as const, 'tstriton');
  return {
    outputDir,
    measureWith,
    options: {
      source: { modules: served.modules, repositories: served.repositories },
      models: served.models,
      search,
      bounds: {
        minModelBatchSize: read.integer('min-model-batch-size', 1, 1),
        maxModelBatchSize: read.integer('max-model-batch-size', 128, 1),
        queueDelaysUs: read.integers('queue-delays', [0, 100, 500, 2000], 0),
        minInstanceCount: read.integer('min-instance-count', 1, 1),
        maxInstanceCount: read.integer('max-instance-count', 4, 1),
        ...(read.strings('kind').length > 0 && { kinds: read.kinds() }),
        httpThreadCounts: read.integers('http-thread-counts', Array.from({ length: Math.min(4, cores) }, (_, i) => i + 1), 1),
      },
      objective: { percentile, ...(latencyBudgetMs !== undefined && { latencyBudgetUs: latencyBudgetMs * 1000 }), ...(minThroughput !== undefined && { minThroughput }) },
      load: {
        protocol: read.oneOf('protocol', ['http', 'grpc'] as const, 'http'),
        batchSize: read.integer('batch-size', 1, 1),
        concurrency: read.integers('concurrency', DEFAULT_CONCURRENCY, 1),
        measurementIntervalMs: read.integer('measurement-interval', 1000, 50),
        // perf_analyzer gives no measurement for a step whose windows never agree (tstriton perf reports it as
        // unstable): it gets its own default number of windows.
        maxTrials: read.integer('max-trials', measureWith === 'perf_analyzer' ? 10 : 3, 1),
        stabilityPercentage: read.positive('stability-percentage') ?? 10,
        warmupMs: read.integer('warmup', 1000, 0),
        ...(read.strings('shape').length > 0 && { shapes: read.shapes() }),
        inputData: inputData === 'zero' || inputData === 'random' ? inputData : { file: path.resolve(cwd, inputData) },
      },
      timeBudgetMs: parseDuration(read.string('time-budget') ?? '10m', '--time-budget'),
      workDir: path.join(outputDir, '.servers'),
      startTimeoutMs: read.integer('start-timeout', 120, 1) * 1000,
    },
  };
}

/** Reads the flags' values, each checked as its flag expects. */
class FlagReader {
  constructor(private readonly values: ReadonlyMap<string, string[]>) {}

  strings(name: string): string[] {
    return this.values.get(name) ?? [];
  }

  string(name: string): string | undefined {
    return this.values.get(name)?.[0];
  }

  integer(name: string, fallback: number, min: number): number {
    const raw = this.string(name);
    if (raw === undefined) return fallback;
    if (!/^\d+$/.test(raw.trim()) || Number(raw) < min) throw invalidConfig(`--${name} expects an integer of at least ${min}, got "${raw}"`);
    return Number(raw);
  }

  integers(name: string, fallback: readonly number[], min: number): number[] {
    const raw = this.string(name);
    if (raw === undefined) return [...fallback];
    const list = raw.split(',').map((v) => v.trim());
    if (list.some((v) => !/^\d+$/.test(v) || Number(v) < min)) throw invalidConfig(`--${name} expects integers of at least ${min}, separated by commas, got "${raw}"`);
    return list.map(Number);
  }

  positive(name: string): number | undefined {
    const raw = this.string(name);
    if (raw === undefined) return undefined;
    const n = Number(raw);
    if (raw.trim() === '' || !Number.isFinite(n) || n <= 0) throw invalidConfig(`--${name} expects a number above 0, got "${raw}"`);
    return n;
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const raw = this.string(name);
    if (raw === undefined) return fallback;
    if (!(allowed as readonly string[]).includes(raw)) throw invalidConfig(`--${name} expects one of ${allowed.join(', ')}, got "${raw}"`);
    return raw as T;
  }

  kinds(): string[] {
    return this.strings('kind').flatMap((v) => v.split(',')).map((v) => {
      const m = /^(cpu|gpu:\d+)$/.exec(v.trim().toLowerCase());
      if (!m) throw invalidConfig(`--kind expects cpu or gpu:N, got "${v}"`);
      return m[1] as string;
    });
  }

  shapes(): Record<string, number[]> {
    return Object.fromEntries(
      this.strings('shape').map((v) => {
        const m = /^(.+):(\d+(?:,\d+)*)$/.exec(v.trim());
        if (!m) throw invalidConfig(`--shape expects name:d1,d2,..., got "${v}"`);
        return [m[1] as string, (m[2] as string).split(',').map(Number)];
      }),
    );
  }
}

/**
 * A duration given as seconds (`300`) or with a unit (`90s`, `10m`, `1h`), in milliseconds.
 *
 * @throws TritonError `INVALID_CONFIG` naming `flag` when it does not parse or is not above 0.
 */
export function parseDuration(text: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(s|m|h)?$/.exec(text.trim());
  const seconds = m ? Number(m[1]) * { s: 1, m: 60, h: 3600 }[(m[2] ?? 's') as 's' | 'm' | 'h'] : NaN;
  if (!(seconds > 0)) throw invalidConfig(`${flag} expects seconds or a duration such as 90s, 10m or 1h, got "${text}"`);
  return seconds * 1000;
}
