/**
 * One tstriton process against P processes side by side (one port each), on a machine with many cores: how far
 * one event loop carries small requests, how far P front-end threads in one process carry them, and how far
 * worker instances carry a compute-bound model behind one event loop and behind P front-end threads, next to what
 * P processes do on the same cores, measured in the same run.
 *
 *   bash bench/cores/many-core.sh [P] [flags]      (builds if needed, then runs this with the flags)
 *   node dist/bench/cores/scale.js --processes 8 [--server-cpus 0-7 --load-cpus 8-15 --experiments identity,mlp
 *        --identity-concurrency 384 --mlp-concurrency 128 --mlp-instances 1,2,4,8 --rounds 3 --duration 3
 *        --warmup 1 --no-pin --no-write]
 *
 * - identity: `identity_fp32` in-process (FP32 [1,16], HTTP binary tensors, as bench:http) in one process on one
 *   thread, in one process with P front-end threads, and in P processes.
 * - mlp: test/fixtures/onnx/mlp_1024x4.onnx as `onnxModel` worker instances (one intra-op thread each, dynamic
 *   batching up to 64 rows, one row per request) in one process with 1, 2, 4, ... instances, on one thread and
 *   with P front-end threads, against P processes of one instance each.
 *
 * Every server sets `httpThreadCount`: 1 (the port served on the main thread) for the one-thread process and the P
 * processes, so that the default's automatic count does not change what they measure; P for the front-end-thread
 * variants (skipped when P is 1: front-end threads need two or more), whose servers check that P front-end
 * threads run. The block states the goals' two ratios against their bars: one process with P front-end threads
 * ≥ 0.75× P processes (identity), and with P front-end threads 8 mlp instances ≥ 3× 1 instance.
 *
 * Servers (scale-server.ts) are pinned, all their threads, to the server CPUs; the load comes from L load
 * generator processes (the harness's, raw keep-alive HTTP/1.1 sockets), each pinned to one of the load CPUs, L a
 * multiple of P, load generator i sending to server i mod P, the connections shared out evenly. In every round
 * each variant runs once (the order reversed every other round); figures are medians over rounds. Results are
 * printed and, unless `--no-write`, written to the `cores-scale` block of docs/performance.md.
 */
import * as os from 'node:os';
import * as path from 'node:path';
import { log, runBench, type BenchContext, type BenchOutcome } from '../harness/bench-run';
import { canPin, ChildProc } from '../harness/child-proc';
import { provenanceLines } from '../harness/doc-block';
import { binaryRequest, fp32Bytes, fp32Of, inferOnce, post, rawRequest, testValues, type Payload } from '../harness/kserve';
import { LoadGen } from '../harness/loadgen';
import { abba } from '../harness/measure';
import { NO_PIN_FLAG, NO_WRITE_FLAG, parseFlags, UsageError, windowFlags, windowOptions, type WindowOptions } from '../harness/options';
import { fmtInt, fmtUs, median } from '../harness/stats';
import { buildPayload, checkResponse } from '../http/payloads';
import { cpuList, pinProcess } from './pin';
import type { ScaleServerConfig } from './scale-server';

/** The whole run is stopped past this, whatever it is doing. */
const WATCHDOG_MS = 540_000;
const MLP_WIDTH = 1024;
/** The progress lines' label column. */
const LABEL_WIDTH = 44;

type Experiment = 'identity' | 'mlp';
const EXPERIMENTS: readonly Experiment[] = ['identity', 'mlp'];

/** The goals' bars: one process with P front-end threads against P processes (identity), 8 mlp instances against 1 behind P front-end threads. */
const BARS = { identityThreadsVsProcesses: 0.75, mlpEightVsOne: 3 } as const;
/** The mlp instance count the mlp bar is set for. */
const MLP_BAR_INSTANCES = 8;

