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
import * as path from 'node:path';
import { log, runBench, type BenchContext, type BenchOutcome } from '../harness/bench-run';
import { canPin, ChildProc } from '../harness/child-proc';
import { machine, provenanceLines } from '../harness/doc-block';
import { post, rawRequest } from '../harness/kserve';
import { LoadGen } from '../harness/loadgen';
import { measure, type Sample } from '../harness/measure';
import { NO_PIN_FLAG, NO_WRITE_FLAG, parseFlags, PROFILE_FLAG, UsageError, windowFlags, windowOptions, type WindowOptions } from '../harness/options';
import { comparePair, maxClientCpu, pinningText, runPairedRounds, type PairedCell } from '../harness/paired';
import { CpuProfiles } from '../harness/profile-top';
import { fmtInt, fmtUs } from '../harness/stats';
import { buildPayload, checkResponse, MODES, type Mode } from './payloads';

/** The whole run is stopped past this, whatever it is doing. */
const WATCHDOG_MS = 165_000;
const BARS = { throughputRatioC32: 0.65, addedP50C1Us: 150 };

interface Options extends WindowOptions {
  concurrencies: number[];
  modes: Mode[];
  pin: boolean;
  profile: boolean;
  write: boolean;
}

function parseOptions(): Options {
  const f = parseFlags('npm run bench:http -- [options]', {
    ...windowFlags({ rounds: 4, duration: 3, warmup: 0.5 }),
    modes: { type: 'list', default: MODES, help: 'request formats: binary, json' },
    concurrency: { type: 'list', default: ['1', '32'], help: 'connections of each cell' },
    'no-pin': NO_PIN_FLAG,
    'no-write': NO_WRITE_FLAG,
    profile: PROFILE_FLAG,
  });
  const modes = f.modes as Mode[];
  for (const m of modes) if (!MODES.includes(m)) throw new UsageError(`unknown mode ${m}`);
  const concurrencies = f.concurrency.map(Number);
  return {
    // Every cell (mode × concurrency) on both servers.
    ...windowOptions(f, modes.length * concurrencies.length * 2, 130),
    concurrencies,
    modes,
    pin: !f['no-pin'],
    profile: f.profile,
    // A profiled server is slower: its figures do not go into the docs.
    write: !f['no-write'] && !f.profile,
  };
}

/** One request through node:http, checked for OUTPUT0 == INPUT0 in the mode's format. */
async function verify(server: ChildProc, mode: Mode): Promise<void> {
  const problem = checkResponse(mode, await post(server.port, buildPayload(mode)));
  if (problem) throw new Error(`${server.name} ${mode}: ${problem}`);
}

function sample(load: LoadGen, server: ChildProc, mode: Mode, concurrency: number, warmupMs: number, durationMs: number): Promise<Sample> {
  const request = rawRequest(buildPayload(mode), server.port).toString('base64');
  // Requests still in flight 5 s after the window are dropped (they are outside the window anyway).
  const spec = { port: server.port, request, concurrency, warmupMs, durationMs, capMs: warmupMs + durationMs + 5000 };
  return measure(load, server, spec, `${server.name} ${mode} c=${concurrency}`, { allowLate: true });
}

interface Cell extends PairedCell {
  mode: Mode;
  concurrency: number;
}

