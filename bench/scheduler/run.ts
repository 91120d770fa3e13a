/**
 * Dynamic batching scheduler benchmark: four measurements, each a candidate against its baseline measured in
 * the same run, back to back in every round (ABBA order across rounds), medians over rounds.
 *
 *   npm run build && node dist/bench/scheduler/run.js [--rounds 5 --duration 2 --warmup 0.5 --spin-ms 4
 *                                                      --only a,b,c,d --profile --no-write]
 *
 * (a) dynamic batching on a compute-bound ONNX model (test/fixtures/onnx/mlp_1024x4.onnx), closed loop c=64:
 *     maxBatchSize 64 against maxBatchSize 1; bar ≥ 3× throughput.
 * (b) 2 worker instances against 1 on a compute-bound callable (bench/scheduler/spin-model.ts, a fixed CPU
 *     loop per row), at a fixed offered load above what 2 instances can serve; bar ≥ 1.6× throughput.
 * (c) dynamic batching on against off for an in-process identity at c=1; bar: p50 difference ≤ 20 µs.
 * (d) identity_fp32 (16 FP32) as an ONNX model in a worker instance, c=32, against a bare node:http server
 *     running the same model in an in-process onnxruntime session; bar ≥ 0.65× throughput.
 *
 * Servers run in child processes, the load generator (raw keep-alive sockets, binary tensor requests) in
 * another; nothing is pinned (a worker-instance server needs its two threads on two cores). Results are
 * printed and written to the scheduler block of docs/performance.md.
 */
import * as path from 'node:path';
import { log, runBench, type BenchContext, type BenchOutcome } from '../harness/bench-run';
import { ChildProc } from '../harness/child-proc';
import { machine, provenanceLines } from '../harness/doc-block';
import { binaryRequest, fp32Bytes, fp32Of, inferOnce, modelCounts, rawRequest, testValues, type Payload } from '../harness/kserve';
import { LoadGen, type LoadSpec } from '../harness/loadgen';
import { abba, describeSample, measure, type Sample } from '../harness/measure';
import { NO_WRITE_FLAG, parseFlags, PROFILE_FLAG, UsageError, windowFlags, windowOptions, type WindowOptions } from '../harness/options';
import { CpuProfiles } from '../harness/profile-top';
import { repoRoot } from '../harness/repo-root';
import { fmtInt, fmtUs, median, range } from '../harness/stats';
import type { OursConfig } from './server-ours';
import { spin } from './spin-model';

const WATCHDOG_MS = 230_000;
const BARS = { batchingGain: 3, instanceScaling: 1.6, p50DeltaUs: 20, workerVsOrt: 0.65 };
const MLP_WIDTH = 1024;

type ExperimentId = 'a' | 'b' | 'c' | 'd';
const EXPERIMENTS: readonly ExperimentId[] = ['a', 'b', 'c', 'd'];

interface Options extends WindowOptions {
  spinMs: number;
  only: ExperimentId[];
  profile: boolean;
  write: boolean;
}

/** Samples per round: candidate and baseline of each experiment, and (d)'s reference. */
const perRoundOf = (o: Pick<Options, 'only'>) => o.only.length * 2 + (o.only.includes('d') ? 1 : 0) - (o.only.includes('c') ? 1 : 0);

function parseOptions(): Options {
  const f = parseFlags('node dist/bench/scheduler/run.js [options]', {
    ...windowFlags({ rounds: 5, duration: 2, warmup: 0.5 }),
    'spin-ms': { type: 'number', default: 4, help: "CPU time per row of (b)'s worker callable, ms" },
    only: { type: 'list', default: EXPERIMENTS, help: 'the experiments to run (a, b, c, d)' },
    profile: PROFILE_FLAG,
    'no-write': NO_WRITE_FLAG,
  });
  const only = f.only as ExperimentId[];
  for (const e of only) if (!EXPERIMENTS.includes(e)) throw new UsageError(`unknown experiment ${e}`);
  if (!(f['spin-ms'] > 0)) throw new UsageError(`--spin-ms ${f['spin-ms']}: expected a positive number of milliseconds`);
  return {
    ...windowOptions(f, perRoundOf({ only }), 150),
    spinMs: f['spin-ms'],
    only,
    profile: f.profile,
    // A profiled server is slower: its figures do not go into the docs.
    write: !f['no-write'] && !f.profile,
  };
}

// ---------------------------------------------------------------------------------------------------------
// Experiments