/** Reference figures (one event loop, measured 2026-11-26 on a 16-core machine), shown beside this run's. */
const REFERENCE = [
  '| measurement | req/s | ratio |',
  '| --- | ---: | ---: |',
  '| identity FP32 [1,16] in-process, c=384: 1 process | 20,894 | 1× |',
  '| identity, 8 processes | 161,677 | 7.7× |',
  '| mlp 1024×1024 ONNX, c=128–256: 1 process, 1 instance | 17,734 | 1× |',
  '| 1 process, 2 instances | 17,015 | 0.96× |',
  '| 1 process, 4 instances | 14,863 | 0.84× |',
  '| 1 process, 8 instances | 14,722 | 0.83× |',
  '| 8 processes of 1 instance | 68,414 | 3.86× |',
].join('\n');

interface Options extends WindowOptions {
  processes: number;
  serverCpus: string;
  loadCpus: number[];
  experiments: Experiment[];
  identityConcurrency: number;
  mlpConcurrency: number;
  mlpInstances: number[];
  pin: boolean;
  write: boolean;
}

/** The CPUs of a taskset-style list (`8-15`, `0,2,4-6`). */
function parseCpuList(text: string): number[] {
  const out: number[] = [];
  for (const part of text.split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) throw new UsageError(`expected a CPU list such as 0-7 or 0,2,4, got "${text}"`);
    const from = Number(m[1]);
    const to = Number(m[2] ?? m[1]);
    if (to < from) throw new UsageError(`expected a CPU list such as 0-7 or 0,2,4, got "${text}"`);
    for (let c = from; c <= to; c++) out.push(c);
  }
  return out;
}

const powersOfTwoUpTo = (n: number): string[] => {
  const out: string[] = [];
  for (let k = 1; k < n; k *= 2) out.push(String(k));
  return [...out, String(n)];
};

function parseOptions(): Options {
  const cpus = os.availableParallelism();
  const half = Math.max(1, Math.floor(cpus / 2));
  const f = parseFlags('node dist/bench/cores/scale.js [options]', {
    ...windowFlags({ rounds: 3, duration: 3, warmup: 1 }),
    processes: { type: 'number', default: half, help: 'P, the processes of the side-by-side variants' },
    'server-cpus': { type: 'list', default: [cpuList(0, half - 1)], help: 'CPUs of the servers (taskset list)' },
    'load-cpus': { type: 'list', default: [cpuList(Math.min(half, cpus - 1), cpus - 1)], help: 'CPUs of the load generators, one each (taskset list)' },
    experiments: { type: 'list', default: EXPERIMENTS, help: 'identity, mlp' },
    'identity-concurrency': { type: 'number', default: 384, help: 'connections of the identity experiment, in all' },
    'mlp-concurrency': { type: 'number', default: 128, help: 'connections of the mlp experiment, in all' },
    'mlp-instances': { type: 'list', default: [], help: 'worker instances of the one-process mlp variants (default 1, 2, 4, ... P)' },
    'no-pin': NO_PIN_FLAG,
    'no-write': NO_WRITE_FLAG,
  });
  const processes = f.processes;
  if (!(Number.isInteger(processes) && processes >= 1)) throw new UsageError(`--processes: expected a whole number ≥ 1, got ${processes}`);
  const experiments = f.experiments as Experiment[];
  for (const e of experiments) if (!EXPERIMENTS.includes(e)) throw new UsageError(`unknown experiment ${e}`);
  const mlpInstances = [...new Set((f['mlp-instances'].length > 0 ? f['mlp-instances'] : powersOfTwoUpTo(processes)).map(Number))];
  for (const k of mlpInstances) if (!(Number.isInteger(k) && k >= 1)) throw new UsageError(`--mlp-instances: expected whole numbers ≥ 1, got ${mlpInstances.join(',')}`);
  const threaded = processes >= 2 ? 2 : 1;
  const variants = (experiments.includes('identity') ? threaded + 1 : 0) + (experiments.includes('mlp') ? threaded * mlpInstances.length + 1 : 0);
  const conc = { identity: f['identity-concurrency'], mlp: f['mlp-concurrency'] };
  for (const [k, c] of Object.entries(conc)) if (!(Number.isInteger(c) && c >= 1)) throw new UsageError(`--${k}-concurrency: expected a whole number ≥ 1, got ${c}`);
  return {
    ...windowOptions(f, variants, 360),
    processes,
    serverCpus: f['server-cpus'].join(','),
    loadCpus: parseCpuList(f['load-cpus'].join(',')),
    experiments,
    identityConcurrency: conc.identity,
    mlpConcurrency: conc.mlp,
    mlpInstances,
    pin: !f['no-pin'],
    write: !f['no-write'],
  };
}

