/**
 * One tstriton process against P processes side by side (one port each), on a machine with many cores: how far
 * one event loop carries small requests, and how far worker instances carry a compute-bound model, next to what
 * P processes do on the same cores, measured in the same run.
 *
 *   bash bench/cores/many-core.sh [P] [flags]      (builds if needed, then runs this with the flags)
 *   node dist/bench/cores/scale.js --processes 8 [--server-cpus 0-7 --load-cpus 8-15 --experiments identity,mlp
 *        --identity-concurrency 384 --mlp-concurrency 128 --mlp-instances 1,2,4,8 --rounds 3 --duration 3
 *        --warmup 1 --no-pin --no-write]
 *
 * - identity: `identity_fp32` in-process (FP32 [1,16], HTTP binary tensors, as bench:http) in one process, against
 *   the same in P processes.
 * - mlp: test/fixtures/onnx/mlp_1024x4.onnx as `onnxModel` worker instances (one intra-op thread each, dynamic
 *   batching up to 64 rows, one row per request) in one process with 1, 2, 4, ... instances, against P processes
 *   of one instance each.
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

type Experiment = 'identity' | 'mlp';
const EXPERIMENTS: readonly Experiment[] = ['identity', 'mlp'];

/** The issue's figures, measured on a 16-core machine, shown beside this run's. */
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
  const mlpInstances = (f['mlp-instances'].length > 0 ? f['mlp-instances'] : powersOfTwoUpTo(processes)).map(Number);
  for (const k of mlpInstances) if (!(Number.isInteger(k) && k >= 1)) throw new UsageError(`--mlp-instances: expected whole numbers ≥ 1, got ${mlpInstances.join(',')}`);
  const variants = (experiments.includes('identity') ? 2 : 0) + (experiments.includes('mlp') ? mlpInstances.length + 1 : 0);
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
      log(`  round ${r + 1} ${v.label.padEnd(28)} ${fmtInt(t.rps).padStart(8)} req/s  p50 ${fmtUs(t.p50).padStart(6)} µs  busiest load generator ${(t.clientCpu * 100).toFixed(0)} %`);
    }
  }
}

// ---- the experiments -----------------------------------------------------------------------------

const IDENTITY_PAYLOAD = buildPayload('binary');

async function identityExperiment(gens: LoadGen[], o: Options): Promise<Variant[]> {
  const one = await startServer('identity-1', { model: 'identity' }, o);
  const many = await Promise.all(Array.from({ length: o.processes }, (_, i) => startServer(`identity-${i + 2}`, { model: 'identity' }, o)));
  try {
    for (const s of [one, ...many]) {
      const problem = checkResponse('binary', await post(s.port, IDENTITY_PAYLOAD));
      if (problem) throw new Error(`${s.name}: ${problem}`);
    }
    const variants: Variant[] = [
      { label: '1 process', servers: [one], samples: [] },
      { label: `${o.processes} processes`, servers: many, samples: [] },
    ];
    log(`identity: 1 process against ${o.processes}, c=${o.identityConcurrency}`);
    await runLoad(gens, [one], IDENTITY_PAYLOAD, o.identityConcurrency, { ...o, warmupS: 0, durationS: 1 }, 'warm-up');
    await runLoad(gens, many, IDENTITY_PAYLOAD, o.identityConcurrency, { ...o, warmupS: 0, durationS: 1 }, 'warm-up');
    await compare(variants, gens, IDENTITY_PAYLOAD, o.identityConcurrency, o);
    return variants;
  } finally {
    await Promise.all([one, ...many].map((s) => s.stop()));
  }
}