interface Variant {
  label: string;
  server: 'ours' | 'ort';
  /** The model on our server, whose statistics give the mean batch size. */
  model?: string;
  payload: Payload;
  load: Omit<LoadSpec, 'port' | 'request' | 'warmupMs' | 'durationMs'>;
}

type Counts = Awaited<ReturnType<typeof modelCounts>>;

/** A sample with the mean batch size of the executions it caused (our server only). */
interface Run extends Sample {
  meanBatch: number;
}

interface Experiment {
  id: ExperimentId;
  title: string;
  loadText: string;
  candidate: Variant;
  baseline: Variant;
  /** Measured in the same rounds for context; not part of the verdict. */
  reference?: Variant;
  /** Candidate and baseline share one load run, their requests alternating on each connection. */
  interleaved?: boolean;
  cand: Run[];
  base: Run[];
  ref: Run[];
}

const fp32Input = (model: string, input: string, values: Float32Array, shape: number[], output: string) =>
  binaryRequest(model, [{ name: input, datatype: 'FP32', shape, bytes: fp32Bytes(values) }], [output]);

const ours = (model: string, input: string, values: Float32Array, shape: number[], output: string) => ({
  server: 'ours' as const,
  model,
  payload: fp32Input(model, input, values, shape, output),
});

function experiments(o: Options, spinRate: number): Experiment[] {
  const mlp = (maxBatchSize: number): Variant => ({
    label: `maxBatchSize ${maxBatchSize}`,
    ...ours(`mlp_b${maxBatchSize}`, 'x', testValues(MLP_WIDTH), [1, MLP_WIDTH], 'y'),
    load: { concurrency: 64 },
  });
  const spinVariant = (count: number): Variant => ({
    label: `${count} worker instance${count > 1 ? 's' : ''}`,
    ...ours(`spin_x${count}`, 'INPUT0', new Float32Array([0.5]), [1, 1], 'OUTPUT0'),
    load: { concurrency: 64, rate: spinRate },
  });
  const identity = (batched: boolean): Variant => ({
    label: batched ? 'dynamic batcher on (maxBatchSize 64)' : 'dynamic batcher off (batcher: null)',
    ...ours(batched ? 'identity_batched' : 'identity_unbatched', 'INPUT0', testValues(16), [1, 16], 'OUTPUT0'),
    load: { concurrency: 1 },
  });
  const all: Experiment[] = [
    {
      id: 'a',
      title: 'Dynamic batching, compute-bound ONNX model (mlp_1024x4, one worker instance, 1 intra-op thread)',
      loadText: 'closed loop, c=64, x FP32 [1,1024]',
      candidate: mlp(64),
      baseline: mlp(1),
      cand: [],
      base: [],
      ref: [],
    },
    {
      id: 'b',
      title: `Instances, compute-bound worker callable (${o.spinMs} ms CPU loop per row, maxBatchSize 8)`,
      loadText: `open loop, ${fmtInt(spinRate)} req/s offered, ≤ 64 in flight, INPUT0 FP32 [1,1]`,
      candidate: spinVariant(2),
      baseline: spinVariant(1),
      cand: [],
      base: [],
      ref: [],
    },
    {
      id: 'c',
      title: 'Batching on vs off at c=1, in-process identity (`@batch`)',
      loadText: 'closed loop, c=1, INPUT0 FP32 [1,16]; requests alternate between the two models',
      interleaved: true,
      candidate: identity(true),
      baseline: identity(false),
      cand: [],
      base: [],
      ref: [],
    },
    {
      id: 'd',
      title: 'identity_fp32 ONNX model in a worker instance vs node:http + in-process onnxruntime',
      loadText: 'closed loop, c=32, INPUT0 FP32 [1,16]',
      candidate: {
        label: 'tstriton, onnxModel worker instance (maxBatchSize 64)',
        ...ours('identity_fp32', 'INPUT0', testValues(16), [1, 16], 'OUTPUT0'),
        load: { concurrency: 32 },
      },
      reference: {
        label: 'reference: tstriton, in-process `@batch` identity',
        ...ours('identity_batched', 'INPUT0', testValues(16), [1, 16], 'OUTPUT0'),
        load: { concurrency: 32 },
      },
      baseline: {
        label: 'node:http + ORT run() per request, main thread',
        server: 'ort',
        payload: fp32Input('identity_fp32', 'INPUT0', testValues(16), [1, 16], 'OUTPUT0'),
        load: { concurrency: 32 },
      },
      cand: [],
      base: [],
      ref: [],
    },
  ];
  return all.filter((e) => o.only.includes(e.id));
}

