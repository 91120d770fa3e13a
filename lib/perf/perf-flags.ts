/**
 * The flags of `tstriton perf`, perf_analyzer's names and meanings (short flags like `-m -u -i -b -p -f -H`
 * included), in one table that feeds both the parser and `tstriton perf --help`.
 */
import { readFileSync } from 'node:fs';
import { invalidConfig } from '../base/errors';
import type { PerfLoad, PerfOptions, PerfTls } from './perf-types';

/** What the command line asks for: the run's options and where its results go. */
export interface PerfCommandLine {
  readonly options: PerfOptions;
  /** `-f`: perf_analyzer's CSV report. */
  readonly csvFile?: string;
  /** `--verbose-csv`: the CSV's extra columns. */
  readonly verboseCsv: boolean;
  /** `--json`: the report as JSON. */
  readonly jsonFile?: string;
  readonly help: boolean;
}

/** The flags as they are read, before they become options. */
interface Draft {
  model?: string;
  version?: string;
  url?: string;
  protocol: 'http' | 'grpc';
  batchSize?: number;
  concurrency?: readonly number[];
  requestRate?: readonly number[];
  distribution: 'constant' | 'poisson';
  measurementIntervalMs?: number;
  stabilityPercentage?: number;
  maxTrials?: number;
  percentile?: number;
  shapes: Record<string, readonly number[]>;
  inputData?: PerfOptions['inputData'];
  inputTensorFormat?: 'binary' | 'json';
  outputTensorFormat?: 'binary' | 'json';
  streaming: boolean;
  sharedMemory?: 'none' | 'system';
  outputSharedMemorySize?: number;
  sequenceLength?: number;
  sequenceIdStart?: number;
  numOfSequences?: number;
  maxThreads?: number;
  csvFile?: string;
  verboseCsv: boolean;
  jsonFile?: string;
  headers: Record<string, string>;
  grpcSsl: boolean;
  tls: { -readonly [K in keyof PerfTls]: PerfTls[K] };
  httpsTls: boolean;
  help: boolean;
}

/** One flag: its names, what its value looks like, one line of help, and what it sets. */
interface PerfFlag {
  readonly names: readonly string[];
  /** Placeholder of the value; absent for a switch. */
  readonly value?: string;
  readonly summary: string;
  readonly apply: (draft: Draft, value: string, flag: string) => void;
}

/** The `--help` sections, in order. */
type Section = 'Model and server' | 'Load' | 'Measurement' | 'Input data' | 'Output' | 'TLS';

