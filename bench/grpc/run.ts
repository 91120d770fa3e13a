/**
 * gRPC ModelInfer benchmark: our server against a bare grpc-js service on the same protos that echoes
 * `raw_input_contents` into `raw_output_contents`, measured in the same run.
 *
 *   npm run build && node dist/bench/grpc/run.js [--rounds 3 --duration 4 --warmup 0.75 --no-pin --no-write]
 *
 * Each server runs in its own child process, pinned to CPU 0 when the machine has two or more CPUs (and
 * `taskset` exists); the load generator is a third process, pinned to CPU 1. For every concurrency and
 * round, the baseline and our server are measured back to back, in ABBA order across rounds, so slow
 * drifts of a noisy machine hit both alike. Figures are medians over rounds. Results are printed and
 * written to the `## gRPC` block of docs/performance.md.
 */
import * as grpc from '@grpc/grpc-js';
import * as path from 'node:path';
import type { ModelInferRequestMessage, ModelInferResponseMessage } from '../../lib/protocol/messages';
import { loadProtos } from '../../lib/protocol/protos';
import { log, runBench, type BenchContext, type BenchOutcome } from '../harness/bench-run';
import { canPin, ChildProc } from '../harness/child-proc';
import { machine, provenanceLines } from '../harness/doc-block';
import { LoadGen } from '../harness/loadgen';
import { measure, type Sample } from '../harness/measure';
import { NO_PIN_FLAG, NO_WRITE_FLAG, parseFlags, windowFlags, windowOptions, type WindowOptions } from '../harness/options';
import { comparePair, maxClientCpu, pinningText, runPairedRounds, type PairedCell } from '../harness/paired';
import { fmtInt, fmtUs } from '../harness/stats';

/** The whole run is stopped past this, whatever it is doing. */
const WATCHDOG_MS = 170_000;
const BAR_RATIO_C32 = 0.75;
const CONCURRENCIES = [1, 32];

interface Options extends WindowOptions {
  pin: boolean;
  write: boolean;
}

function parseOptions(): Options {
  const f = parseFlags('node dist/bench/grpc/run.js [options]', {
    ...windowFlags({ rounds: 3, duration: 4, warmup: 0.75 }),
    'no-pin': NO_PIN_FLAG,
    'no-write': NO_WRITE_FLAG,
  });
  // Every concurrency on both servers.
  return { ...windowOptions(f, CONCURRENCIES.length * 2, 150), pin: !f['no-pin'], write: !f['no-write'] };
}

// ---- the request ---------------------------------------------------------------------------------

const INPUT = Float32Array.from({ length: 16 }, (_, i) => i * 0.5 - 3);
const inferDef = loadProtos('number').inference.ModelInfer as grpc.MethodDefinition<ModelInferRequestMessage, ModelInferResponseMessage>;
const REQUEST: ModelInferRequestMessage = {
  model_name: 'identity_fp32',
  id: '',
  inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 16] }],
  raw_input_contents: [Buffer.from(INPUT.buffer)],
};