/** Checks each variant's answer once before anything is measured. */
async function verify(e: Experiment, servers: Record<'ours' | 'ort', ChildProc | undefined>, spinIterations: number): Promise<void> {
  const answer = async (v: Variant) => inferOnce((servers[v.server] as ChildProc).port, v.payload);
  const same = (a: Float32Array, b: Float32Array) => a.length === b.length && a.every((x, i) => x === b[i]);
  if (e.id === 'a') {
    const [c, b] = [fp32Of((await answer(e.candidate)).get('y')), fp32Of((await answer(e.baseline)).get('y'))];
    if (c.length !== MLP_WIDTH || !same(c, b) || !c.some((x) => x > 0)) throw new Error('(a): mlp_b64 and mlp_b1 disagree or answer zeros');
  } else if (e.id === 'b') {
    const want = spin(4, spinIterations) % 1024;
    for (const v of [e.candidate, e.baseline]) {
      const got = fp32Of((await answer(v)).get('OUTPUT0'));
      if (got.length !== 1 || got[0] !== want) throw new Error(`(b) ${v.label}: OUTPUT0 ${Array.from(got).join(',')} != ${want}`);
    }
  } else {
    for (const v of [e.candidate, e.baseline]) {
      const got = fp32Of((await answer(v)).get('OUTPUT0'));
      if (!same(got, testValues(16))) throw new Error(`(${e.id}) ${v.label}: OUTPUT0 != INPUT0`);
    }
  }
}

/** Iterations of the spin loop that take `ms` on this machine (the fastest of several trials: the least disturbed). */
function calibrateSpin(ms: number): number {
  const trial = 200_000;
  let best = Infinity;
  for (let i = 0; i < 15; i++) {
    const t0 = performance.now();
    spin(i, trial);
    best = Math.min(best, performance.now() - t0);
  }
  return Math.round((trial * ms) / best);
}

// ---------------------------------------------------------------------------------------------------------
// Report

interface Verdict {
  result: string;
  bar: string;
  met: boolean;
}

function verdict(e: Experiment): Verdict {
  const pairs = e.cand.map((c, i) => [c, e.base[i] as Sample] as const);
  if (e.id === 'c') {
    // The median of the paired (same-round) differences: the machine's drift between rounds cancels.
    const deltas = pairs.map(([c, b]) => c.p50 - b.p50);
    const d = median(deltas);
    return {
      result: `${d >= 0 ? '+' : ''}${d.toFixed(1)} µs p50${deltas.length > 1 ? ` (per round ${range(deltas, 1)})` : ''}`,
      bar: `≤ ${BARS.p50DeltaUs} µs`,
      met: Math.abs(d) <= BARS.p50DeltaUs,
    };
  }
  const ratio = median(e.cand.map((s) => s.rps)) / median(e.base.map((s) => s.rps));
  const bar = e.id === 'a' ? BARS.batchingGain : e.id === 'b' ? BARS.instanceScaling : BARS.workerVsOrt;
  const perRound = pairs.map(([c, b]) => c.rps / b.rps);
  return { result: `${ratio.toFixed(2)}×${perRound.length > 1 ? ` (per round ${range(perRound)})` : ''}`, bar: `≥ ${bar}×`, met: ratio >= bar };
}

function summaryRow(s: Run[]): string {
  const rps = median(s.map((x) => x.rps));
  const p50 = median(s.map((x) => x.p50));
  const p99 = median(s.map((x) => x.p99));
  const cpu = median(s.map((x) => x.serverCpuPerReq));
  const cores = median(s.map((x) => x.usage.runNs / (x.elapsedMs * 1e6)));
  const waiting = median(s.map((x) => x.usage.waitNs / (x.elapsedMs * 1e6)));
  const batch = median(s.map((x) => x.meanBatch));
  return `${fmtInt(rps)} | ${fmtUs(p50)} | ${fmtUs(p99)} | ${cpu.toFixed(0)} | ${cores.toFixed(2)} | ${waiting.toFixed(2)} | ${Number.isFinite(batch) ? batch.toFixed(1) : '–'}`;
}