const SECTIONS: readonly { readonly title: Section; readonly flags: readonly PerfFlag[] }[] = [
  {
    title: 'Model and server',
    flags: [
      { names: ['-m', '--model-name'], value: 'name', summary: 'the model to measure (required)', apply: (d, v) => (d.model = v) },
      { names: ['-x', '--model-version'], value: 'version', summary: "the model's version (default: the latest)", apply: (d, v) => (d.version = v) },
      { names: ['-u', '--url'], value: 'host:port', summary: 'the server (default localhost:8000 for HTTP, localhost:8001 for gRPC)', apply: (d, v) => (d.url = v) },
      { names: ['-i', '--protocol'], value: 'http|grpc', summary: 'the protocol (default http)', apply: (d, v, f) => (d.protocol = oneOf(f, v.toLowerCase(), ['http', 'grpc'])) },
      { names: ['-H'], value: 'name:value', summary: 'a header on every request (gRPC: metadata); repeatable', apply: (d, v, f) => header(d, v, f) },
    ],
  },
  {
    title: 'Load',
    flags: [
      { names: ['--concurrency-range'], value: 'start[:end[:step]]', summary: 'closed loop: requests in flight, each level in turn (default 1)', apply: (d, v, f) => (d.concurrency = range(f, v, false)) },
      { names: ['--request-rate-range'], value: 'start[:end[:step]]', summary: 'open loop: requests started per second, each rate in turn', apply: (d, v, f) => (d.requestRate = range(f, v, true)) },
      { names: ['--request-distribution'], value: 'constant|poisson', summary: 'open loop: gaps between requests (default constant)', apply: (d, v, f) => (d.distribution = oneOf(f, v, ['constant', 'poisson'])) },
      { names: ['-b', '--batch-size'], value: 'n', summary: 'the batch size of each request (default 1)', apply: (d, v, f) => (d.batchSize = integer(f, v, 1)) },
      { names: ['--streaming'], summary: 'gRPC: send over ModelStreamInfer streams, one per lane', apply: (d) => (d.streaming = true) },
      { names: ['--sequence-length'], value: 'n', summary: 'sequence models: requests per sequence (default 20)', apply: (d, v, f) => (d.sequenceLength = integer(f, v, 1)) },
      { names: ['--sequence-id-range'], value: 'start[:end]', summary: 'sequence models: the first sequence id (default 1)', apply: (d, v, f) => (d.sequenceIdStart = integer(f, v.split(':')[0] ?? '', 1)) },
      { names: ['--num-of-sequences'], value: 'n', summary: 'sequence models, open loop: sequences kept going (default 4)', apply: (d, v, f) => (d.numOfSequences = integer(f, v, 1)) },
      { names: ['--serial-sequences'], summary: 'accepted for perf_analyzer\'s command lines: a sequence always has one request in flight', apply: () => undefined },
      { names: ['--max-threads'], value: 'n', summary: 'load threads (default half the cores, 1 to 4)', apply: (d, v, f) => (d.maxThreads = integer(f, v, 1)) },
      { names: ['-a', '--async'], summary: "accepted for perf_analyzer's command lines: every lane is asynchronous", apply: () => undefined },
      { names: ['--sync'], summary: "accepted for perf_analyzer's command lines", apply: () => undefined },
    ],
  },
  {
    title: 'Measurement',
    flags: [
      { names: ['-p', '--measurement-interval'], value: 'ms', summary: 'length of a measurement window (default 5000)', apply: (d, v, f) => (d.measurementIntervalMs = integer(f, v, 1)) },
      { names: ['-s', '--stability-percentage'], value: '%', summary: 'the last 3 windows agree within this much (default 10)', apply: (d, v, f) => (d.stabilityPercentage = positive(f, v)) },
      { names: ['-r', '--max-trials'], value: 'n', summary: 'windows at most per step (default 10)', apply: (d, v, f) => (d.maxTrials = integer(f, v, 1)) },
      { names: ['--percentile'], value: 'p', summary: 'the latency stability and the summary use (default: the average)', apply: (d, v, f) => (d.percentile = percentile(f, v)) },
    ],
  },
  {
    title: 'Input data',
    flags: [
      { names: ['--shape'], value: 'name:d1,d2', summary: "an input's shape without the batch dimension, for variable dimensions (default 1); repeatable", apply: (d, v, f) => shape(d, v, f) },
      { names: ['--input-data'], value: 'zero|random|file|dir', summary: "values of the inputs: perf_analyzer's JSON data file, or its directory of a file per input (default random)", apply: (d, v) => (d.inputData = v === 'zero' || v === 'random' ? v : { file: v }) },
      { names: ['--input-tensor-format'], value: 'binary|json', summary: 'HTTP: inputs in the binary tensor extension or as JSON (default binary)', apply: (d, v, f) => (d.inputTensorFormat = oneOf(f, v, ['binary', 'json'] as const)) },
      { names: ['--output-tensor-format'], value: 'binary|json', summary: 'HTTP: outputs in the binary tensor extension or as JSON (default binary)', apply: (d, v, f) => (d.outputTensorFormat = oneOf(f, v, ['binary', 'json'] as const)) },
      { names: ['--shared-memory'], value: 'none|system', summary: 'inputs and outputs in registered system shared memory (default none)', apply: (d, v, f) => (d.sharedMemory = oneOf(f, v, ['none', 'system'] as const)) },
      {
        names: ['--output-shared-memory-size'],
        value: 'bytes',
        summary: "with --shared-memory system: the region of an output whose size the model's shape does not fix (default 102400)",
        apply: (d, v, f) => (d.outputSharedMemorySize = integer(f, v, 1)),
      },
    ],
  },
  {
    title: 'Output',
    flags: [
      { names: ['-f'], value: 'file', summary: "perf_analyzer's CSV report", apply: (d, v) => (d.csvFile = v) },
      { names: ['--verbose-csv'], summary: 'the CSV with its extra columns (average latency, send/receive, response wait)', apply: (d) => (d.verboseCsv = true) },
      { names: ['--json'], value: 'file', summary: 'the report as JSON: one entry per step, with every latency and the server side', apply: (d, v) => (d.jsonFile = v) },
      { names: ['-h', '--help'], summary: 'this help', apply: (d) => (d.help = true) },
    ],
  },
  {
    title: 'TLS',
    flags: [
      { names: ['--ssl-grpc-use-ssl'], value: 'true|false', summary: 'gRPC over TLS', apply: (d, v, f) => (d.grpcSsl = bool(f, v)) },
      { names: ['--ssl-grpc-root-certifications-file'], value: 'file', summary: 'gRPC: the CA certificates (PEM)', apply: (d, v) => (d.tls.ca = pemFile(v)) },
      { names: ['--ssl-grpc-private-key-file'], value: 'file', summary: "gRPC: the client's private key (PEM)", apply: (d, v) => (d.tls.key = pemFile(v)) },
      { names: ['--ssl-grpc-certificate-chain-file'], value: 'file', summary: "gRPC: the client's certificate chain (PEM)", apply: (d, v) => (d.tls.cert = pemFile(v)) },
      { names: ['--ssl-https-ca-certificates-file'], value: 'file', summary: 'HTTPS: the CA certificates (PEM); HTTPS is used when any --ssl-https-* flag is given', apply: (d, v) => https(d, (t) => (t.ca = pemFile(v))) },
      { names: ['--ssl-https-client-certificate-file'], value: 'file', summary: "HTTPS: the client's certificate (PEM)", apply: (d, v) => https(d, (t) => (t.cert = pemFile(v))) },
      { names: ['--ssl-https-private-key-file'], value: 'file', summary: "HTTPS: the client's private key (PEM)", apply: (d, v) => https(d, (t) => (t.key = pemFile(v))) },
      { names: ['--ssl-https-verify-peer'], value: '0|1', summary: "HTTPS: check the server's certificate (default 1)", apply: (d, v, f) => https(d, (t) => (t.verifyPeer = oneOf(f, v, ['0', '1']) === '1')) },
      { names: ['--ssl-https-verify-host'], value: '0|1|2', summary: "HTTPS: check the certificate's name (default 2)", apply: (d, v, f) => https(d, (t) => (t.verifyHost = oneOf(f, v, ['0', '1', '2']) !== '0')) },
      { names: ['--ssl-https-client-certificate-type'], value: 'PEM', summary: 'HTTPS: PEM only', apply: (d, v, f) => https(d, () => oneOf(f, v, ['PEM'])) },
      { names: ['--ssl-https-private-key-type'], value: 'PEM', summary: 'HTTPS: PEM only', apply: (d, v, f) => https(d, () => oneOf(f, v, ['PEM'])) },
    ],
  },
];

