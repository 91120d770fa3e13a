/**
 * ONNX Runtime models benchmark: models served through tstriton (HTTP, binary tensors, one worker instance with
 * one intra-op thread) against the same models run directly with onnxruntime-node (same session options, same
 * batch sizes), measured in the same run, back to back in every round, medians over rounds. Also the OCR
 * pipeline's images/s through the `ocr` model at concurrency 1 and 8.
 *
 *   npm run build && node dist/bench/onnx/run.js [--rounds 3 --concurrency 2 --cells cnn:1,cnn:8,cnn:32,rec:4,rec:8,cnn32:1,mlp:8,mlp:64
 *                                                 --target-ms 1000 --warm-ms 2000 --profile --no-write]
 *
 * Before the first round every cell's served request runs for --warm-ms, so that the server's JIT has compiled
 * its request path (that takes a few thousand requests) and what is measured is a server in its steady state.
 * Count windows, not time windows: a sample is K batches (K ≈ target-ms of model work, at least 3) after a
 * warm-up, so a slow model's throughput is not rounded to whole batches. Served throughput is measured at c=2 (--concurrency)
 * (the next request is received and decoded while the worker runs the current one); the per-batch overhead at
 * c=1 (served p50 latency − direct median run time) is reported too.
 * Results are printed and written to the onnx block of docs/performance.md.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { log, runBench, type BenchContext, type BenchOutcome } from '../harness/bench-run';
import { ChildProc, usageDelta } from '../harness/child-proc';
import { machine, provenanceLines } from '../harness/doc-block';
import { bytesElement, binaryRequest, fp32Bytes, fp32Of, inferOnce, rawRequest, type Payload } from '../harness/kserve';
import { LoadGen, type LoadSpec } from '../harness/loadgen';
import { abba, measure, type Sample } from '../harness/measure';
import { NO_WRITE_FLAG, parseFlags, PROFILE_FLAG, UsageError } from '../harness/options';
import { CpuProfiles } from '../harness/profile-top';
import { repoRoot } from '../harness/repo-root';
import { fmtInt, median, range } from '../harness/stats';
import type { DirectCall, DirectResult } from './direct';
import { batchInput, benchModels, fingerprint, MAX_BATCH, MODEL_KEYS, type BenchModel, type ModelKey } from './models';

const WATCHDOG_MS = 235_000;
const BAR = 0.9;
const OCR_TEXT = 'HELLO WORLD 2026';

interface Options {
  rounds: number;
  /** Connections of the served throughput measurement. */
  concurrency: number;
  cells: { model: ModelKey; batch: number }[];
  targetMs: number;
  /** Served load per cell before the first round, ms. */
  warmMs: number;
  profile: boolean;
  write: boolean;
}

const DEFAULT_CELLS = ['cnn:1', 'cnn:8', 'cnn:32', 'rec:4', 'rec:8', 'cnn32:1', 'mlp:8', 'mlp:64'];

function parseCell(c: string): { model: ModelKey; batch: number } {
  const [model, batch] = c.split(':');
  const key = MODEL_KEYS.find((k) => k === model);
  if (!key || !(Number(batch) >= 1 && Number(batch) <= MAX_BATCH)) throw new UsageError(`bad cell ${c}: use <model>:N with a model of ${MODEL_KEYS.join(', ')} and N ≤ ${MAX_BATCH}`);
  return { model: key, batch: Number(batch) };
}

function parseOptions(): Options {
  const f = parseFlags('node dist/bench/onnx/run.js [options]', {
    rounds: { type: 'number', default: 3, help: 'rounds of every cell (1..7)' },
    concurrency: { type: 'number', default: 2, help: 'connections of the served throughput measurement' },
    cells: { type: 'list', default: DEFAULT_CELLS, help: `<model>:<batch> cells, models ${MODEL_KEYS.join(', ')}` },
    'target-ms': { type: 'number', default: 1000, help: 'model work per sample, ms (100..3000)' },
    'warm-ms': { type: 'number', default: 2000, help: 'served load per cell before the first round, ms (0..10000)' },
    profile: PROFILE_FLAG,
    'no-write': NO_WRITE_FLAG,
  });
  const o: Options = {
    rounds: f.rounds,
    concurrency: f.concurrency,
    cells: f.cells.map(parseCell),
    targetMs: f['target-ms'],
    warmMs: f['warm-ms'],
    profile: f.profile,
    // A profiled server is slower: its figures do not go into the docs.
    write: !f['no-write'] && !f.profile,
  };
  if (!(o.rounds >= 1 && o.rounds <= 7) || !(o.targetMs >= 100 && o.targetMs <= 3000) || !(o.warmMs >= 0 && o.warmMs <= 10_000)) {
    throw new UsageError('keep --rounds in 1..7, --target-ms in 100..3000 and --warm-ms in 0..10000');
  }
  return o;
}