/** One call through a proto-decoding client, checked for OUTPUT0 == INPUT0. */
function verify(server: ChildProc): Promise<void> {
  const client = new grpc.Client(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
  return new Promise<void>((resolve, reject) => {
    client.makeUnaryRequest(inferDef.path, inferDef.requestSerialize, inferDef.responseDeserialize, REQUEST, (err, res) => {
      client.close();
      if (err) return reject(new Error(`${server.name}: ${err.code} ${err.details}`));
      const out = res?.raw_output_contents[0];
      const ok = res?.outputs[0]?.name === 'OUTPUT0' && res.outputs[0].datatype === 'FP32' && out !== undefined && Buffer.from(out).equals(Buffer.from(INPUT.buffer));
      if (ok) resolve();
      else reject(new Error(`${server.name}: OUTPUT0 != INPUT0 in ${JSON.stringify(res?.outputs)}`));
    });
  });
}

/** Server CPU is read over the whole run, warm-up included, and divided by the calls served in it. */
function sample(load: LoadGen, server: ChildProc, concurrency: number, warmupMs: number, durationMs: number): Promise<Sample> {
  const request = Buffer.from(inferDef.requestSerialize(REQUEST)).toString('base64');
  const spec = { port: server.port, grpcMethod: inferDef.path, request, concurrency, warmupMs, durationMs };
  return measure(load, server, spec, `${server.name} c=${concurrency}`, { serverCpu: 'run' });
}

interface Cell extends PairedCell {
  concurrency: number;
}

// ---- report --------------------------------------------------------------------------------------

function report(o: Options, cells: Cell[], pinned: boolean, ctx: BenchContext): { body: string; allMet: boolean } {
  const rows = [
    '| c | baseline req/s | ours req/s | ratio (range) | baseline p50 µs | ours p50 µs | baseline p99 µs | ours p99 µs | server CPU µs/req (base / ours) |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  let verdict = '';
  let met = false;
  for (const c of cells) {
    const { base: b, ours: u, ratio, ratioText } = comparePair(c);
    rows.push(
      `| ${c.concurrency} | ${fmtInt(b.rps)} | ${fmtInt(u.rps)} | ${ratioText} | ${fmtUs(b.p50)} | ${fmtUs(u.p50)} | ${fmtUs(b.p99)} | ${fmtUs(u.p99)} | ${b.cpu.toFixed(1)} / ${u.cpu.toFixed(1)} |`,
    );
    if (c.concurrency === 32) {
      met = ratio >= BAR_RATIO_C32;
      verdict = `c=32: throughput ratio ${ratio.toFixed(2)}× (bar ≥ ${BAR_RATIO_C32}×): ${met ? 'met' : 'MISSED'}`;
    }
  }
  const body = [
    '## gRPC',
    '',
    ...provenanceLines({
      startedAt: ctx.startedAt,
      command: 'node dist/bench/grpc/run.js',
      source: 'bench/grpc/run.ts',
      loads: ctx.loads(),
      loadNote: 'the servers and the load generator add about 2',
    }),
    '',
    rows.join('\n'),
    '',
    `- ${verdict}`,
    '',
    '**Method.**',
    '- *Ours*: `new Triton({ httpThreadCount: 1, grpcPort: 0, allowHttp: false, allowMetrics: false, logLevel: "silent", grpcAddress: "127.0.0.1" })` with',
    '  `identity_fp32` bound as in examples/identity/model.ts (`@batch`, `maxBatchSize: 64`, `strict: true`).',
    '- *Baseline*: a bare grpc-js `inference.GRPCInferenceService` on the same .proto files and proto-loader options',
    '  (bench/grpc/server-baseline.ts) whose ModelInfer echoes `raw_input_contents` into `raw_output_contents`; no model',
    '  lookup, validation, queueing or batching.',
    '- Request: ModelInfer, INPUT0 FP32 `[1,16]` in `raw_input_contents`. Both servers are checked once to return',
    '  OUTPUT0 = INPUT0 before the load starts.',
    `- Load: a closed loop of c outstanding calls on one grpc-js channel (bench/harness/loadgen.ts; pre-serialized request,`,
    `  response bytes not decoded), in its own process. ${pinningText(pinned)}` +
      ` The load generator used at most ${(maxClientCpu(cells) * 100).toFixed(0)} % of a core.`,
    `- Each server warmed up 1.5 s at c=32 first. Then ${o.rounds} rounds; in each, every concurrency runs ${o.warmupS} s warm-up + ${o.durationS} s`,
    '  measured, baseline and ours back to back (ABBA order across rounds). Figures are medians over rounds; the ratio',
    '  range is the lowest and highest per-round ratio. Latency is per call at the client. Server CPU is the server',
    "  process's user+system time per request (`process.cpuUsage`); on a busy machine it is the steadier figure, since",
    '  req/s also depends on how much of its CPU the server was given.',
    `- Bar: throughput at c=32 ≥ ${BAR_RATIO_C32}× the baseline.`,
  ].join('\n');
  return { body, allMet: met };
}

// ---- main ----------------------------------------------------------------------------------------

async function main(ctx: BenchContext): Promise<BenchOutcome> {
  const o = parseOptions();
  const pinned = o.pin && canPin();
  log(`bench:grpc: ${machine()}; ${o.rounds} rounds × ${CONCURRENCIES.length} cells × 2 servers × (${o.warmupS} + ${o.durationS}) s${pinned ? '; pinned' : ''}`);

  const base = await ChildProc.start('baseline', path.join(__dirname, 'server-baseline.js'), { cpu: pinned ? 0 : undefined, readyTimeoutMs: 15_000 });
  const ours = await ChildProc.start('ours', path.join(__dirname, 'server-ours.js'), { cpu: pinned ? 0 : undefined, readyTimeoutMs: 15_000 });
  const load = LoadGen.start(pinned ? 1 : undefined);
  for (const s of [base, ours]) await verify(s);
  log('bench:grpc: both servers answer OUTPUT0 = INPUT0');
  for (const s of [base, ours]) await sample(load, s, 32, 0, 1500);

  const cells: Cell[] = CONCURRENCIES.map((concurrency) => ({ concurrency, base: [], ours: [] }));
  await runPairedRounds(
    o.rounds,
    cells,
    { base, ours },
    (c, s) => sample(load, s, c.concurrency, o.warmupS * 1000, o.durationS * 1000),
    (c) => `c=${String(c.concurrency).padEnd(2)}`,
  );
  load.exit();
  await Promise.all([base.stop(), ours.stop()]);
  return { key: 'grpc', ...report(o, cells, pinned, ctx), write: o.write };
}

runBench('bench:grpc', WATCHDOG_MS, main);