// ---- servers and load ----------------------------------------------------------------------------

/** One side of a comparison: its servers (one or P), and what they are. */
interface Variant {
  label: string;
  servers: ChildProc[];
  samples: Total[];
}

/** The load generators' figures added up over one run. */
interface Total {
  rps: number;
  /** The median of the load generators' p50s, µs. */
  p50: number;
  /** The busiest load generator's CPU, as a share of one core. */
  clientCpu: number;
}

async function startServer(name: string, cfg: ScaleServerConfig, o: Options): Promise<ChildProc> {
  const server = await ChildProc.start(name, path.join(__dirname, 'scale-server.js'), { args: [JSON.stringify(cfg)], readyTimeoutMs: 120_000 });
  if (o.pin && canPin()) pinProcess(server.proc.pid as number, o.serverCpus);
  return server;
}

/** The load generators of the run: L, a multiple of P, each pinned to one of the load CPUs in turn. */
function startLoadGens(o: Options): LoadGen[] {
  const wanted = Math.max(o.loadCpus.length, o.processes);
  const count = Math.ceil(wanted / o.processes) * o.processes;
  const pin = o.pin && canPin();
  return Array.from({ length: count }, (_, i) => LoadGen.start(pin ? o.loadCpus[i % o.loadCpus.length] : undefined));
}

/** Runs every load generator at once against `servers` (generator i → server i mod their count), `concurrency` shared out. */
async function runLoad(gens: LoadGen[], servers: ChildProc[], payload: Payload, concurrency: number, o: Options, what: string): Promise<Total> {
  const warmupMs = o.warmupS * 1000;
  const durationMs = o.durationS * 1000;
  const results = await Promise.all(
    gens.map((g, i) => {
      const server = servers[i % servers.length] as ChildProc;
      const c = Math.floor(concurrency / gens.length) + (i < concurrency % gens.length ? 1 : 0);
      const request = rawRequest(payload, server.port).toString('base64');
      return c === 0 ? undefined : g.run({ port: server.port, request, concurrency: c, warmupMs, durationMs, capMs: warmupMs + durationMs + 10_000 });
    }),
  );
  let rps = 0;
  let clientCpu = 0;
  const p50s: number[] = [];
  for (const r of results) {
    if (!r) continue;
    if (r.errors > 0) throw new Error(`${what}: ${r.errors} errors, first: ${r.firstError}`);
    if (r.count === 0) throw new Error(`${what}: a load generator had no response in its window`);
    rps += (r.count * 1000) / r.elapsedMs;
    clientCpu = Math.max(clientCpu, r.clientCpu);
    p50s.push(r.p50);
  }
  return { rps, p50: median(p50s), clientCpu };
}

/** Runs the variants' rounds; the first variant is the one the others are compared with. */
async function compare(variants: Variant[], gens: LoadGen[], payload: Payload, concurrency: number, o: Options): Promise<void> {
  for (let r = 0; r < o.rounds; r++) {
    for (const v of abba(r, variants)) {
      const t = await runLoad(gens, v.servers, payload, concurrency, o, v.label);
      v.samples.push(t);
      log(`  round ${r + 1} ${v.label.padEnd(LABEL_WIDTH)} ${fmtInt(t.rps).padStart(8)} req/s  p50 ${fmtUs(t.p50).padStart(6)} µs  busiest load generator ${(t.clientCpu * 100).toFixed(0)} %`);
    }
  }
}

// ---- the experiments -----------------------------------------------------------------------------