// ---------------------------------------------------------------------------------------------------------

interface Cell {
  model: BenchModel;
  batch: number;
  payload: Payload;
  /** Batches per sample. */
  k: number;
  direct: DirectSample[];
  served: { itemsPerS: number; sample: Sample }[];
  servedC1: Sample[];
}

interface DirectSample {
  itemsPerS: number;
  medianMs: number;
  /** Per batch (warm-up included): the direct process's CPU time and run-queue wait, ms. */
  cpuMs: number;
  waitMs: number;
}

interface OcrRuns {
  c1: Sample[];
  c8: Sample[];
  direct: number[][];
}

function servedPayload(m: BenchModel, batch: number): Payload {
  const { shape, data } = batchInput(m, batch);
  return binaryRequest(m.served, [{ name: m.input, datatype: 'FP32', shape, bytes: fp32Bytes(data) }], [m.output]);
}

function ocrPayload(root: string): Payload {
  const png = readFileSync(path.join(root, 'test', 'fixtures', 'ocr', 'hello-world.png'));
  return binaryRequest('ocr', [{ name: 'IMAGE', datatype: 'BYTES', shape: [1], bytes: bytesElement(png) }]);
}

/** Both sides agree: the first values and the sum of the output, to FP32 rounding. */
function sameOutput(a: { first: number[]; sum: number }, b: { first: number[]; sum: number }): boolean {
  const close = (x: number, y: number, tol: number) => Math.abs(x - y) <= tol * Math.max(1, Math.abs(x), Math.abs(y));
  return a.first.length === b.first.length && a.first.every((x, i) => close(x, b.first[i] as number, 1e-4)) && close(a.sum, b.sum, 1e-3);
}

// ---------------------------------------------------------------------------------------------------------
// Report

const ms = (x: number) => (Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(2));
const signed = (x: number) => `${x >= 0 ? '+' : ''}${ms(x)}`;

