/**
 * HTTP infer benchmark: our server against a bare node:http KServe echo, measured in the same run.
 *
 *   npm run bench:http [-- --rounds 4 --duration 3 --warmup 0.5 --modes binary,json --concurrency 1,32
 *                         --no-pin --no-write --profile]
 *
 * Each server runs in its own child process, pinned to CPU 0 when the machine has two or more CPUs (and
 * `taskset` exists); the load generator is a third process, pinned to CPU 1. For every cell (mode ×
 * concurrency) and every round, the baseline and our server are measured back to back, in ABBA order
 * across rounds, so slow drifts of a noisy machine hit both alike. Figures are medians over rounds.
 * Results are printed and written to the `## HTTP` block of docs/performance.md.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import type { LoadMessage, LoadReply, LoadResult, LoadSpec } from './loadgen';
import { ServerProc, killChildren, spawnNode } from './server-proc';
import { INFER_PATH, buildPayload, checkResponse, rawRequest, type Mode } from './payloads';

const ROOT = path.resolve(__dirname, '../../..');
const DOC = path.join(ROOT, 'docs/performance.md');
const START = '<!-- http:start -->';
const END = '<!-- http:end -->';
/** The whole run is stopped past this, whatever it is doing. */
const WATCHDOG_MS = 165_000;

const BARS = { throughputRatioC32: 0.65, addedP50C1Us: 150 };

interface Options {
  rounds: number;
  durationS: number;
  warmupS: number;
  concurrencies: number[];
  modes: Mode[];
  pin: boolean;
  profile: boolean;
  write: boolean;
}

function parseOptions(argv: string[]): Options {
  const o: Options = { rounds: 4, durationS: 3, warmupS: 0.5, concurrencies: [1, 32], modes: ['binary', 'json'], pin: true, profile: false, write: true };
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
    else if (a === '--concurrency') o.concurrencies = next().split(',').map(Number);
    else if (a === '--modes') o.modes = next().split(',') as Mode[];
    else if (a === '--no-pin') o.pin = false;
    else if (a === '--profile') {
      // A profiled server is slower: its figures do not go into the docs.
      o.profile = true;
      o.write = false;
    }
    else if (a === '--no-write') o.write = false;
    else throw new Error(`unknown option ${a}`);
  }
  const cellS = o.rounds * o.modes.length * o.concurrencies.length * 2 * (o.durationS + o.warmupS);
  if (!(o.rounds >= 1) || !(o.durationS > 0) || !(o.warmupS >= 0) || cellS > 130) {
    throw new Error(`rounds ${o.rounds} × cells × (${o.durationS} + ${o.warmupS}) s = ${cellS} s: keep the measuring under 130 s`);
  }
  for (const m of o.modes) if (m !== 'binary' && m !== 'json') throw new Error(`unknown mode ${m}`);
  return o;
}

// ---------------------------------------------------------------------------------------------------------
// Child processes

function hasTaskset(): boolean {
  return ['/usr/bin/taskset', '/bin/taskset'].some((p) => existsSync(p));
}

class LoadGen {
  constructor(private readonly proc: ChildProcess) {}

  run(spec: LoadSpec): Promise<LoadResult> {
    return new Promise((resolve, reject) => {
      const onMessage = (m: LoadReply) => {
        this.proc.off('message', onMessage);
        if (m.type === 'result') resolve(m.result);
        else reject(new Error(`load generator: ${m.message}`));
      };
      this.proc.on('message', onMessage);
      this.proc.send({ type: 'run', spec } satisfies LoadMessage);
    });
  }

  exit(): void {
    this.proc.send({ type: 'exit' } satisfies LoadMessage);
  }
}