/** One line per experiment on what the per-variant figures say about its result. */
function readings(e: Experiment): string[] {
  const m = (xs: Run[], f: (x: Run) => number) => median(xs.map(f));
  const cores = (xs: Run[]) => m(xs, (x) => x.usage.runNs / (x.elapsedMs * 1e6));
  const waiting = (xs: Run[]) => m(xs, (x) => x.usage.waitNs / (x.elapsedMs * 1e6));
  const cpu = (xs: Run[]) => m(xs, (x) => x.serverCpuPerReq);
  switch (e.id) {
    case 'a':
      return [
        `(a) Batches of ${m(e.cand, (x) => x.meanBatch).toFixed(1)} requests on average at maxBatchSize 64; server CPU per request ${cpu(e.cand).toFixed(0)} µs batched vs ${cpu(e.base).toFixed(0)} µs one by one.`,
      ];
    case 'b':
      return [
        `(b) The 2-instance server got ${cores(e.cand).toFixed(2)} cores (and waited for a CPU ${waiting(e.cand).toFixed(2)} cores' worth), the 1-instance server ${cores(e.base).toFixed(2)} (${waiting(e.base).toFixed(2)});` +
          ` CPU per request ${cpu(e.cand).toFixed(0)} vs ${cpu(e.base).toFixed(0)} µs. Two instances can only run twice as fast with two free cores:` +
          (cores(e.cand) < 1.6
            ? ' the machine did not have them during this run (other work), so this ratio measures the machine, not the scheduler.'
            : ' the machine had them.'),
      ];
    case 'c':
      return [];
    case 'd':
      return [
        `(d) Server CPU per request: ours ${cpu(e.cand).toFixed(0)} µs with the worker instance, ${cpu(e.ref).toFixed(0)} µs for the in-process reference (no worker),` +
          ` baseline ${cpu(e.base).toFixed(0)} µs. The worker hand-off costs ${(cpu(e.cand) - cpu(e.ref)).toFixed(0)} µs per request (batches of ${m(e.cand, (x) => x.meanBatch).toFixed(1)});` +
          ' the rest of the gap is the per-request HTTP and model path, which the reference shares.',
      ];
  }
}