const IDENTITY_PAYLOAD = buildPayload('binary');

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;
const threadsLabel = (o: Options): string => `1 process, ${o.processes} front-end threads`;
/** Whether the run has the front-end-thread variants: P ≥ 2 (one front-end thread is the main thread). */
const hasThreads = (o: Options): boolean => o.processes >= 2;

/** The identity experiment's variants, the one-thread process first. */
interface IdentityRun {
  variants: Variant[];
  threads?: Variant;
  processes: Variant;
}

async function identityExperiment(gens: LoadGen[], o: Options): Promise<IdentityRun> {
  const started: ChildProc[] = [];
  const start = async (name: string, threads: number) => {
    const s = await startServer(name, { model: 'identity', threads }, o);
    started.push(s);
    return s;
  };
  try {
    const one = await start('identity-1', 1);
    const threaded = hasThreads(o) ? await start(`identity-1t${o.processes}`, o.processes) : undefined;
    const many = await Promise.all(Array.from({ length: o.processes }, (_, i) => start(`identity-p${i + 1}`, 1)));
    for (const s of started) {
      const problem = checkResponse('binary', await post(s.port, IDENTITY_PAYLOAD));
      if (problem) throw new Error(`${s.name}: ${problem}`);
    }
    const threads: Variant | undefined = threaded && { label: threadsLabel(o), servers: [threaded], samples: [] };
    const processes: Variant = { label: `${o.processes} process${o.processes === 1 ? '' : 'es'}`, servers: many, samples: [] };
    const variants: Variant[] = [{ label: '1 process', servers: [one], samples: [] }, ...(threads ? [threads] : []), processes];
    log(`identity: 1 process${threads ? ` (1 thread, and ${o.processes} front-end threads)` : ''} against ${o.processes}, c=${o.identityConcurrency}`);
    for (const v of variants) await runLoad(gens, v.servers, IDENTITY_PAYLOAD, o.identityConcurrency, { ...o, warmupS: 0, durationS: 1 }, 'warm-up');
    await compare(variants, gens, IDENTITY_PAYLOAD, o.identityConcurrency, o);
    return { variants, threads, processes };
  } finally {
    await Promise.all(started.map((s) => s.stop()));
  }
}

/** The mlp experiment's variants, the one-thread process with the first instance count first. */
interface MlpRun {
  variants: Variant[];
  /** By instance count: the one-thread process, and the process with P front-end threads. */
  oneThread: Map<number, Variant>;
  threads: Map<number, Variant>;
}

async function mlpExperiment(gens: LoadGen[], o: Options): Promise<MlpRun> {
  const payload = binaryRequest('mlp', [{ name: 'x', datatype: 'FP32', shape: [1, MLP_WIDTH], bytes: fp32Bytes(testValues(MLP_WIDTH)) }], ['y']);
  const started: ChildProc[] = [];
  const start = async (name: string, instances: number, threads: number) => {
    const s = await startServer(name, { model: 'mlp', instances, threads }, o);
    started.push(s);
    return s;
  };
  try {
    const ones = await Promise.all(o.mlpInstances.map((k) => start(`mlp-1x${k}`, k, 1)));
    const threaded = hasThreads(o) ? await Promise.all(o.mlpInstances.map((k) => start(`mlp-1t${o.processes}x${k}`, k, o.processes))) : [];
    const many = await Promise.all(Array.from({ length: o.processes }, (_, i) => start(`mlp-p${i + 1}`, 1, 1)));
    let expected: Float32Array | undefined;
    for (const s of started) {
      const y = fp32Of((await inferOnce(s.port, payload)).get('y'));
      expected ??= y;
      if (y.length !== MLP_WIDTH || y.some((v, i) => v !== expected?.[i])) throw new Error(`${s.name}: y differs from the first server's`);
    }
    const oneThread = new Map<number, Variant>();
    const threads = new Map<number, Variant>();
    o.mlpInstances.forEach((k, i) => {
      oneThread.set(k, { label: `1 process, ${plural(k, 'instance')}`, servers: [ones[i] as ChildProc], samples: [] });
      const t = threaded[i];
      if (t) threads.set(k, { label: `${threadsLabel(o)}, ${plural(k, 'instance')}`, servers: [t], samples: [] });
    });
    const variants: Variant[] = [...oneThread.values(), ...threads.values(), { label: `${o.processes} processes of 1 instance`, servers: many, samples: [] }];
    log(
      `mlp: 1 process with ${o.mlpInstances.join(', ')} instances (1 thread${threads.size > 0 ? `, and ${o.processes} front-end threads` : ''}) ` +
        `against ${o.processes} processes of 1, c=${o.mlpConcurrency}`,
    );
    for (const v of variants) await runLoad(gens, v.servers, payload, o.mlpConcurrency, { ...o, warmupS: 0, durationS: 1 }, 'warm-up');
    await compare(variants, gens, payload, o.mlpConcurrency, o);
    return { variants, oneThread, threads };
  } finally {
    await Promise.all(started.map((s) => s.stop()));
  }
}

