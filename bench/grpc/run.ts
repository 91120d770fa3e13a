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
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ModelInferRequestMessage, ModelInferResponseMessage } from '../../lib/protocol/messages';
import { loadProtos } from '../../lib/protocol/protos';
import { ServerProc, killChildren, spawnNode } from '../http/server-proc';
import type { LoadMessage, LoadReply, LoadResult, LoadSpec } from './loadgen';

const ROOT = path.resolve(__dirname, '../../..');
const DOC = path.join(ROOT, 'docs/performance.md');
const START = '<!-- grpc:start -->';
const END = '<!-- grpc:end -->';
/** The whole run is stopped past this, whatever it is doing. */
const WATCHDOG_MS = 170_000;
const BAR_RATIO_C32 = 0.75;
const CONCURRENCIES = [1, 32];

interface Options {
  rounds: number;
  durationS: number;
  warmupS: number;
  pin: boolean;
  write: boolean;
}

function parseOptions(argv: string[]): Options {
  const o: Options = { rounds: 3, durationS: 4, warmupS: 0.75, pin: true, write: true };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--rounds') o.rounds = Number(next());
    else if (a === '--duration') o.durationS = Number(next());
    else if (a === '--warmup') o.warmupS = Number(next());
    else if (a === '--no-pin') o.pin = false;
    else if (a === '--no-write') o.write = false;
    else throw new Error(`unknown option ${a}`);
  }
  const totalS = o.rounds * CONCURRENCIES.length * 2 * (o.durationS + o.warmupS);
  if (!(o.rounds >= 1) || !(o.durationS > 0) || !(o.warmupS >= 0) || totalS > 150) {
    throw new Error(`rounds ${o.rounds} × ${CONCURRENCIES.length} cells × 2 × (${o.durationS} + ${o.warmupS}) s = ${totalS} s: keep the measuring under 150 s`);
  }
  return o;
}

// ---- processes -----------------------------------------------------------------------------------

function runLoad(proc: ChildProcess, spec: LoadSpec): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: LoadReply) => {
      proc.off('message', onMessage);
      if (m.type === 'result') resolve(m.result);
      else reject(new Error(`load generator: ${m.message}`));
    };
    proc.on('message', onMessage);
    proc.send({ type: 'run', spec } satisfies LoadMessage);
  });
}

// ---- the request ---------------------------------------------------------------------------------

const INPUT = Float32Array.from({ length: 16 }, (_, i) => i * 0.5 - 3);
const protos = loadProtos('number');
const inferDef = protos.inference.ModelInfer as grpc.MethodDefinition<ModelInferRequestMessage, ModelInferResponseMessage>;
const REQUEST: ModelInferRequestMessage = {
  model_name: 'identity_fp32',
  id: '',
  inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 16] }],
  raw_input_contents: [Buffer.from(INPUT.buffer)],
};