const FLAGS = new Map<string, PerfFlag>(SECTIONS.flatMap((s) => s.flags.flatMap((f) => f.names.map((n) => [n, f] as const))));

/** Reads `tstriton perf`'s arguments (after `perf`); a bad flag or value is an `INVALID_CONFIG` error naming it. */
export function parsePerfArgs(argv: readonly string[]): PerfCommandLine {
  const draft: Draft = { protocol: 'http', distribution: 'constant', shapes: {}, streaming: false, verboseCsv: false, headers: {}, grpcSsl: false, tls: {}, httpsTls: false, help: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    let name = arg;
    let inline: string | undefined;
    if (arg.startsWith('--') && arg.includes('=')) [name, inline] = [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)];
    else if (/^-[a-zA-Z]./.test(arg) && !FLAGS.has(arg)) [name, inline] = [arg.slice(0, 2), arg.slice(2)];
    const flag = FLAGS.get(name);
    if (!flag) throw invalidConfig(arg.startsWith('-') ? `unknown flag ${name} (see tstriton perf --help)` : `unexpected argument '${arg}': tstriton perf takes flags only (see tstriton perf --help)`);
    if (flag.value === undefined) {
      if (inline !== undefined) throw invalidConfig(`${name} takes no value`);
      flag.apply(draft, '', name);
      continue;
    }
    const value = inline ?? argv[++i];
    if (value === undefined) throw invalidConfig(`${name} needs a value: ${flag.value}`);
    flag.apply(draft, value, name);
  }
  return commandLine(draft);
}