// ---- report --------------------------------------------------------------------------------------

const rpsOf = (v: Variant): number => median(v.samples.map((s) => s.rps));
const times = (x: number): string => `${x.toFixed(2)}×`;

function table(variants: Variant[], concurrency: number): string {
  const base = rpsOf(variants[0] as Variant);
  const rows = ['| variant | c | req/s | ratio | p50 µs | busiest load generator |', '| --- | ---: | ---: | ---: | ---: | ---: |'];
  for (const v of variants) {
    const rps = rpsOf(v);
    const cpu = Math.max(...v.samples.map((s) => s.clientCpu));
    rows.push(`| ${v.label} | ${concurrency} | ${fmtInt(rps)} | ${times(rps / base)} | ${fmtUs(median(v.samples.map((s) => s.p50)))} | ${(cpu * 100).toFixed(0)} % |`);
  }
  return rows.join('\n');
}

/** A goal's line, and whether its bar was met (undefined: not measured in this run). */
interface Goal {
  line: string;
  met?: boolean;
}

const verdict = (ratio: number, bar: number): Pick<Goal, 'met'> & { text: string } =>
  ratio >= bar ? { met: true, text: `${times(ratio)}, bar ≥ ${bar}×: **met**` } : { met: false, text: `${times(ratio)}, bar ≥ ${bar}×: **NOT met**` };

function identityGoal(run: IdentityRun | undefined, o: Options): Goal {
  const what = `identity: one process with ${o.processes} front-end threads ÷ ${o.processes} processes side by side`;
  if (!run) return { line: `${what}: not measured (the identity experiment did not run)` };
  if (!run.threads) return { line: `${what}: not measured (P = 1; front-end threads need P ≥ 2)` };
  const v = verdict(rpsOf(run.threads) / rpsOf(run.processes), BARS.identityThreadsVsProcesses);
  return { line: `${what} = ${fmtInt(rpsOf(run.threads))} ÷ ${fmtInt(rpsOf(run.processes))} req/s = ${v.text}`, met: v.met };
}

function mlpGoal(run: MlpRun | undefined, o: Options): Goal {
  const k = MLP_BAR_INSTANCES;
  const what = `mlp: one process with ${o.processes} front-end threads, ${k} instances ÷ 1 instance`;
  if (!run) return { line: `${what}: not measured (the mlp experiment did not run)` };
  if (run.threads.size === 0) return { line: `${what}: not measured (P = 1; front-end threads need P ≥ 2)` };
  const one = run.threads.get(1);
  const eight = run.threads.get(k);
  const oneThreadRatio = (a: number): string => {
    const [o1, ok] = [run.oneThread.get(1), run.oneThread.get(a)];
    return o1 && ok ? ` (the one-thread process: ${a} ÷ 1 instance = ${times(rpsOf(ok) / rpsOf(o1))})` : '';
  };
  if (one && eight) {
    const v = verdict(rpsOf(eight) / rpsOf(one), BARS.mlpEightVsOne);
    return { line: `${what} = ${fmtInt(rpsOf(eight))} ÷ ${fmtInt(rpsOf(one))} req/s = ${v.text}${oneThreadRatio(k)}`, met: v.met };
  }
  const most = Math.max(...run.threads.keys());
  const most1 = run.threads.get(most);
  const shown = one && most1 && most > 1 ? `; ${most} instances ÷ 1 = ${times(rpsOf(most1) / rpsOf(one))}${oneThreadRatio(most)}` : '';
  return { line: `${what}: not measured (the bar is for ${k} instances against 1; this run had ${o.mlpInstances.join(', ')})${shown}` };
}