function report(o: Options, cells: Cell[], ocr: OcrRuns, ctx: BenchContext): { body: string; allMet: boolean } {
  let allMet = true;
  const rows = cells.map((c) => {
    const direct = median(c.direct.map((d) => d.itemsPerS));
    const served = median(c.served.map((s) => s.itemsPerS));
    const ratio = served / direct;
    const perRound = c.served.map((s, i) => s.itemsPerS / (c.direct[i] as DirectSample).itemsPerS);
    const met = ratio >= BAR;
    const hasBar = c.model.barFrom !== undefined && c.batch >= c.model.barFrom;
    if (hasBar) allMet &&= met;
    const bar = hasBar ? `≥ ${BAR}× ${met ? 'met' : '**not met**'}` : '– (no bar)';
    const directMs = median(c.direct.map((d) => d.medianMs));
    const c1 = median(c.servedC1.map((s) => s.p50)) / 1000;
    const overheadC1 = median(c.servedC1.map((s, i) => s.p50 / 1000 - (c.direct[i] as DirectSample).medianMs));
    const overheadTput = (1000 * c.batch) / served - (1000 * c.batch) / direct;
    return (
      `| ${c.model.key} | ${c.batch} | ${c.k} | ${fmtInt(direct)} | ${fmtInt(served)} | ${ratio.toFixed(3)}×${perRound.length > 1 ? ` (${range(perRound, 3)})` : ''} | ${bar} |` +
      ` ${ms(directMs)} | ${ms(c1)} | ${signed(overheadC1)} | ${signed(overheadTput)} |`
    );
  });
  const cpuRows = cells.map((c) => {
    const batches = c.k + 2;
    const perBatch = (f: (s: Sample) => number) => median(c.served.map((x) => f(x.sample) / 1e6 / batches));
    const directCpu = median(c.direct.map((d) => d.cpuMs));
    const worker = perBatch((s) => s.usage.busiest[0]);
    const wall = median(c.served.map((x) => (1000 * c.batch) / x.itemsPerS));
    return (
      `| ${c.model.key} | ${c.batch} | ${ms(median(c.direct.map((d) => d.medianMs)))} | ${ms(directCpu)} | ${ms(median(c.direct.map((d) => d.waitMs)))} | ${ms(wall)} | ${ms(worker)} |` +
      ` ${ms(perBatch((s) => s.usage.busiest[1]))} | ${ms(perBatch((s) => s.usage.main[0]))} | ${ms(perBatch((s) => s.usage.main[1]))} | ${(directCpu / worker).toFixed(3)}× |`
    );
  });
  const readings = cells.map((c) => {
    const batches = c.k + 2;
    const perBatch = (f: (s: Sample) => number) => median(c.served.map((x) => f(x.sample) / 1e6 / batches));
    const directWall = median(c.direct.map((d) => d.medianMs));
    const servedWall = median(c.served.map((x) => (1000 * c.batch) / x.itemsPerS));
    const extraCpu = perBatch((s) => s.usage.busiest[0]) - median(c.direct.map((d) => d.cpuMs));
    return (
      `${c.model.key} batch ${c.batch}: served ${ms(servedWall)} ms per batch vs direct ${ms(directWall)} ms (${signed(servedWall - directWall)}); the worker used` +
      ` ${signed(extraCpu)} ms CPU compared with the direct run and waited ${ms(perBatch((s) => s.usage.busiest[1]))} ms for a CPU; the main thread,` +
      ` which must run for the next batch to be handed over, waited ${ms(perBatch((s) => s.usage.main[1]))} ms.`
    );
  });
  const ocrRow = (label: string, s: Sample[]) =>
    `| ${label} | ${median(s.map((x) => x.rps)).toFixed(2)} | ${ms(median(s.map((x) => x.p50)) / 1000)} | ${ms(median(s.map((x) => x.p99)) / 1000)} |`;
  const directOcr = ocr.direct.map((t) => (1000 * t.length) / t.reduce((a, b) => a + b, 0));
  const models = benchModels(repoRoot());
  const body = [
    '## ONNX Runtime models',
    '',
    ...provenanceLines({
      startedAt: ctx.startedAt,
      command: 'node dist/bench/onnx/run.js',
      source: `bench/onnx/run.ts, ${ctx.elapsedS().toFixed(0)} s`,
      loads: ctx.loads(),
      loadNote: 'other work shared the machine',
    }),
    '',
    '**Served vs direct** (items/s = rows per second; medians over rounds; "per round" = range of the paired ratios):',
    '',
    `| model | batch | batches per sample | direct items/s | served items/s (c=${o.concurrency}) | served / direct | bar | direct ms/batch | served c=1 p50 ms | overhead per batch at c=1, ms | overhead per batch from throughput, ms |`,
    '| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |',
    ...rows,
    '',
    '**Where the time went**, ms per batch (medians over rounds; from /proc/<pid>/task/*/schedstat: CPU = time on a CPU,',
    'waiting = time runnable but waiting for a CPU, i.e. the machine was busy). The served worker thread runs the model; the',
    'main thread does HTTP, validation, scheduling and the hand-off. With requests in flight the two overlap, so with a free core for the main',
    'thread the served time per batch is the worker CPU plus the hand-off, and the ratio tends to the last column.',
    '',
    `| model | batch | direct wall | direct CPU | direct waiting | served wall (c=${o.concurrency}) | served worker CPU | served worker waiting | served main CPU | served main waiting | direct CPU ÷ served worker CPU |`,
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...cpuRows,
    '',
    ...readings.map((r) => `- ${r}`),
    '',
    '**OCR pipeline** (`ocr` model: `test/fixtures/ocr/hello-world.png`, 640×160, one text line, through ocr_det and ocr_rec; medians over rounds):',
    '',
    '| | images/s | p50 ms | p99 ms |',
    '| --- | ---: | ---: | ---: |',
    ocrRow('served, c=1', ocr.c1),
    ocrRow('served, c=8', ocr.c8),
    `| reference: the same pipeline in one process, no server, sequential | ${median(directOcr).toFixed(2)} | ${ms(median(ocr.direct.map((t) => median(t))))} | – |`,
    '',
    '**Method.**',
    `- Models: ${MODEL_KEYS.map((k) => models[k].describe).join('; ')}. Inputs: deterministic values in [−1, 1], the same bytes on both sides;`,
    '  both sides are checked once to give the same output (first values and sum) before anything is measured.',
    '- *Served*: bench/onnx/server.ts, `new Triton({ httpThreadCount: 1, httpPort: 0, allowGrpc: false, allowMetrics: false })` with each model bound as',
    `  \`onnxModel({ path, maxBatchSize: ${MAX_BATCH}, intraOpNumThreads: 1 })\` and \`config: { batcher: null }\` (one worker instance;`,
    "  each request runs alone, so a batch is exactly the request's rows). Requests: binary input, `binary_data: true` output,",
    `  from bench/harness/loadgen.ts (raw keep-alive sockets) in its own process. Throughput at c=${o.concurrency} (\`--concurrency\`; the next request is`,
    '  received while the worker runs the current one), latency at c=1.',
    "- *Direct*: bench/onnx/direct.ts, a separate process running `await session.run(feeds, [output])` in a loop on its main thread,",
    "  with our instances' session options (cpu provider, 1 intra-op thread, 1 inter-op thread, all graph optimizations).",
    `- Each sample is K batches (K ≈ ${o.targetMs} ms of model work, at least 3) after 1–2 warm-up batches. ${o.rounds} rounds; in each, direct, served c=${o.concurrency}`,
    '  and served c=1 run back to back, in reverse order every other round. The overhead per batch at c=1 is the paired (same',
    '  round) served p50 − direct median; from throughput it is batch/served − batch/direct.',
    '- OCR: `bindOcr(triton, { threads: 1 })` (examples/ocr/model.ts): ocr_det (maxBatchSize 4) and ocr_rec (maxBatchSize 32) with',
    '  a 2 ms queue delay, the `ocr` pipeline with 8 in-process instances; request IMAGE BYTES [1] in binary, JSON outputs; the',
    `  answer is checked to read "${OCR_TEXT}". Count windows (c=1: 12 images, c=8: 32 images after 8). The reference runs`,
    '  `runOcr` with in-process sessions (same options) in the direct process.',
    `- Warm-up: before the first round, each cell's served request ran for ${o.warmMs} ms at c=${o.concurrency} (\`--warm-ms\`): the server's`,
    '  JIT compiles its request path over the first few thousand requests, and a server is measured in its steady state.',
    '- Nothing is pinned to a CPU; the machine (2 vCPU) was shared with other work.',
    `- Bar: served throughput ≥ ${BAR}× direct for the compute-bound model at batch 8 and more and for the OCR recognizer.`,
    '  The other cells carry no bar: cnn_64x4 at batch 1 and cnn_32x4 are small requests (about 2 and 0.5 ms of work), and the',
    '  MLP is memory-bound; they show the fixed cost of a request next to the model. On this machine that cost includes the model itself running',
    '  slower while the server and the load generator run on the other core: the served worker uses more CPU per batch than',
    '  the direct run, which has the machine to itself (table above).'
  ].join('\n');
  return { body, allMet };
}