function commandLine(d: Draft): PerfCommandLine {
  const base = { verboseCsv: d.verboseCsv, help: d.help, ...(d.csvFile !== undefined && { csvFile: d.csvFile }), ...(d.jsonFile !== undefined && { jsonFile: d.jsonFile }) };
  if (d.help) return { ...base, options: { target: { url: '', protocol: d.protocol, model: '' }, loads: [] } };
  if (d.model === undefined) throw invalidConfig('-m is required: the model to measure');
  if (d.concurrency && d.requestRate) throw invalidConfig('--concurrency-range and --request-rate-range cannot be given together');
  if (d.streaming && d.protocol !== 'grpc') throw invalidConfig('--streaming needs -i grpc');
  if (d.protocol === 'grpc' && (d.inputTensorFormat === 'json' || d.outputTensorFormat === 'json')) throw invalidConfig('--input-tensor-format and --output-tensor-format json are for HTTP only');
  if (d.httpsTls && d.protocol !== 'http') throw invalidConfig('the --ssl-https-* flags are for HTTP: use the --ssl-grpc-* flags with -i grpc');
  const secure = d.protocol === 'grpc' ? d.grpcSsl : d.httpsTls;
  const loads: PerfLoad[] = d.requestRate
    ? d.requestRate.map((requestRate) => ({ kind: 'request-rate', requestRate, distribution: d.distribution }))
    : (d.concurrency ?? [1]).map((concurrency) => ({ kind: 'concurrency', concurrency }));
  const options: PerfOptions = {
    target: {
      url: d.url ?? (d.protocol === 'grpc' ? 'localhost:8001' : 'localhost:8000'),
      protocol: d.protocol,
      model: d.model,
      ...(d.version !== undefined && { version: d.version }),
      ...(Object.keys(d.headers).length > 0 && { headers: d.headers }),
      ...(secure && { tls: d.tls }),
    },
    loads,
    ...(d.batchSize !== undefined && { batchSize: d.batchSize }),
    ...(d.measurementIntervalMs !== undefined && { measurementIntervalMs: d.measurementIntervalMs }),
    ...(d.stabilityPercentage !== undefined && { stabilityPercentage: d.stabilityPercentage }),
    ...(d.maxTrials !== undefined && { maxTrials: d.maxTrials }),
    ...(d.percentile !== undefined && { percentile: d.percentile }),
    ...(Object.keys(d.shapes).length > 0 && { shapes: d.shapes }),
    ...(d.inputData !== undefined && { inputData: d.inputData }),
    ...(d.inputTensorFormat !== undefined && { inputTensorFormat: d.inputTensorFormat }),
    ...(d.outputTensorFormat !== undefined && { outputTensorFormat: d.outputTensorFormat }),
    ...(d.streaming && { streaming: true }),
    ...(d.sharedMemory !== undefined && { sharedMemory: d.sharedMemory }),
    ...(d.outputSharedMemorySize !== undefined && { outputSharedMemorySize: d.outputSharedMemorySize }),
    ...(d.sequenceLength !== undefined && { sequenceLength: d.sequenceLength }),
    ...(d.sequenceIdStart !== undefined && { sequenceIdStart: d.sequenceIdStart }),
    ...(d.numOfSequences !== undefined && { numOfSequences: d.numOfSequences }),
    ...(d.maxThreads !== undefined && { maxThreads: d.maxThreads }),
  };
  return { ...base, options };
}