async function main(ctx: BenchContext): Promise<BenchOutcome> {
  const o = parseOptions();
  const pinned = o.pin && canPin();
  const gens = startLoadGens(o);
  const cpus = os.availableParallelism();
  log(
    `bench:cores scale: ${cpus} CPUs, P=${o.processes}, ${gens.length} load generators` +
      (pinned ? `; servers on CPUs ${o.serverCpus}, load generators on ${cpuList(o.loadCpus[0] as number, o.loadCpus[o.loadCpus.length - 1] as number)}` : '; not pinned'),
  );
  const parts: string[] = [];
  let identity: IdentityRun | undefined;
  let mlp: MlpRun | undefined;
  if (o.experiments.includes('identity')) {
    identity = await identityExperiment(gens, o);
    parts.push(`**identity_fp32 in-process**, FP32 [1,16], HTTP binary tensors:`, '', table(identity.variants, o.identityConcurrency), '');
  }
  if (o.experiments.includes('mlp')) {
    mlp = await mlpExperiment(gens, o);
    parts.push(`**mlp_1024x4 ONNX**, \`onnxModel\` worker instances of 1 intra-op thread, 1 row per request:`, '', table(mlp.variants, o.mlpConcurrency), '');
  }
  for (const g of gens) g.exit();

  const goals = [identityGoal(identity, o), mlpGoal(mlp, o)];
  const body = [
    `### Many cores: one process (one thread${hasThreads(o) ? `, and ${o.processes} front-end threads` : ''}) against ${o.processes}`,
    '',
    ...provenanceLines({
      startedAt: ctx.startedAt,
      command: `bash bench/cores/many-core.sh ${o.processes}`,
      source: `bench/cores/scale.ts, ${ctx.elapsedS().toFixed(0)} s`,
      loads: ctx.loads(),
      loadNote: 'the servers and the load generators add up to the number of CPUs',
    }),
    '',
    // Both goals count: a run that leaves one unmeasured does not show it met.
    `**Goals** (their bars are set for a machine of 16 cores or more${cpus < 16 ? `; this one has ${cpus}, so the figures only show that the run works` : ''}):`,
    '',
    ...goals.map((g) => `- ${g.line}`),
    '',
    ...parts,
    'The ratio column is against the table\'s first row. `httpThreadCount: 1` (the port served on the main thread) is set',
    `explicitly for the one-thread process and for each of the P processes; the front-end-thread variants set \`httpThreadCount: ${o.processes}\``,
    `and check that ${o.processes} front-end threads (\`tstriton-fe-<i>\`) run.${hasThreads(o) ? '' : ' With P = 1 there is no front-end-thread variant.'}`,
    `Servers ${pinned ? `pinned (every thread) to CPUs ${o.serverCpus}` : 'not pinned'}; ${gens.length} load generator processes` +
      `${pinned ? ` pinned to CPUs ${o.loadCpus.join(',')}` : ''}, generator i sending to server i mod P over raw keep-alive`,
    `HTTP/1.1 connections (c in all, shared out evenly; a one-process variant gets them all). ${plural(o.rounds, 'round')} of ${o.warmupS} s warm-up + ${o.durationS} s`,
    'measured per variant, the order reversed every other round; medians over rounds. A busiest load generator near 100 %',
    'means the load, not the servers, set the figure.',
    '',
    'Reference (one event loop, measured 2026-11-26 on a 16-core machine), for comparison:',
    '',
    REFERENCE,
  ].join('\n');
  return { key: 'cores-scale', body, write: o.write, allMet: goals.every((g) => g.met === true) };
}

runBench('bench:cores scale', WATCHDOG_MS, main);