// ---------------------------------------------------------------------------------------------------------

async function main(ctx: BenchContext): Promise<BenchOutcome> {
  const o = parseOptions();
  const root = repoRoot();
  const models = benchModels(root);
  const profiles = new CpuProfiles('onnx', o.profile);
  log(`bench:onnx: ${machine()}; ${o.rounds} rounds; cells ${o.cells.map((c) => `${c.model}:${c.batch}`).join(', ')}`);

  const [server, direct] = await Promise.all([
    ChildProc.start('ours', path.join(__dirname, 'server.js'), { nodeArgs: profiles.nodeArgs }),
    ChildProc.start('direct', path.join(__dirname, 'direct.js')),
  ]);
  const load = LoadGen.start();
  const runDirect = (c: DirectCall) => direct.call<DirectResult>(c);
  const spec = (payload: Payload, concurrency: number, warmupCount: number, count: number): LoadSpec => ({
    port: server.port,
    request: rawRequest(payload, server.port).toString('base64'),
    concurrency,
    warmupCount,
    count,
  });

  // Check both sides, and size each cell's samples from a first direct timing.
  const cells: Cell[] = [];
  for (const { model, batch } of o.cells) {
    const m = models[model];
    const payload = servedPayload(m, batch);
    const d = await runDirect({ kind: 'model', model, batch, warmup: 1, count: 2 });
    const served = fingerprint(fp32Of((await inferOnce(server.port, payload)).get(m.output)));
    if (!d.fingerprint || !sameOutput(served, d.fingerprint)) {
      throw new Error(`${model} batch ${batch}: served ${JSON.stringify(served)} != direct ${JSON.stringify(d.fingerprint)}`);
    }
    const k = Math.max(3, Math.min(200, Math.round(o.targetMs / Math.min(...d.times))));
    cells.push({ model: m, batch, payload, k, direct: [], served: [], servedC1: [] });
  }
  const ocrReq = ocrPayload(root);
  const ocrServed = ((await inferOnce(server.port, ocrReq)).get('TEXTS')?.data ?? []).join(' ');
  const ocrDirect = (await runDirect({ kind: 'ocr', warmup: 0, count: 1 })).texts?.join(' ') ?? '';
  if (!ocrServed.includes(OCR_TEXT) || !ocrDirect.includes(OCR_TEXT)) throw new Error(`OCR read "${ocrServed}" (served) and "${ocrDirect}" (direct), expected "${OCR_TEXT}"`);
  log(`bench:onnx: served and direct outputs agree; OCR reads "${ocrServed}"; batches per sample: ${cells.map((c) => `${c.model.key}:${c.batch}=${c.k}`).join(', ')}`);

  if (o.warmMs > 0) {
    const warmed: string[] = [];
    for (const c of cells) {
      const request = rawRequest(c.payload, server.port).toString('base64');
      const r = await load.run({ port: server.port, request, concurrency: o.concurrency, warmupMs: 0, durationMs: o.warmMs });
      if (r.errors > 0) throw new Error(`${c.model.key} b${c.batch} warm-up: ${r.errors} errors, first: ${r.firstError}`);
      warmed.push(`${c.model.key}:${c.batch}=${r.count}`);
    }
    log(`bench:onnx: served requests in the warm-up (${o.warmMs} ms per cell): ${warmed.join(', ')}`);
  }

  const ocr: OcrRuns = { c1: [], c8: [], direct: [] };
  for (let r = 0; r < o.rounds; r++) {
    for (const c of cells) {
      const what = `${c.model.key} b${c.batch}`;
      const steps: (() => Promise<void>)[] = [
        async () => {
          const before = await direct.usage();
          const d = await runDirect({ kind: 'model', model: c.model.key, batch: c.batch, warmup: 1, count: c.k });
          const u = usageDelta(before, await direct.usage());
          const total = d.times.reduce((a, b) => a + b, 0);
          const batches = c.k + 1;
          c.direct.push({ itemsPerS: (1000 * c.batch * d.times.length) / total, medianMs: median(d.times), cpuMs: u.runNs / 1e6 / batches, waitMs: u.waitNs / 1e6 / batches });
        },
        async () => {
          const s = await measure(load, server, spec(c.payload, o.concurrency, o.concurrency, c.k), `${what} served c=${o.concurrency}`);
          c.served.push({ itemsPerS: s.rps * c.batch, sample: s });
        },
        async () => {
          c.servedC1.push(await measure(load, server, spec(c.payload, 1, 1, c.k), `${what} served c=1`));
        },
      ];
      for (const step of abba(r, steps)) await step();
      const d = c.direct[r] as DirectSample;
      const s = c.served[r] as { itemsPerS: number };
      const su = (c.served[r] as { sample: Sample }).sample.usage;
      const per = (ns: number) => ms(ns / 1e6 / (c.k + 2));
      log(
        `  round ${r + 1} ${what.padEnd(8)} direct ${fmtInt(d.itemsPerS).padStart(6)} items/s (${ms(d.medianMs)} ms/batch, cpu ${ms(d.cpuMs)} wait ${ms(d.waitMs)})  served ${fmtInt(s.itemsPerS).padStart(6)} items/s (worker cpu ${per(su.busiest[0])} wait ${per(su.busiest[1])}, main cpu ${per(su.main[0])} wait ${per(su.main[1])})  ratio ${(s.itemsPerS / d.itemsPerS).toFixed(3)}  c=1 p50 ${ms((c.servedC1[r] as Sample).p50 / 1000)} ms`,
      );
    }
    const steps: (() => Promise<void>)[] = [
      async () => void ocr.c1.push(await measure(load, server, spec(ocrReq, 1, 2, 12), 'ocr c=1')),
      async () => void ocr.c8.push(await measure(load, server, spec(ocrReq, 8, 8, 32), 'ocr c=8')),
      async () => void ocr.direct.push((await runDirect({ kind: 'ocr', warmup: 1, count: 6 })).times),
    ];
    for (const step of abba(r, steps)) await step();
    const dt = ocr.direct[r] as number[];
    log(
      `  round ${r + 1} ocr      served c=1 ${(ocr.c1[r] as Sample).rps.toFixed(2)} images/s  c=8 ${(ocr.c8[r] as Sample).rps.toFixed(2)} images/s  direct ${((1000 * dt.length) / dt.reduce((a, b) => a + b, 0)).toFixed(2)} images/s`,
    );
  }

  load.exit();
  await Promise.all([server.stop(), direct.stop()]);
  return { key: 'onnx', ...report(o, cells, ocr, ctx), appendix: o.profile ? profiles.summaries(20) : undefined, write: o.write };
}

runBench('bench:onnx', WATCHDOG_MS, main);