/** One call through a proto-decoding client, checked for OUTPUT0 == INPUT0. */
function verify(server: ServerProc): Promise<void> {
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

// ---- measuring -----------------------------------------------------------------------------------

interface Sample extends LoadResult {
  rps: number;
  serverCpuPerReq: number;
}

async function measure(load: ChildProcess, server: ServerProc, concurrency: number, warmupMs: number, durationMs: number): Promise<Sample> {
  const request = Buffer.from(inferDef.requestSerialize(REQUEST)).toString('base64');
  const cpuBefore = await server.cpuMicros();
  const r = await runLoad(load, { port: server.port, request, concurrency, warmupMs, durationMs });
  const cpuAfter = await server.cpuMicros();
  if (r.errors > 0) throw new Error(`${server.name} c=${concurrency}: ${r.errors} errors, first: ${r.firstError}`);
  const totalReqs = r.count * ((warmupMs + durationMs) / durationMs);
  return { ...r, rps: (r.count * 1000) / r.elapsedMs, serverCpuPerReq: (cpuAfter - cpuBefore) / totalReqs };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

interface Cell {
  concurrency: number;
  base: Sample[];
  ours: Sample[];
}

// ---- report --------------------------------------------------------------------------------------

const fmtInt = (x: number) => Math.round(x).toLocaleString('en-US');
const fmtUs = (x: number) => `${Math.round(x)}`;

function machine(): string {
  const cpu = os.cpus()[0]?.model.trim() ?? 'unknown CPU';
  return `${cpu}, nproc ${os.availableParallelism()}, Node ${process.version}, ${os.type()} ${os.release()}`;
}

function report(cells: Cell[]): { table: string; verdict: string; met: boolean } {
  const rows = [
    '| c | baseline req/s | ours req/s | ratio (range) | baseline p50 µs | ours p50 µs | baseline p99 µs | ours p99 µs | server CPU µs/req (base / ours) |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  let verdict = '';
  let met = false;
  for (const c of cells) {
    const stat = (xs: Sample[], k: 'rps' | 'p50' | 'p99' | 'serverCpuPerReq') => median(xs.map((s) => s[k]));
    const ratio = stat(c.ours, 'rps') / stat(c.base, 'rps');
    const paired = c.ours.map((s, i) => s.rps / (c.base[i] as Sample).rps);
    const range = paired.length > 1 ? ` (${Math.min(...paired).toFixed(2)}–${Math.max(...paired).toFixed(2)})` : '';
    rows.push(
      `| ${c.concurrency} | ${fmtInt(stat(c.base, 'rps'))} | ${fmtInt(stat(c.ours, 'rps'))} | ${ratio.toFixed(2)}×${range} | ${fmtUs(stat(c.base, 'p50'))} | ${fmtUs(stat(c.ours, 'p50'))} | ${fmtUs(stat(c.base, 'p99'))} | ${fmtUs(stat(c.ours, 'p99'))} | ${stat(c.base, 'serverCpuPerReq').toFixed(1)} / ${stat(c.ours, 'serverCpuPerReq').toFixed(1)} |`,
    );
    if (c.concurrency === 32) {
      met = ratio >= BAR_RATIO_C32;
      verdict = `c=32: throughput ratio ${ratio.toFixed(2)}× (bar ≥ ${BAR_RATIO_C32}×): ${met ? 'met' : 'MISSED'}`;
    }
  }
  return { table: rows.join('\n'), verdict, met };
}

function block(o: Options, table: string, verdict: string, cells: Cell[], pinned: boolean, startedAt: Date, load: [number, number]): string {
  const clientCpu = Math.max(...cells.flatMap((c) => [...c.base, ...c.ours].map((s) => s.clientCpu)));
  return [
    START,
    '## gRPC',
    '',
    `Measured ${startedAt.toISOString().replace(/\.\d+Z$/, 'Z')} by \`node dist/bench/grpc/run.js\` (bench/grpc/run.ts) on ${machine()};`,
    `1-minute load average ${load[0].toFixed(1)} before the run and ${load[1].toFixed(1)} after it (the servers and the load generator add about 2).`,
    '',
    table,
    '',
    `- ${verdict}`,
    '',
    '**Method.**',
    '- *Ours*: `new Triton({ grpcPort: 0, allowHttp: false, allowMetrics: false, logLevel: "silent", grpcAddress: "127.0.0.1" })` with',
    '  `identity_fp32` bound as in examples/identity/model.ts (`@batch`, `maxBatchSize: 64`, `strict: true`).',
    '- *Baseline*: a bare grpc-js `inference.GRPCInferenceService` on the same .proto files and proto-loader options',
    '  (bench/grpc/server-baseline.ts) whose ModelInfer echoes `raw_input_contents` into `raw_output_contents`; no model',
    '  lookup, validation, queueing or batching.',
    '- Request: ModelInfer, INPUT0 FP32 `[1,16]` in `raw_input_contents`. Both servers are checked once to return',
    '  OUTPUT0 = INPUT0 before the load starts.',
    `- Load: a closed loop of c outstanding calls on one grpc-js channel (bench/grpc/loadgen.ts; pre-serialized request,`,
    `  response bytes not decoded), in its own process. ${pinned ? 'Servers pinned to CPU 0, load generator to CPU 1 (`taskset`).' : 'No CPU pinning.'}` +
      ` The load generator used at most ${(clientCpu * 100).toFixed(0)} % of a core.`,
    `- Each server warmed up 1.5 s at c=32 first. Then ${o.rounds} rounds; in each, every concurrency runs ${o.warmupS} s warm-up + ${o.durationS} s`,
    '  measured, baseline and ours back to back (ABBA order across rounds). Figures are medians over rounds; the ratio',
    '  range is the lowest and highest per-round ratio. Latency is per call at the client. Server CPU is the server',
    "  process's user+system time per request (`process.cpuUsage`); on a busy machine it is the steadier figure, since",
    '  req/s also depends on how much of its CPU the server was given.',
    `- Bar: throughput at c=32 ≥ ${BAR_RATIO_C32}× the baseline.`,
    END,
  ].join('\n');
}

function writeDoc(content: string): void {
  mkdirSync(path.dirname(DOC), { recursive: true });
  let text = existsSync(DOC)
    ? readFileSync(DOC, 'utf8')
    : '# Performance\n\nMeasured performance of tstriton, each section written by its benchmark script; rerun the script to refresh its section.\n';
  const s = text.indexOf(START);
  const e = text.indexOf(END);
  if (s >= 0 && e > s) text = text.slice(0, s) + content + text.slice(e + END.length);
  else text = `${text.replace(/\n*$/, '\n')}\n${content}\n`;
  writeFileSync(DOC, text);
}

// ---- main ----------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const o = parseOptions(process.argv.slice(2));
  const startedAt = new Date();
  const loadBefore = os.loadavg()[0] as number;
  const pinned = o.pin && os.availableParallelism() >= 2 && ['/usr/bin/taskset', '/bin/taskset'].some((p) => existsSync(p));
  const log = (s: string) => process.stderr.write(`${s}\n`);
  log(`bench:grpc: ${machine()}; ${o.rounds} rounds × ${CONCURRENCIES.length} cells × 2 servers × (${o.warmupS} + ${o.durationS}) s${pinned ? '; pinned' : ''}`);

  const base = await ServerProc.start('baseline', path.join(__dirname, 'server-baseline.js'), pinned ? 0 : undefined);
  const ours = await ServerProc.start('ours', path.join(__dirname, 'server-ours.js'), pinned ? 0 : undefined);
  const load = spawnNode(path.join(__dirname, 'loadgen.js'), pinned ? 1 : undefined);
  for (const s of [base, ours]) await verify(s);
  log('bench:grpc: both servers answer OUTPUT0 = INPUT0');
  for (const s of [base, ours]) await measure(load, s, 32, 0, 1500);

  const cells: Cell[] = CONCURRENCIES.map((concurrency) => ({ concurrency, base: [], ours: [] }));
  for (let r = 0; r < o.rounds; r++) {
    for (const cell of cells) {
      for (const s of r % 2 === 0 ? [base, ours] : [ours, base]) {
        const sample = await measure(load, s, cell.concurrency, o.warmupS * 1000, o.durationS * 1000);
        (s === base ? cell.base : cell.ours).push(sample);
        log(
          `  round ${r + 1} c=${String(cell.concurrency).padEnd(2)} ${s.name.padEnd(8)} ${fmtInt(sample.rps).padStart(7)} req/s  p50 ${fmtUs(sample.p50).padStart(5)} µs  p99 ${fmtUs(sample.p99).padStart(5)} µs  server ${sample.serverCpuPerReq.toFixed(1)} µs/req  client ${(sample.clientCpu * 100).toFixed(0)} %`,
        );
      }
    }
  }
  load.send({ type: 'exit' } satisfies LoadMessage);
  await Promise.all([base.stop(), ours.stop()]);

  const { table, verdict, met } = report(cells);
  const text = block(o, table, verdict, cells, pinned, startedAt, [loadBefore, os.loadavg()[0] as number]);
  process.stdout.write(`\n${text}\n`);
  if (o.write) {
    writeDoc(text);
    log(`bench:grpc: wrote the gRPC block of ${path.relative(ROOT, DOC)}`);
  }
  log(`bench:grpc: ${met ? 'bar met' : 'bar MISSED'} (${((Date.now() - startedAt.getTime()) / 1000).toFixed(0)} s)`);
}

const watchdog = setTimeout(() => {
  process.stderr.write(`bench:grpc: still running after ${WATCHDOG_MS / 1000} s; stopping\n`);
  killChildren();
  process.exit(2);
}, WATCHDOG_MS);
watchdog.unref();

main().then(
  () => killChildren(),
  (err: unknown) => {
    process.stderr.write(`bench:grpc: ${err instanceof Error ? err.message : String(err)}\n`);
    killChildren();
    process.exitCode = 1;
  },
);