function report(o: Options, cells: Cell[], pinned: boolean, ctx: BenchContext): { body: string; allMet: boolean } {
  const rows = [
    '| mode | c | baseline req/s | ours req/s | ratio (range) | baseline p50 µs | ours p50 µs | added p50 µs | baseline p99 µs | ours p99 µs | server CPU µs/req (base / ours) |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  const verdicts: string[] = [];
  let allMet = true;
  for (const c of cells) {
    const { base: b, ours: u, ratio, ratioText } = comparePair(c);
    const added = u.p50 - b.p50;
    rows.push(
      `| ${c.mode} | ${c.concurrency} | ${fmtInt(b.rps)} | ${fmtInt(u.rps)} | ${ratioText} | ${fmtUs(b.p50)} | ${fmtUs(u.p50)} | ${added >= 0 ? '+' : ''}${fmtUs(added)} | ${fmtUs(b.p99)} | ${fmtUs(u.p99)} | ${b.cpu.toFixed(1)} / ${u.cpu.toFixed(1)} |`,
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
  const clientCpu = maxClientCpu(cells);
  const body = [
    '## HTTP',
    '',
    ...provenanceLines({
      startedAt: ctx.startedAt,
      command: 'npm run bench:http',
      source: 'bench/http/run.ts',
      loads: ctx.loads(),
      loadNote: 'the servers and the load generator add about 2',
    }),
    '',
    rows.join('\n'),
    '',
    ...verdicts.map((v) => `- ${v}`),
    '',
    '**Method.**',
    '- *Ours*: `new Triton({ httpThreadCount: 1, httpPort: 0, allowGrpc: false, allowMetrics: false, logLevel: "silent", httpAddress: "127.0.0.1" })` with',
    '  `identity_fp32` bound as in examples/identity/model.ts (`@batch`, `maxBatchSize: 64`, `strict: true`).',
    '- *Baseline*: a bare `node:http` KServe v2 echo (bench/http/server-baseline.ts): reads the body, honours',
    '  `Inference-Header-Content-Length`, `JSON.parse`s the header, takes INPUT0 as a `Float32Array` (binary section or JSON',
    '  `data`) and answers OUTPUT0 in the format asked for; no validation, routing or scheduling.',
    `- Request: INPUT0 FP32 \`[1,16]\`. *binary*: binary input and \`binary_data: true\` on OUTPUT0; *json*: \`data\` in, \`data\` out.`,
    '  Both servers are checked once to return OUTPUT0 = INPUT0 before the load starts.',
    `- Load: a closed loop over c keep-alive HTTP/1.1 connections (bench/harness/loadgen.ts, raw sockets, pre-built request bytes),`,
    `  in its own process. ${pinningText(pinned)}` +
      ` The load generator used at most ${(clientCpu * 100).toFixed(0)} % of a core` +
      (clientCpu > 0.9 ? ' (close to saturation: the baseline figures may be lower bounds).' : '.'),
    `- Each server and mode warmed up 1.5 s at c=32 first. Then ${o.rounds} rounds; in each, every cell runs ${o.warmupS} s warm-up + ${o.durationS} s`,
    '  measured, baseline and ours back to back (ABBA order across rounds). Figures are medians over rounds; the ratio',
    '  range is the lowest and highest per-round ratio. Latency is per request, send to last byte, at the client.',
    "  Server CPU is the server process's user+system time per request in the measured window (`process.cpuUsage`); on a",
    '  busy machine it is the steadier figure, since req/s also depends on how much of its CPU the server was given.',
    `- Bars: throughput at c=32 ≥ ${BARS.throughputRatioC32}× the baseline; added p50 at c=1 (ours − baseline) ≤ ${BARS.addedP50C1Us} µs.`,
  ].join('\n');
  return { body, allMet };
}

async function main(ctx: BenchContext): Promise<BenchOutcome> {
  const o = parseOptions();
  const pinned = o.pin && canPin();
  const profiles = new CpuProfiles('http', o.profile);
  log(`bench:http: ${machine()}; ${o.rounds} rounds × ${o.modes.length * o.concurrencies.length} cells × 2 servers × (${o.warmupS} + ${o.durationS}) s${pinned ? '; pinned' : ''}`);

  const base = await ChildProc.start('baseline', path.join(__dirname, 'server-baseline.js'), { cpu: pinned ? 0 : undefined, readyTimeoutMs: 15_000 });
  const ours = await ChildProc.start('ours', path.join(__dirname, 'server-ours.js'), { cpu: pinned ? 0 : undefined, readyTimeoutMs: 15_000, nodeArgs: profiles.nodeArgs });
  const load = LoadGen.start(pinned ? 1 : undefined);

  for (const s of [base, ours]) for (const m of o.modes) await verify(s, m);
  log('bench:http: both servers answer OUTPUT0 = INPUT0 in both modes');
  for (const s of [base, ours]) for (const m of o.modes) await sample(load, s, m, 32, 0, 1500);

  const cells: Cell[] = o.modes.flatMap((mode) => o.concurrencies.map((concurrency) => ({ mode, concurrency, base: [], ours: [] })));
  await runPairedRounds(
    o.rounds,
    cells,
    { base, ours },
    (c, s) => sample(load, s, c.mode, c.concurrency, o.warmupS * 1000, o.durationS * 1000),
    (c) => `${c.mode.padEnd(6)} c=${String(c.concurrency).padEnd(2)}`,
    (s) => (s.late ? `  (${s.late} requests unanswered 5 s after the window)` : ''),
  );

  load.exit();
  await Promise.all([base.stop(), ours.stop()]);
  if (o.profile) log(`bench:http: CPU profile of our server in ${profiles.dir} (node dist/bench/harness/profile-top.js <file>)`);
  return { key: 'http', ...report(o, cells, pinned, ctx), write: o.write };
}

runBench('bench:http', WATCHDOG_MS, main);