/** One request through node:http, checked for OUTPUT0 == INPUT0 in the mode's format. */
function verify(server: ServerProc, mode: Mode): Promise<void> {
  const payload = buildPayload(mode);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: server.port, path: INFER_PATH, method: 'POST', headers: { ...payload.headers, 'Content-Length': payload.body.length } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const body = Buffer.concat(chunks);
          if (res.statusCode !== 200) return reject(new Error(`${server.name} ${mode}: HTTP ${res.statusCode}: ${body.toString('utf8', 0, 300)}`));
          const problem = checkResponse(mode, res.headers, body);
          if (problem) reject(new Error(`${server.name} ${mode}: ${problem}`));
          else resolve();
        });
      },
    );
    req.on('error', reject);
    req.end(payload.body);
  });
}

// ---------------------------------------------------------------------------------------------------------
// Measuring

interface Sample extends LoadResult {
  rps: number;
  serverCpuPerReq: number;
}

async function measure(load: LoadGen, server: ServerProc, mode: Mode, concurrency: number, warmupMs: number, durationMs: number): Promise<Sample> {
  const request = rawRequest(buildPayload(mode), server.port).toString('base64');
  // The server's CPU time is read when the load generator's window opens and closes (to within the IPC delay).
  const at = (ms: number) => new Promise<number>((resolve) => setTimeout(() => void server.cpuMicros().then(resolve), ms));
  const cpuStart = at(warmupMs);
  const cpuEnd = at(warmupMs + durationMs);
  const r = await load.run({ port: server.port, request, concurrency, warmupMs, durationMs });
  const cpu = (await cpuEnd) - (await cpuStart);
  if (r.errors > 0) throw new Error(`${server.name} ${mode} c=${concurrency}: ${r.errors} errors, first: ${r.firstError}`);
  return { ...r, rps: (r.count * 1000) / r.elapsedMs, serverCpuPerReq: cpu / r.count };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

interface Cell {
  mode: Mode;
  concurrency: number;
  base: Sample[];
  ours: Sample[];
}

interface Summary {
  rps: number;
  p50: number;
  p99: number;
  cpu: number;
  clientCpu: number;
}

function summarize(samples: Sample[]): Summary {
  return {
    rps: median(samples.map((s) => s.rps)),
    p50: median(samples.map((s) => s.p50)),
    p99: median(samples.map((s) => s.p99)),
    cpu: median(samples.map((s) => s.serverCpuPerReq)),
    clientCpu: median(samples.map((s) => s.clientCpu)),
  };
}

// ---------------------------------------------------------------------------------------------------------
// Report

const fmtInt = (x: number) => Math.round(x).toLocaleString('en-US');
const fmtUs = (x: number) => `${Math.round(x)}`;

interface Report {
  table: string;
  verdicts: string[];
  allMet: boolean;
}

function report(cells: Cell[]): Report {
  const rows = [
    '| mode | c | baseline req/s | ours req/s | ratio (range) | baseline p50 µs | ours p50 µs | added p50 µs | baseline p99 µs | ours p99 µs | server CPU µs/req (base / ours) |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  const verdicts: string[] = [];
  let allMet = true;
  for (const c of cells) {
    const b = summarize(c.base);
    const o = summarize(c.ours);
    const ratio = o.rps / b.rps;
    const paired = c.ours.map((s, i) => s.rps / (c.base[i] as Sample).rps);
    const range = paired.length > 1 ? ` (${Math.min(...paired).toFixed(2)}–${Math.max(...paired).toFixed(2)})` : '';
    const added = o.p50 - b.p50;
    rows.push(
      `| ${c.mode} | ${c.concurrency} | ${fmtInt(b.rps)} | ${fmtInt(o.rps)} | ${ratio.toFixed(2)}×${range} | ${fmtUs(b.p50)} | ${fmtUs(o.p50)} | ${added >= 0 ? '+' : ''}${fmtUs(added)} | ${fmtUs(b.p99)} | ${fmtUs(o.p99)} | ${b.cpu.toFixed(1)} / ${o.cpu.toFixed(1)} |`,
    );
    if (c.concurrency === 32) {
      const ok = ratio >= BARS.throughputRatioC32;
      allMet &&= ok;
      verdicts.push(`${c.mode}, c=32: throughput ratio ${ratio.toFixed(2)}× (bar ≥ ${BARS.throughputRatioC32}×): ${ok ? 'met' : 'MISSED'}`);
    }
    if (c.concurrency === 1) {
      const ok = added <= BARS.addedP50C1Us;
      allMet &&= ok;
      verdicts.push(`${c.mode}, c=1: added p50 ${fmtUs(added)} µs (bar ≤ ${BARS.addedP50C1Us} µs): ${ok ? 'met' : 'MISSED'}`);
    }
  }
  return { table: rows.join('\n'), verdicts, allMet };
}

function machine(): string {
  const cpu = os.cpus()[0]?.model.trim() ?? 'unknown CPU';
  return `${cpu}, nproc ${os.availableParallelism()}, Node ${process.version}, ${os.type()} ${os.release()}`;
}

function block(o: Options, r: Report, cells: Cell[], pinned: boolean, startedAt: Date, load: [number, number]): string {
  const clientCpu = Math.max(...cells.flatMap((c) => [...c.base, ...c.ours].map((s) => s.clientCpu)));
  return [
    START,
    '## HTTP',
    '',
    `Measured ${startedAt.toISOString().replace(/\.\d+Z$/, 'Z')} by \`npm run bench:http\` (bench/http/run.ts) on ${machine()};`,
    `1-minute load average ${load[0].toFixed(1)} before the run and ${load[1].toFixed(1)} after it (the servers and the load generator add about 2).`,
    '',
    r.table,
    '',
    ...r.verdicts.map((v) => `- ${v}`),
    '',
    '**Method.**',
    '- *Ours*: `new Triton({ httpPort: 0, allowGrpc: false, allowMetrics: false, logLevel: "silent", httpAddress: "127.0.0.1" })` with',
    '  `identity_fp32` bound as in examples/identity/model.ts (`@batch`, `maxBatchSize: 64`, `strict: true`).',
    '- *Baseline*: a bare `node:http` KServe v2 echo (bench/http/server-baseline.ts): reads the body, honours',
    '  `Inference-Header-Content-Length`, `JSON.parse`s the header, takes INPUT0 as a `Float32Array` (binary section or JSON',
    '  `data`) and answers OUTPUT0 in the format asked for; no validation, routing or scheduling.',
    `- Request: INPUT0 FP32 \`[1,16]\`. *binary*: binary input and \`binary_data: true\` on OUTPUT0; *json*: \`data\` in, \`data\` out.`,
    '  Both servers are checked once to return OUTPUT0 = INPUT0 before the load starts.',
    `- Load: a closed loop over c keep-alive HTTP/1.1 connections (bench/http/loadgen.ts, raw sockets, pre-built request bytes),`,
    `  in its own process. ${pinned ? 'Servers pinned to CPU 0, load generator to CPU 1 (`taskset`).' : 'No CPU pinning.'}` +
      ` The load generator used at most ${(clientCpu * 100).toFixed(0)} % of a core` +
      (clientCpu > 0.9 ? ' (close to saturation: the baseline figures may be lower bounds).' : '.'),
    `- Each server and mode warmed up 1.5 s at c=32 first. Then ${o.rounds} rounds; in each, every cell runs ${o.warmupS} s warm-up + ${o.durationS} s`,
    '  measured, baseline and ours back to back (ABBA order across rounds). Figures are medians over rounds; the ratio',
    '  range is the lowest and highest per-round ratio. Latency is per request, send to last byte, at the client.',
    "  Server CPU is the server process's user+system time per request in the measured window (`process.cpuUsage`); on a",
    '  busy machine it is the steadier figure, since req/s also depends on how much of its CPU the server was given.',
    `- Bars: throughput at c=32 ≥ ${BARS.throughputRatioC32}× the baseline; added p50 at c=1 (ours − baseline) ≤ ${BARS.addedP50C1Us} µs.`,
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

// ---------------------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const o = parseOptions(process.argv.slice(2));
  const startedAt = new Date();
  const loadBefore = os.loadavg()[0] as number;
  const pinned = o.pin && os.availableParallelism() >= 2 && hasTaskset();
  const serverCpu = pinned ? 0 : undefined;
  const profDir = path.join(os.tmpdir(), 'tstriton-bench-http-prof');
  if (o.profile) mkdirSync(profDir, { recursive: true });

  const log = (s: string) => process.stderr.write(`${s}\n`);
  log(`bench:http: ${machine()}; ${o.rounds} rounds × ${o.modes.length * o.concurrencies.length} cells × 2 servers × (${o.warmupS} + ${o.durationS}) s${pinned ? '; pinned' : ''}`);

  const base = await ServerProc.start('baseline', path.join(__dirname, 'server-baseline.js'), serverCpu);
  const ours = await ServerProc.start('ours', path.join(__dirname, 'server-ours.js'), serverCpu, o.profile ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : []);
  const load = new LoadGen(spawnNode(path.join(__dirname, 'loadgen.js'), pinned ? 1 : undefined));

  for (const s of [base, ours]) for (const m of o.modes) await verify(s, m);
  log('bench:http: both servers answer OUTPUT0 = INPUT0 in both modes');

  for (const s of [base, ours]) for (const m of o.modes) await measure(load, s, m, 32, 0, 1500);

  const cells: Cell[] = [];
  for (const mode of o.modes) for (const concurrency of o.concurrencies) cells.push({ mode, concurrency, base: [], ours: [] });
  for (let r = 0; r < o.rounds; r++) {
    for (const cell of cells) {
      const order = r % 2 === 0 ? [base, ours] : [ours, base];
      for (const s of order) {
        const sample = await measure(load, s, cell.mode, cell.concurrency, o.warmupS * 1000, o.durationS * 1000);
        (s === base ? cell.base : cell.ours).push(sample);
        log(
          `  round ${r + 1} ${cell.mode.padEnd(6)} c=${String(cell.concurrency).padEnd(2)} ${s.name.padEnd(8)} ${fmtInt(sample.rps).padStart(7)} req/s  p50 ${fmtUs(sample.p50).padStart(5)} µs  p99 ${fmtUs(sample.p99).padStart(5)} µs  server ${sample.serverCpuPerReq.toFixed(1)} µs/req  client ${(sample.clientCpu * 100).toFixed(0)} %${sample.late ? `  (${sample.late} requests unanswered 5 s after the window)` : ''}`,
        );
      }
    }
  }

  load.exit();
  await Promise.all([base.stop(), ours.stop()]);
  if (o.profile) log(`bench:http: CPU profile of our server in ${profDir} (node dist/bench/http/profile-top.js <file>)`);

  const r = report(cells);
  const text = block(o, r, cells, pinned, startedAt, [loadBefore, os.loadavg()[0] as number]);
  process.stdout.write(`\n${text}\n`);
  if (o.write) {
    writeDoc(text);
    log(`bench:http: wrote the HTTP block of ${path.relative(ROOT, DOC)}`);
  }
  log(`bench:http: ${r.allMet ? 'all bars met' : 'some bars MISSED'} (${((Date.now() - startedAt.getTime()) / 1000).toFixed(0)} s)`);
}

const watchdog = setTimeout(() => {
  process.stderr.write(`bench:http: still running after ${WATCHDOG_MS / 1000} s; stopping\n`);
  killChildren();
  process.exit(2);
}, WATCHDOG_MS);
watchdog.unref();

main().then(
  () => {
    killChildren();
  },
  (err: unknown) => {
    process.stderr.write(`bench:http: ${err instanceof Error ? err.message : String(err)}\n`);
    killChildren();
    process.exitCode = 1;
  },
);