async function mlpExperiment(gens: LoadGen[], o: Options): Promise<Variant[]> {
  const payload = binaryRequest('mlp', [{ name: 'x', datatype: 'FP32', shape: [1, MLP_WIDTH], bytes: fp32Bytes(testValues(MLP_WIDTH)) }], ['y']);
  const ones = await Promise.all(o.mlpInstances.map((k) => startServer(`mlp-1x${k}`, { model: 'mlp', instances: k }, o)));
  const many = await Promise.all(Array.from({ length: o.processes }, (_, i) => startServer(`mlp-p${i + 1}`, { model: 'mlp', instances: 1 }, o)));
  try {
    let expected: Float32Array | undefined;
    for (const s of [...ones, ...many]) {
      const y = fp32Of((await inferOnce(s.port, payload)).get('y'));
      expected ??= y;
      if (y.length !== MLP_WIDTH || y.some((v, i) => v !== expected?.[i])) throw new Error(`${s.name}: y differs from the first server's`);
    }
    const variants: Variant[] = [
      ...o.mlpInstances.map((k, i) => ({ label: `1 process, ${k} instance${k > 1 ? 's' : ''}`, servers: [ones[i] as ChildProc], samples: [] })),
      { label: `${o.processes} processes of 1 instance`, servers: many, samples: [] },
    ];
    log(`mlp: 1 process with ${o.mlpInstances.join(', ')} instances against ${o.processes} processes of 1, c=${o.mlpConcurrency}`);
    for (const v of variants) await runLoad(gens, v.servers, payload, o.mlpConcurrency, { ...o, warmupS: 0, durationS: 1 }, 'warm-up');
    await compare(variants, gens, payload, o.mlpConcurrency, o);
    return variants;
  } finally {
    await Promise.all([...ones, ...many].map((s) => s.stop()));
  }
}

// ---- report --------------------------------------------------------------------------------------

function table(variants: Variant[], concurrency: number): string {
  const base = median((variants[0] as Variant).samples.map((s) => s.rps));
  const rows = ['| variant | c | req/s | ratio | p50 µs | busiest load generator |', '| --- | ---: | ---: | ---: | ---: | ---: |'];
  for (const v of variants) {
    const rps = median(v.samples.map((s) => s.rps));
    const cpu = Math.max(...v.samples.map((s) => s.clientCpu));
    rows.push(`| ${v.label} | ${concurrency} | ${fmtInt(rps)} | ${(rps / base).toFixed(2)}× | ${fmtUs(median(v.samples.map((s) => s.p50)))} | ${(cpu * 100).toFixed(0)} % |`);
  }
  return rows.join('\n');
}

async function main(ctx: BenchContext): Promise<BenchOutcome> {
  const o = parseOptions();
  const pinned = o.pin && canPin();
  const gens = startLoadGens(o);
  log(
    `bench:cores scale: ${os.availableParallelism()} CPUs, P=${o.processes}, ${gens.length} load generators` +
      (pinned ? `; servers on CPUs ${o.serverCpus}, load generators on ${cpuList(o.loadCpus[0] as number, o.loadCpus[o.loadCpus.length - 1] as number)}` : '; not pinned'),
  );
  const parts: string[] = [];
  if (o.experiments.includes('identity')) {
    parts.push(`**identity_fp32 in-process**, FP32 [1,16], HTTP binary tensors:`, '', table(await identityExperiment(gens, o), o.identityConcurrency), '');
  }
  if (o.experiments.includes('mlp')) {
    parts.push(`**mlp_1024x4 ONNX**, \`onnxModel\` worker instances of 1 intra-op thread, 1 row per request:`, '', table(await mlpExperiment(gens, o), o.mlpConcurrency), '');
  }
  for (const g of gens) g.exit();

  const body = [
    `### Many cores: one process against ${o.processes}`,
    '',
    ...provenanceLines({
      startedAt: ctx.startedAt,
      command: `bash bench/cores/many-core.sh ${o.processes}`,
      source: `bench/cores/scale.ts, ${ctx.elapsedS().toFixed(0)} s`,
      loads: ctx.loads(),
      loadNote: 'the servers and the load generators add up to the number of CPUs',
    }),
    '',
    ...parts,
    `Servers ${pinned ? `pinned (every thread) to CPUs ${o.serverCpus}` : 'not pinned'}; ${gens.length} load generator processes` +
      `${pinned ? ` pinned to CPUs ${o.loadCpus.join(',')}` : ''}, generator i sending to server i mod P over raw keep-alive`,
    `HTTP/1.1 connections (c in all, shared out evenly). ${o.rounds} rounds of ${o.warmupS} s warm-up + ${o.durationS} s measured per variant, the`,
    'order reversed every other round; medians over rounds. A busiest load generator near 100 % means the load, not',
    'the servers, set the figure.',
    '',
    "The issue's figures (16-core machine), for comparison:",
    '',
    REFERENCE,
  ].join('\n');
  return { key: 'cores-scale', body, write: o.write, allMet: true };
}

runBench('bench:cores scale', WATCHDOG_MS, main);