function report(o: Options, exps: Experiment[], ctx: BenchContext, spinIterations: number, spinRate: number): { body: string; allMet: boolean } {
  const verdicts = exps.map((e) => ({ e, v: verdict(e) }));
  const lines = [
    '## Dynamic batching scheduler',
    '',
    ...provenanceLines({
      startedAt: ctx.startedAt,
      command: 'node dist/bench/scheduler/run.js',
      source: `bench/scheduler/run.ts, ${ctx.elapsedS().toFixed(0)} s`,
      loads: ctx.loads(),
      loadNote: 'other work shared the machine',
    }),
    '',
    '| # | measure | candidate | baseline | load | result | bar | |',
    '| --- | --- | --- | --- | --- | ---: | ---: | --- |',
    ...verdicts.map(
      ({ e, v }) => `| ${e.id} | ${e.title} | ${e.candidate.label} | ${e.baseline.label} | ${e.loadText} | ${v.result} | ${v.bar} | ${v.met ? 'met' : '**not met**'} |`,
    ),
    '',
    'Per variant (medians over rounds). Latency per request at the client, send to last byte. Server CPU: user + system',
    "time of the server process (all threads) per response in the window. Cores: the server's threads' time on a CPU over",
    'the window (how much CPU it got); waiting: their time runnable but waiting for a CPU over the window (how much more',
    'it wanted and did not get: the machine was busy), both from /proc/self/task/*/schedstat. Mean batch: requests per',
    'execution on our server (model statistics).',
    '',
    '| # | variant | req/s | p50 µs | p99 µs | server CPU µs/req | cores | waiting | mean batch |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...exps.flatMap((e) => [
      `| ${e.id} | ${e.candidate.label} | ${summaryRow(e.cand)} |`,
      `| ${e.id} | ${e.baseline.label} | ${summaryRow(e.base)} |`,
      ...(e.reference ? [`| ${e.id} | ${e.reference.label} | ${summaryRow(e.ref)} |`] : []),
    ]),
    '',
    ...exps.flatMap(readings).map((r) => `- ${r}`),
    '',
    '**Method.**',
    '- *Ours*: one `new Triton({ httpThreadCount: 1, httpPort: 0, allowGrpc: false, allowMetrics: false, logLevel: "silent" })` process',
    '  (bench/scheduler/server-ours.ts) with every model bound; each is measured alone. ONNX models use `onnxModel({ path,',
    '  maxBatchSize, intraOpNumThreads: 1 })`, one worker thread each; the dynamic batcher has its defaults (no queue delay).',
    `- (a) \`test/fixtures/onnx/mlp_1024x4.onnx\`: 4 × relu(x·W), W 1024×1024 (weights computed in the graph and`,
    '  constant-folded at load). At batch 1 each run streams 16 MB of weights for one row; batched, one pass serves many rows.',
    `- (b) \`workers({ module: spin-model, devices: [cpu] | [cpu, cpu] })\`, maxBatchSize 8: ${fmtInt(spinIterations)} xorshift steps per`,
    `  row (≈ ${o.spinMs} ms, calibrated at start). Offered load ${fmtInt(spinRate)} req/s = 1.2 × what two cores could serve, so both`,
    '  configurations run saturated and the ratio is their capacity ratio; requests due while 64 are in flight are skipped.',
    '- (c) the same `@batch` identity bound twice, `{ maxBatchSize: 64 }` (batcher on) and `{ maxBatchSize: 64, batcher: null }`;',
    '  one connection alternates requests to the two models, so both see the same machine, and each gets its own p50 (server CPU',
    '  and cores in its rows are those of the shared run).',
    '- (d) *Baseline*: bench/scheduler/server-ort.ts, bare `node:http` that parses the KServe binary request and runs',
    '  `test/fixtures/onnx/identity_fp32.onnx` with `await session.run()` on its main thread (1 intra-op, 1 inter-op thread,',
    '  all graph optimizations: the settings of our ONNX instances), one run per request, no batching.',
    '- Requests use the binary tensor extension (binary input, `binary_data: true` output). Every variant is checked once',
    '  (outputs equal across variants, or equal to the input / the expected loop result) before the load starts.',
    '- Load: bench/harness/loadgen.ts in its own process: raw keep-alive HTTP/1.1 sockets, pre-built request bytes; closed',
    '  loop at c connections, or open loop at a fixed rate (1 ms ticks). Nothing is pinned to a CPU.',
    `- Each variant warmed up 1 s first. Then ${o.rounds} rounds; in each, every variant runs ${o.warmupS} s warm-up + ${o.durationS} s measured,`,
    '  candidate and baseline back to back (ABBA order across rounds). Figures are medians over rounds; "per round" is the',
    '  range of the paired per-round ratios (or differences). The machine (2 vCPU) was shared with other work, so single',
    '  rounds scatter; the medians and paired ratios are the figures to read.',
    `- Bars: (a) ≥ ${BARS.batchingGain}×, (b) ≥ ${BARS.instanceScaling}×, (c) |p50 on − p50 off| ≤ ${BARS.p50DeltaUs} µs, (d) ≥ ${BARS.workerVsOrt}× (docs: peers_perf.md §4.3, G6/G7/G11/G1).`,
  ];
  return { body: lines.join('\n'), allMet: verdicts.every(({ v }) => v.met) };
}

// ---------------------------------------------------------------------------------------------------------