/** `tstriton perf --help`: every flag, by section. */
export function perfHelpText(): string {
  const width = 44;
  const rows = SECTIONS.map(
    (s) =>
      `${s.title}:\n${s.flags
        .map((f) => {
          const usage = `${f.names.join(', ')}${f.value ? ` ${f.value}` : ''}`;
          return usage.length < width ? `  ${usage.padEnd(width)}${f.summary}` : `  ${usage}\n  ${' '.repeat(width)}${f.summary}`;
        })
        .join('\n')}`,
  );
  return [
    'Usage: tstriton perf -m model [-u host:port] [-i http|grpc] [--concurrency-range start:end:step] [flags]',
    '',
    "Measures a model on any KServe v2 server as Triton's perf_analyzer does, with its flags and its report:",
    '  tstriton perf -m add_sub --shape a:4 --shape b:4 --concurrency-range 1:8:7',
    '',
    ...rows.flatMap((r) => [r, '']),
  ].join('\n');
}

function oneOf<T extends string>(flag: string, value: string, values: readonly T[]): T {
  if (!(values as readonly string[]).includes(value)) throw invalidConfig(`${flag} ${value}: expected ${values.join(' or ')}`);
  return value as T;
}

function integer(flag: string, value: string, min: number): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < min) throw invalidConfig(`${flag} ${value}: expected an integer of at least ${min}`);
  return n;
}

function positive(flag: string, value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n <= 0) throw invalidConfig(`${flag} ${value}: expected a number above 0`);
  return n;
}

function percentile(flag: string, value: string): number {
  const n = integer(flag, value, 1);
  if (n > 99) throw invalidConfig(`${flag} ${value}: expected a percentile from 1 to 99`);
  return n;
}

function bool(flag: string, value: string): boolean {
  return ['true', '1'].includes(oneOf(flag, value.toLowerCase(), ['true', 'false', '1', '0']));
}

/** perf_analyzer's ranges: `start`, `start:end`, `start:end:step` (step 1 by default; a rate may be fractional). */
function range(flag: string, value: string, fractional: boolean): number[] {
  const parts = value.split(':');
  const read = (text: string): number => (fractional ? positive(flag, text) : integer(flag, text, 1));
  if (parts.length > 3 || parts.some((p) => p === '')) throw invalidConfig(`${flag} ${value}: expected start[:end[:step]]`);
  const [start, end, step] = [read(parts[0] as string), parts[1] === undefined ? undefined : read(parts[1]), parts[2] === undefined ? 1 : read(parts[2])];
  const last = end ?? start;
  if (last < start) throw invalidConfig(`${flag} ${value}: the end is below the start`);
  const out: number[] = [];
  for (let v = start; v <= last + 1e-9; v += step) out.push(v);
  return out;
}

function shape(d: Draft, value: string, flag: string): void {
  const at = value.lastIndexOf(':');
  const dims = value.slice(at + 1).split(',');
  if (at <= 0 || dims.some((x) => !/^\d+$/.test(x))) throw invalidConfig(`${flag} ${value}: expected name:d1,d2,... with whole dimensions`);
  d.shapes[value.slice(0, at)] = dims.map(Number);
}

function header(d: Draft, value: string, flag: string): void {
  const at = value.indexOf(':');
  if (at <= 0) throw invalidConfig(`${flag} ${value}: expected Name:Value`);
  d.headers[value.slice(0, at).trim()] = value.slice(at + 1).trim();
}

function https(d: Draft, set: (tls: Draft['tls']) => void): void {
  d.httpsTls = true;
  set(d.tls);
}

function pemFile(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw invalidConfig(`cannot read ${path}: ${(err as Error).message}`);
  }
}