async function main(ctx: BenchContext): Promise<BenchOutcome> {
  const o = parseOptions();
  const fixtures = path.join(repoRoot(), 'test', 'fixtures', 'onnx');
  const profiles = new CpuProfiles('scheduler', o.profile);

  const spinIterations = calibrateSpin(o.spinMs);
  const spinRate = Math.round(1.2 * 2 * (1000 / o.spinMs));
  log(`bench:scheduler: ${machine()}; ${o.rounds} rounds × ${perRoundOf(o)} samples × (${o.warmupS} + ${o.durationS}) s; spin ${spinIterations} steps ≈ ${o.spinMs} ms`);

  const config: OursConfig = {
    mlpPath: path.join(fixtures, `mlp_${MLP_WIDTH}x4.onnx`),
    identityPath: path.join(fixtures, 'identity_fp32.onnx'),
    spinModule: path.join(__dirname, 'spin-model.js'),
    spinIterations,
    spinMaxBatchSize: 8,
  };
  const exps = experiments(o, spinRate);
  const needOrt = exps.some((e) => e.baseline.server === 'ort');
  const [ours, ort] = await Promise.all([
    ChildProc.start('ours', path.join(__dirname, 'server-ours.js'), { args: [JSON.stringify(config)], nodeArgs: profiles.nodeArgs }),
    needOrt ? ChildProc.start('node:http+ORT', path.join(__dirname, 'server-ort.js'), { args: [config.identityPath] }) : Promise.resolve(undefined),
  ]);
  const servers = { ours, ort };
  const load = LoadGen.start();
  const spec = (v: Variant, warmupMs: number, durationMs: number): LoadSpec => {
    const port = (servers[v.server] as ChildProc).port;
    return { ...v.load, port, request: rawRequest(v.payload, port).toString('base64'), warmupMs, durationMs };
  };
  const where = (e: Experiment, v: Variant) => `(${e.id}) ${v.label}`;

  for (const e of exps) await verify(e, servers, spinIterations);
  log('bench:scheduler: every variant answers correctly; warming up');
  const variants = (e: Experiment) => [e.baseline, e.candidate, ...(e.reference ? [e.reference] : [])];
  for (const e of exps) for (const v of variants(e)) await measure(load, servers[v.server] as ChildProc, spec(v, 0, 1000), where(e, v));

  const run = async (e: Experiment, v: Variant): Promise<Run> => {
    const server = servers[v.server] as ChildProc;
    const before = v.model ? await modelCounts(server.port, v.model) : undefined;
    const s = await measure(load, server, spec(v, o.warmupS * 1000, o.durationS * 1000), where(e, v));
    const after = v.model ? await modelCounts(server.port, v.model) : undefined;
    const meanBatch = before && after ? (after.inferences - before.inferences) / Math.max(1, after.executions - before.executions) : NaN;
    return { ...s, meanBatch };
  };
  /** One load run alternating the baseline's and the candidate's requests; each gets its own latencies. */
  const runInterleaved = async (round: number, e: Experiment, first: Variant, second: Variant): Promise<void> => {
    const server = servers.ours;
    const models = [first.model as string, second.model as string];
    const before = await Promise.all(models.map((m) => modelCounts(server.port, m)));
    const s = await measure(load, server, { ...spec(first, o.warmupS * 1000, o.durationS * 1000), alternates: [spec(second, 0, 0).request] }, `(${e.id})`);
    const after = await Promise.all(models.map((m) => modelCounts(server.port, m)));
    [first, second].forEach((v, i) => {
      const by = s.byRequest?.[i];
      if (!by) throw new Error(`(${e.id}): no latencies for ${v.label}`);
      const b = before[i] as Counts;
      const a = after[i] as Counts;
      const run: Run = { ...s, ...by, rps: (by.count * 1000) / s.elapsedMs, meanBatch: (a.inferences - b.inferences) / Math.max(1, a.executions - b.executions) };
      (v === e.candidate ? e.cand : e.base).push(run);
      log(`  round ${round} (${e.id}) ${v.label.padEnd(44).slice(0, 44)} ${fmtInt(run.rps).padStart(7)} req/s  p50 ${fmtUs(run.p50).padStart(6)} µs  p99 ${fmtUs(run.p99).padStart(6)} µs  (interleaved)`);
    });
  };
  for (let r = 0; r < o.rounds; r++) {
    for (const e of exps) {
      if (e.interleaved) {
        // Which goes first on the connection alternates across rounds.
        const [first, second] = abba(r, [e.baseline, e.candidate]) as [Variant, Variant];
        await runInterleaved(r + 1, e, first, second);
        continue;
      }
      // ABBA across rounds; the reference (if any) runs between them.
      for (const v of abba(r, [e.baseline, e.reference, e.candidate])) {
        if (!v) continue;
        const s = await run(e, v);
        (v === e.candidate ? e.cand : v === e.baseline ? e.base : e.ref).push(s);
        const skipped = v.load.rate !== undefined ? `  skipped ${s.skipped}/${s.offered}` : '';
        const batch = Number.isFinite(s.meanBatch) ? `  batch ${s.meanBatch.toFixed(1)}` : '';
        const cores = `  cores ${(s.usage.runNs / (s.elapsedMs * 1e6)).toFixed(2)} (waiting ${(s.usage.waitNs / (s.elapsedMs * 1e6)).toFixed(2)})`;
        log(`  round ${r + 1} (${e.id}) ${v.label.padEnd(44).slice(0, 44)} ${describeSample(s)}${cores}${batch}${skipped}`);
      }
    }
  }

  load.exit();
  await Promise.all([ours.stop(), ort?.stop()]);
  return {
    key: 'scheduler',
    ...report(o, exps, ctx, spinIterations, spinRate),
    appendix: o.profile ? profiles.summaries(25) : undefined,
    write: o.write,
  };
}

runBench('bench:scheduler', WATCHDOG_MS, main);
