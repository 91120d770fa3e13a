/**
 * Where a request's CPU goes, thread by thread: the main thread's CPU per request (what a core thread would
 * carry, and with the ports served on it everything but the instances' own work), the whole process's, and the
 * share of each thread group, for an identity model served in-process and in a worker instance.
 *
 *   npm run bench:cores [-- --rounds 2 --duration 2 --warmup 0.5 --concurrency 1,32,64
 *                          --protocols binary,json,grpc --front-end-threads 1 --no-pin --no-profile --no-write]
 *
 * One server child (server.ts: HTTP and gRPC, `identity_fp32` in-process and `identity_fp32_worker` in a worker
 * instance) names its threads (thread-names.ts); the load generator (the harness's, raw HTTP/1.1 sockets or one
 * grpc-js channel) is another process. With `--front-end-threads N` (N ≥ 2) the server runs `httpThreadCount: N`:
 * its ports are served by N front-end threads and the main thread is the core thread alone; the report then goes
 * to the `cores-threads` block and measures the core thread against the core-thread goal. Each thread's user + system time over a measured window is read from
 * outside, in /proc (thread-cpu.ts). In every round each cell (protocol × concurrency) runs on both models back
 * to back, in ABBA order across rounds; figures are medians over rounds. Then, at the highest concurrency, a CPU
 * profile of the main thread (node:inspector, in the server) splits its time by role (roles.ts). Results are
 * printed and written to the `cores` block of docs/performance.md (`cores-threads` with front-end threads). For one process against several on a machine
 * with many cores, see scale.ts and many-core.sh.
 */
import * as os from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { rmSync } from 'node:fs';
import { log, runBench, type BenchContext, type BenchOutcome } from '../harness/bench-run';
import { canPin, ChildProc } from '../harness/child-proc';
import { isoDate, machine, provenanceLines } from '../harness/doc-block';
import { LoadGen, type LoadSpec } from '../harness/loadgen';
import { abba } from '../harness/measure';
import { NO_PIN_FLAG, NO_WRITE_FLAG, parseFlags, UsageError, windowFlags, windowOptions, type WindowOptions } from '../harness/options';
import { fmtInt, fmtUs, median } from '../harness/stats';
import { cpuList, pinProcess, pinThread } from './pin';
import { loadTarget, PROTOCOL_LABELS, PROTOCOLS, verify, type LoadTarget, type Ports, type Protocol } from './requests';
import { readProfile, ROLE_LABELS, ROLES, rolesOf, type Role } from './roles';
import { WORKER_MODEL, type ServerCall, type ServerConfig } from './server';
import { FRONT_END_THREAD_PREFIX, GROUP_LABELS, GROUPS, readThreads, threadUse, type Group } from './thread-cpu';

/** The whole run is stopped past this, whatever it is doing. */
const WATCHDOG_MS = 175_000;
/** The reference figure: whole-server CPU per small request at c=32 on 2 cores, and the goal for a core thread. */
const REFERENCE = {
  processUsC32: 34,
  coreGoalFraction: 1 / 5,
  /** The bare echo's CPU per request at c=32 on the machine and in the days the 34 µs comes from (bench:http). */
  bareUsC32: 31.4,
  measuredOn: 'bench:http, 2026-11-26, Node 20',
};
/** The calibration cell: a bare node:http echo (bench:http's baseline), HTTP binary, at the reference's c. */
const BARE_CONCURRENCY = 32;

/** The two ways the identity runs. */
const MODELS = [
  { key: 'inproc', name: 'identity_fp32', label: 'in-process' },
  { key: 'worker', name: WORKER_MODEL, label: 'worker instance' },
] as const;
type ModelKey = (typeof MODELS)[number]['key'];

interface Options extends WindowOptions {
  concurrencies: number[];
  /** The server's `httpThreadCount`: 1 serves the ports on the main thread. */
  frontEndThreads: number;
  protocols: Protocol[];
  pin: boolean;
  profile: boolean;
  write: boolean;
}

function parseOptions(): Options {
  const f = parseFlags('npm run bench:cores -- [options]', {
    ...windowFlags({ rounds: 2, duration: 2, warmup: 0.5 }),
    concurrency: { type: 'list', default: ['1', '32', '64'], help: 'connections (HTTP) or outstanding calls (gRPC) of each cell' },
    protocols: { type: 'list', default: PROTOCOLS, help: 'binary (HTTP binary tensors), json (HTTP JSON), grpc' },
    'front-end-threads': {
      type: 'number',
      default: 1,
      help: "the server's httpThreadCount: 1 serves the ports on the main thread; N ≥ 2 on N front-end threads, the main thread being the core thread (report: the cores-threads block)",
    },
    'no-pin': NO_PIN_FLAG,
    'no-profile': { type: 'switch', help: "skip the main thread's CPU profile at the highest concurrency" },
    'no-write': NO_WRITE_FLAG,
  });
  const protocols = f.protocols as Protocol[];
  for (const p of protocols) if (!PROTOCOLS.includes(p)) throw new UsageError(`unknown protocol ${p}`);
  const concurrencies = f.concurrency.map(Number);
  for (const c of concurrencies) if (!(Number.isInteger(c) && c >= 1)) throw new UsageError(`--concurrency: expected whole numbers ≥ 1, got ${f.concurrency.join(',')}`);
  const frontEndThreads = f['front-end-threads'];
  if (!(Number.isInteger(frontEndThreads) && frontEndThreads >= 1)) throw new UsageError(`--front-end-threads: expected a whole number ≥ 1, got ${frontEndThreads}`);
  return {
    // Every cell on both models, and the bare echo.
    ...windowOptions(f, protocols.length * concurrencies.length * MODELS.length + 1, 120),
    concurrencies,
    frontEndThreads,
    protocols,
    pin: !f['no-pin'],
    profile: !f['no-profile'],
    write: !f['no-write'],
  };
}

// ---- one measurement -----------------------------------------------------------------------------

/** A load run with what each of the server's thread groups used over its window, per request. */
interface Sample {
  rps: number;
  p50: number;
  p99: number;
  clientCpu: number;
  /** CPU µs per request: the whole process, and each thread group. */
  processUs: number;
  groupUs: Record<Group, number>;
  /** Threads that used CPU in the window, as `name×count` (the main thread as `main`, front-end threads as `tstriton-fe-<i>`). */
  threadNames: string;
}

/** Runs `fn` `ms` from now, with the time it ran. */
function at<T>(ms: number, fn: () => T): Promise<{ value: T; t: number }> {
  return new Promise((resolve, reject) =>
    setTimeout(() => {
      try {
        resolve({ value: fn(), t: performance.now() });
      } catch (err) {
        reject(err as Error);
      }
    }, ms),
  );
}

/** A closed-loop load of `target` at `concurrency`; requests unanswered 5 s after the window count as late. */
function loadSpec(target: LoadTarget, concurrency: number, warmupMs: number, durationMs: number): LoadSpec {
  return { ...target, concurrency, warmupMs, durationMs, capMs: warmupMs + durationMs + 5000 };
}

/**
 * Runs `spec` against the server, reading its threads from /proc when the load generator's window opens and
 * closes (to within the IPC delay); CPU per request is CPU over the parent's window divided by the responses the
 * window's throughput makes of it.
 */
async function sample(load: LoadGen, server: ChildProc, spec: LoadSpec, what: string): Promise<Sample> {
  const warmupMs = spec.warmupMs ?? 0;
  const durationMs = spec.durationMs ?? 0;
  const pid = server.proc.pid as number;
  const start = at(warmupMs, () => readThreads(pid));
  const end = at(warmupMs + durationMs, () => readThreads(pid));
  // Awaited below; a failure is not to go unhandled while the load runs.
  for (const p of [start, end]) p.catch(() => undefined);
  const r = await load.run(spec);
  const [a, b] = await Promise.all([start, end]);
  if (r.errors > 0) throw new Error(`${what}: ${r.errors} errors, first: ${r.firstError}`);
  if (r.count === 0) throw new Error(`${what}: no response in the window`);
  const rps = (r.count * 1000) / r.elapsedMs;
  const served = (rps * (b.t - a.t)) / 1000;
  const use = threadUse(a.value, b.value);
  const names = new Map<string, number>();
  for (const t of use.threads) {
    const name = t.group === 'main' ? 'main' : t.group === 'front' ? `${FRONT_END_THREAD_PREFIX}<i>` : t.name;
    names.set(name, (names.get(name) ?? 0) + 1);
  }
  return {
    rps,
    p50: r.p50,
    p99: r.p99,
    clientCpu: r.clientCpu,
    processUs: use.processMicros / served,
    groupUs: Object.fromEntries(GROUPS.map((g) => [g, use.byGroup[g] / served])) as Record<Group, number>,
    threadNames: [...names].map(([n, k]) => (k > 1 ? `${n}×${k}` : n)).join(', '),
  };
}

/** A sample in one line; `front`: with the front-end threads' CPU. */
const describe = (s: Sample, front = false): string =>
  `${fmtInt(s.rps).padStart(7)} req/s  p50 ${fmtUs(s.p50).padStart(5)} µs  main ${s.groupUs.main.toFixed(1).padStart(5)} µs/req  ` +
  (front ? `front ${s.groupUs.front.toFixed(1).padStart(5)} µs/req  ` : '') +
  `process ${s.processUs.toFixed(1).padStart(5)} µs/req  client ${(s.clientCpu * 100).toFixed(0)} %`;

// ---- the run -------------------------------------------------------------------------------------

interface Cell {
  protocol: Protocol;
  concurrency: number;
  samples: Record<ModelKey, Sample[]>;
}

/** Medians over a cell's rounds for one model. */
interface Summary {
  rps: number;
  p50: number;
  processUs: number;
  groupUs: Record<Group, number>;
  threadNames: string;
}

function summarize(samples: readonly Sample[]): Summary {
  return {
    rps: median(samples.map((s) => s.rps)),
    p50: median(samples.map((s) => s.p50)),
    processUs: median(samples.map((s) => s.processUs)),
    groupUs: Object.fromEntries(GROUPS.map((g) => [g, median(samples.map((s) => s.groupUs[g]))])) as Record<Group, number>,
    threadNames: samples[samples.length - 1]?.threadNames ?? '',
  };
}

/** The main thread's profile at the highest concurrency, split by role, per model and protocol. */
type Profiles = Partial<Record<`${ModelKey} ${Protocol}`, Record<Role, number>>>;

async function profileMainThread(load: LoadGen, server: ChildProc, ports: Ports, o: Options, concurrency: number): Promise<Profiles> {
  const out: Profiles = {};
  const warmupMs = o.warmupS * 1000;
  const durationMs = o.durationS * 1000;
  for (const model of MODELS) {
    for (const protocol of o.protocols) {
      const label = `${model.key}-${protocol}`;
      // Over the whole load, warm-up included: the profiler's start is slow, and its own calls are left out.
      await server.call<null>({ op: 'profileStart' } satisfies ServerCall);
      const r = await load.run(loadSpec(loadTarget(protocol, model.name, ports), concurrency, warmupMs, durationMs));
      const file = await server.call<string>({ op: 'profileStop', label } satisfies ServerCall);
      try {
        if (r.errors > 0) throw new Error(`profile of ${label}: ${r.errors} errors, first: ${r.firstError}`);
        const { shares, busyMicros } = rolesOf(readProfile(file));
        out[`${model.key} ${protocol}`] = shares;
        const split = ROLES.map((x) => `${ROLE_LABELS[x]} ${pct(shares[x])}`).join(', ');
        log(`  profile ${model.label.padEnd(15)} ${PROTOCOL_LABELS[protocol].padEnd(11)} busy ${(busyMicros / 1000).toFixed(0)} ms: ${split}`);
      } finally {
        rmSync(file, { force: true });
      }
    }
  }
  return out;
}

/** The server's main (core) thread alone on CPU 0; its other threads on the CPUs after it but the load's last one (on 2 CPUs, beside the load). */
function isolateCoreThread(pid: number, cpus: number): void {
  pinProcess(pid, cpus > 2 ? cpuList(1, cpus - 2) : String(cpus - 1));
  pinThread(pid, '0');
}

async function main(ctx: BenchContext): Promise<BenchOutcome> {
  const o = parseOptions();
  const cpus = os.availableParallelism();
  const pinned = o.pin && canPin();
  // The load generator on the last CPU, the server on the others.
  const serverCpus = cpuList(0, cpus - 2);
  const cells: Cell[] = o.protocols.flatMap((protocol) => o.concurrencies.map((concurrency) => ({ protocol, concurrency, samples: { inproc: [], worker: [] } })));
  const placement = pinned ? `; server on CPU ${serverCpus}, load on CPU ${cpus - 1}` : '';
  const threaded = o.frontEndThreads > 1;
  const threads = threaded ? `; ${o.frontEndThreads} front-end threads` : '';
  log(`bench:cores: ${machine()}; ${o.rounds} rounds × ${cells.length} cells × ${MODELS.length} models × (${o.warmupS} + ${o.durationS}) s${threads}${placement}`);

  const serverConfig: ServerConfig = { frontEndThreads: o.frontEndThreads };
  const server = await ChildProc.start('server', path.join(__dirname, 'server.js'), { args: [JSON.stringify(serverConfig)], readyTimeoutMs: 30_000 });
  const bare = await ChildProc.start('bare', path.join(__dirname, '..', 'http', 'server-baseline.js'), { readyTimeoutMs: 15_000 });
  if (pinned) for (const s of [server, bare]) pinProcess(s.proc.pid as number, serverCpus);
  const load = LoadGen.start(pinned ? cpus - 1 : undefined);
  const ports: Ports = { http: server.port, grpc: await server.call<number>({ op: 'grpcPort' } satisfies ServerCall) };

  const barePorts: Ports = { http: bare.port, grpc: 0 };
  for (const m of MODELS) for (const p of o.protocols) await verify(p, m.name, ports);
  await verify('binary', MODELS[0].name, barePorts);
  log('bench:cores: both models answer OUTPUT0 = INPUT0 over every protocol, and so does the bare echo');
  for (const m of MODELS) for (const p of o.protocols) await sample(load, server, loadSpec(loadTarget(p, m.name, ports), 32, 0, 750), `warm-up ${m.key} ${p}`);
  const bareSpec = (warmupMs: number, durationMs: number) => loadSpec(loadTarget('binary', MODELS[0].name, barePorts), BARE_CONCURRENCY, warmupMs, durationMs);
  await sample(load, bare, bareSpec(0, 750), 'warm-up bare');
  const bareSamples: Sample[] = [];

  for (let r = 0; r < o.rounds; r++) {
    for (const cell of cells) {
      for (const m of abba(r, MODELS)) {
        const what = `${PROTOCOL_LABELS[cell.protocol]} c=${cell.concurrency} ${m.label}`;
        const spec = loadSpec(loadTarget(cell.protocol, m.name, ports), cell.concurrency, o.warmupS * 1000, o.durationS * 1000);
        const s = await sample(load, server, spec, what);
        cell.samples[m.key].push(s);
        log(`  round ${r + 1} ${what.padEnd(36)} ${describe(s, threaded)}`);
      }
    }
    const b = await sample(load, bare, bareSpec(o.warmupS * 1000, o.durationS * 1000), 'bare echo');
    bareSamples.push(b);
    log(`  round ${r + 1} ${`HTTP binary c=${BARE_CONCURRENCY} bare node:http echo`.padEnd(36)} ${describe(b)}`);
  }
  const top = Math.max(...o.concurrencies);
  // The profiler ticks in wall time: a core thread that shares its CPU with the front-end threads would have its
  // samples land wherever another thread preempted it. For the profile it runs alone on CPU 0.
  if (o.profile && pinned && threaded) isolateCoreThread(server.proc.pid as number, cpus);
  const profiles = o.profile ? await profileMainThread(load, server, ports, o, top) : {};

  load.exit();
  await Promise.all([server.stop(), bare.stop()]);
  // No bar: the block says how far the core thread is from the core-thread goal.
  return { key: threaded ? 'cores-threads' : 'cores', body: report(o, cells, summarize(bareSamples), profiles, pinned ? { server: serverCpus, load: cpus - 1 } : undefined, ctx), write: o.write, allMet: true };
}

// ---- report --------------------------------------------------------------------------------------

const pct = (x: number): string => (Number.isFinite(x) ? `${(x * 100).toFixed(0)} %` : '–');
const us1 = (x: number): string => (Number.isFinite(x) ? x.toFixed(1) : '–');

function report(o: Options, cells: Cell[], bare: Summary, profiles: Profiles, pinning: { server: string; load: number } | undefined, ctx: BenchContext): string {
  const top = Math.max(...o.concurrencies);
  const n = o.frontEndThreads;
  const threaded = n > 1;
  // The front-end threads' column only where there are some: without them the tables are as they always were.
  const groups = GROUPS.filter((g) => threaded || g !== 'front');
  const perRequest = threaded
    ? [
        '| instance | protocol | c | req/s | p50 µs | core thread CPU µs/req | front-end threads CPU µs/req | process CPU µs/req | core ÷ process |',
        '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
      ]
    : [
        '| instance | protocol | c | req/s | p50 µs | main thread CPU µs/req | process CPU µs/req | main ÷ process |',
        '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |',
      ];
  const spread = [
    `| instance | protocol | ${groups.map((g) => GROUP_LABELS[g]).join(' | ')} | threads that used CPU |`,
    `| --- | --- | ${groups.map(() => '---:').join(' | ')} | --- |`,
  ];
  const roles = [
    `| instance | protocol | ${ROLES.map((r) => ROLE_LABELS[r]).join(' | ')} | core + callable µs/req (estimate) |`,
    `| --- | --- | ${ROLES.map(() => '---:').join(' | ')} | ---: |`,
  ];
  const summaries = new Map<string, Summary>();
  for (const m of MODELS) {
    for (const c of cells) {
      const s = summarize(c.samples[m.key]);
      summaries.set(`${m.key} ${c.protocol} ${c.concurrency}`, s);
      perRequest.push(
        `| ${m.label} | ${PROTOCOL_LABELS[c.protocol]} | ${c.concurrency} | ${fmtInt(s.rps)} | ${fmtUs(s.p50)} | ` +
          `${us1(s.groupUs.main)} | ${threaded ? `${us1(s.groupUs.front)} | ` : ''}${us1(s.processUs)} | ${(s.groupUs.main / s.processUs).toFixed(2)} |`,
      );
      if (c.concurrency !== top) continue;
      spread.push(`| ${m.label} | ${PROTOCOL_LABELS[c.protocol]} | ${groups.map((g) => pct(s.groupUs[g] / s.processUs)).join(' | ')} | ${s.threadNames} |`);
      const shares = profiles[`${m.key} ${c.protocol}`];
      if (shares) roles.push(`| ${m.label} | ${PROTOCOL_LABELS[c.protocol]} | ${ROLES.map((r) => pct(shares[r])).join(' | ')} | ${us1(s.groupUs.main * (shares.core + shares.callable))} |`);
    }
  }

  const goal = REFERENCE.processUsC32 * REFERENCE.coreGoalFraction;
  // How much slower this machine ran than the one the reference was measured on, by the bare echo's cost.
  const slower = bare.processUs / REFERENCE.bareUsC32;
  const ratios = [
    `Calibration: bench:http's bare node:http echo (HTTP binary, c=${BARE_CONCURRENCY}, measured in every round beside the models) took ` +
      `${us1(bare.processUs)} µs of CPU per request (${fmtInt(bare.rps)} req/s), ${slower.toFixed(2)}× the ${REFERENCE.bareUsC32} µs it took when the ` +
      `reference's ${REFERENCE.processUsC32} µs was measured (${REFERENCE.measuredOn}): read the µs below as relative, or divide them by ${slower.toFixed(2)}.`,
  ];
  const c32 = summaries.get('inproc binary 32');
  if (c32 && !threaded) {
    ratios.push(
      `In-process, HTTP binary, c=32: ${us1(c32.processUs)} µs of process CPU per request, ${(c32.processUs / bare.processUs).toFixed(2)}× the bare echo ` +
        `(the reference figure: ${(REFERENCE.processUsC32 / REFERENCE.bareUsC32).toFixed(2)}×), of which the main thread ${us1(c32.groupUs.main)} µs (${pct(c32.groupUs.main / c32.processUs)}).`,
    );
  }
  if (c32 && threaded) {
    ratios.push(
      `In-process, HTTP binary, c=32: ${us1(c32.processUs)} µs of process CPU per request, ${(c32.processUs / bare.processUs).toFixed(2)}× the bare echo ` +
        `(the reference figure: ${(REFERENCE.processUsC32 / REFERENCE.bareUsC32).toFixed(2)}×), of which the front-end threads ${us1(c32.groupUs.front)} µs ` +
        `(${pct(c32.groupUs.front / c32.processUs)}) and the core thread ${us1(c32.groupUs.main)} µs (${pct(c32.groupUs.main / c32.processUs)}).`,
    );
  }
  for (const m of MODELS) {
    for (const p of o.protocols) {
      const s = summaries.get(`${m.key} ${p} ${top}`);
      const shares = profiles[`${m.key} ${p}`];
      const what = `${m.label[0]?.toUpperCase()}${m.label.slice(1)}, ${PROTOCOL_LABELS[p]}, c=${top}`;
      if (threaded && s) {
        // With front-end threads the core thread's whole CPU is what it carries; the profile says what it is spent on.
        const core = s.groupUs.main;
        const split = shares ? `; by its profile, core + callable ${pct(shares.core + shares.callable)}, Node I/O ${pct(shares.nodeIo)}, GC ${pct(shares.gc)}, other ${pct(shares.other)}` : '';
        ratios.push(
          `${what}: the core thread ${us1(core)} µs/req, ${pct(core / s.processUs)} of the process's CPU per request (goal ≤ ${pct(REFERENCE.coreGoalFraction)})${split}; ` +
            `on the reference machine ≈ ${us1(core / slower)} µs against the goal of ${us1(goal)} µs (${(core / slower / goal).toFixed(2)}×); ` +
            `one core thread at ${us1(core)} µs carries ≈ ${fmtInt(1e6 / core)} req/s here.`,
        );
        continue;
      }
      if (!s || !shares) continue;
      const core = s.groupUs.main * (shares.core + shares.callable);
      ratios.push(
        `${what}: core + callable ≈ ${us1(core)} µs/req, ${pct(core / s.processUs)} of the process's CPU per request ` +
          `(goal ≤ ${pct(REFERENCE.coreGoalFraction)}); on the reference machine ≈ ${us1(core / slower)} µs against the goal of ${us1(goal)} µs ` +
          `(${(core / slower / goal).toFixed(2)}×); one core thread at ${us1(core)} µs carries ≈ ${fmtInt(1e6 / core)} req/s here.`,
      );
    }
  }

  const [load0, load1] = ctx.loads();
  const head = threaded ? threadedHead(n, c32, slower, goal) : singleThreadHead();
  return [
    threaded ? `## Cores: the core thread behind ${n} front-end threads` : "## Cores: where a request's CPU goes",
    '',
    ...provenanceLines({
      startedAt: ctx.startedAt,
      command: threaded ? `npm run bench:cores -- --front-end-threads ${n}` : 'npm run bench:cores',
      source: `bench/cores/run.ts, ${ctx.elapsedS().toFixed(0)} s`,
      loads: [load0, load1],
      loadNote: 'the server and the load generator add about 2; others share this machine when it is higher',
    }),
    `${os.availableParallelism()} cores; ${process.version}; ${isoDate(ctx.startedAt).slice(0, 10)}.`,
    '',
    ...head,
    '',
    `**CPU per request** (medians over ${o.rounds} rounds):`,
    '',
    perRequest.join('\n'),
    '',
    `**Where the process's CPU went at c=${top}** (share of the process's user + system time, by thread):`,
    '',
    spread.join('\n'),
    '',
    ...(roles.length > 2
      ? [
          `**The ${threaded ? 'core' : 'main'} thread at c=${top}, by the role of its code** (CPU profile, share of its busy time):`,
          '',
          roles.join('\n'),
          '',
        ]
      : []),
    ...ratios.map((r) => `- ${r}`),
    '',
    '**Method.**',
    ...(threaded
      ? [
          `- Server (bench/cores/server.ts): one \`Triton\` with \`httpThreadCount: ${n}\`: ${n} front-end threads serve HTTP and gRPC on`,
          '  127.0.0.1 (each listening on both ports, `reusePort`; the server checks that they run before it reports',
          '  ready), metrics off, logs silent;',
        ]
      : ['- Server (bench/cores/server.ts): one `Triton` with HTTP and gRPC on 127.0.0.1, metrics off, logs silent;']),
    '  `identity_fp32` bound as in examples/identity/model.ts (in-process, `@batch`, `maxBatchSize: 64`, dynamic',
    '  batcher on, `strict: true`), and `identity_fp32_worker`, the same callable and config in one `workers(...)`',
    '  instance. Request: INPUT0 FP32 `[1,16]`, as bench:http (binary and JSON) and bench:grpc send it; each',
    '  model and protocol is checked once to return OUTPUT0 = INPUT0.',
    `- Load: the benchmarks' load generator (bench/harness/loadgen.ts) in its own process, a closed loop of c keep-alive`,
    '  HTTP/1.1 connections or c outstanding calls on one grpc-js channel. ' +
      // One channel is one HTTP/2 connection, which the kernel gives to one front-end thread.
      (threaded ? 'The kernel spreads the HTTP connections over the front-end threads; the gRPC channel, one connection, is served by one of them. ' : '') +
      (pinning
        ? threaded
          ? `Server pinned, all its threads (the core thread and the ${n} front-end threads among them), to CPU ${pinning.server}, load generator to CPU ${pinning.load} (\`taskset\`).`
          : `Server pinned to CPU ${pinning.server}, load generator to CPU ${pinning.load} (\`taskset\`).`
        : 'No CPU pinning.'),
    `- Calibration: bench:http's baseline (bench/http/server-baseline.ts, a bare node:http KServe echo) in a child of its`,
    `  own, pinned like the server, measured once a round at HTTP binary c=${BARE_CONCURRENCY} in the same way.`,
    `- Each model and protocol warmed up 0.75 s at c=32; then ${o.rounds} rounds, each cell ${o.warmupS} s warm-up + ${o.durationS} s measured,`,
    '  the two models back to back (ABBA across rounds).',
    "- CPU: each thread's utime + stime from `/proc/<pid>/task/<tid>/stat` (clock ticks of `getconf CLK_TCK`, 10 ms",
    "  at 100 Hz: a few percent on the smallest groups), the process's from `/proc/<pid>/stat`, read from outside",
    "  when the load generator's window opens and closes; per request = CPU ÷ (req/s × window).",
    ...(threaded
      ? [
          `- Threads are grouped by \`/proc/<pid>/task/<tid>/comm\`. The front-end threads are workers named \`${FRONT_END_THREAD_PREFIX}<i>\`,`,
          '  a name Node 24 gives their OS threads. Node names the others itself: `V8Worker` and `DelayedTaskSche`',
          '  (V8’s platform, whose worker threads run concurrent GC marking and sweeping and background compiles),',
          '  `libuv-worker`, `WorkerThread` (a worker instance), `SignalInspector` (idle; counted as other).',
        ]
      : [
          '- Threads are grouped by `/proc/<pid>/task/<tid>/comm`. Node 24 names them itself: `V8Worker` and',
          '  `DelayedTaskSche` (V8’s platform, whose worker threads run concurrent GC marking and sweeping and background',
          '  compiles), `libuv-worker`, `WorkerThread` (a worker instance), `SignalInspector` (idle; counted as other).',
          '  Node 20 names none of them; there the server names them first (bench/cores/thread-names.ts): the threads',
          '  there before any script work as V8’s platform (the idle inspector thread among them), those that appear with',
          '  the first thread-pool call as libuv’s pool, and the worker instance names its own thread.',
        ]),
    ...(roles.length > 2 && !threaded
      ? [
          `- Roles: after the rounds, a CPU profile of the main thread (node:inspector, sampled every 250 µs; its own`,
          `  calls left out) over a ${o.warmupS} + ${o.durationS} s load at c=${top} per model and protocol. Each sample goes to the nearest frame up its stack`,
          '  that has a role (bench/cores/roles.ts): *transport code* (lib/server/http, grpc, openai, lib/protocol),',
          '  *core* (lib/server/infer-entry and server-core, lib/model, scheduler, instances, metrics, triton.ts),',
          '  *callable* (decorators and the identity), else *Node I/O* (Node or grpc-js code with no tstriton frame',
          '  above it: socket reads and writes, the HTTP parser, HTTP/2 framing, timers), *GC*, *other* (native code',
          '  outside JS). Shared helpers (lib/tensor, lib/errors, the wire-neutral request) count for their caller.',
          '  The estimate multiplies the main thread’s µs/req by the core + callable share (an in-process callable',
          '  would run on the core thread). It leaves out the GC its allocations cause, its part of *other*, and the',
          '  cost of handing requests between threads, which one thread does not pay today: a lower bound.',
        ]
      : []),
    ...(roles.length > 2 && threaded
      ? [
          `- Roles: after the rounds, a CPU profile of the core thread (the main thread; node:inspector, sampled every 250 µs;`,
          `  its own calls left out) over a ${o.warmupS} + ${o.durationS} s load at c=${top} per model and protocol${pinning ? ', with the core thread alone on CPU 0 and the server’s other threads moved beside the load (the sampler ticks in wall time: on a shared CPU, a sample would land on whatever the core thread was doing when another thread preempted it; alone, it batches differently, so the shares, not the µs, carry over)' : ''}. Each sample goes to the nearest frame up`,
          '  its stack that has a role (bench/cores/roles.ts): *transport code* (lib/server/http, grpc, openai, lib/protocol,',
          '  and the front-end threads’ own lib/server/front-end/front-end-thread.ts and remote-core.ts: none of it runs on',
          '  the core thread), *core* (lib/server/infer-entry and server-core, lib/model, scheduler, instances, metrics,',
          '  triton.ts, and the core side of the hand-off in lib/server/front-end: front-ends.ts taking the threads’',
          '  messages in and posting results back, hand-off.ts and records.ts reading requests out of the ring and writing',
          '  responses into it, messages.ts adopting what crossed as a structured clone, state-publisher.ts publishing',
          '  the core’s state to the threads), *callable* (decorators and the identity), else *Node I/O* (Node code with no tstriton',
          '  frame above it: here the message ports’ and timers’ own code), *GC* (which also counts the time the core thread',
          '  waits in a collection for V8’s helper threads, here on the loaded CPU: more than the CPU it spends),',
          '  *other* (native code outside JS). Shared helpers',
          '  (lib/tensor, lib/errors, the wire-neutral request) count for their caller. The estimate multiplies the core',
          '  thread’s µs/req by the core + callable share; what the core thread carries is its whole CPU per request',
          '  (the tables above), GC, Node’s message plumbing and *other* included.',
        ]
      : []),
    `- Reference (one event loop, 2026-11-26): about ${REFERENCE.processUsC32} µs of whole-server CPU per small request at c=32 on 2 cores; the goal`,
    `  for the planned design is a core thread at ≤ 1/5 of that (${us1(goal)} µs), so that one core thread keeps up with`,
    '  about five cores of front ends.',
  ].join('\n');
}

/** What the block says the main thread is when it serves the ports itself. */
function singleThreadHead(): string[] {
  return [
    '**One process today puts everything but the instances’ own work on its main thread**: socket reads, HTTP and',
    'gRPC parsing, tensor decoding, the core entry (model lookup, scheduling, batching), encoding and writing.',
    'A worker instance moves only the callable (and the batch’s messages) off it. The main thread’s CPU per',
    'request is therefore what a single event loop spends per request today; the profile table splits it into',
    'what would move to front-end threads and what a core thread would keep. Absolute times are noisy on 2',
    'shared cores; the ratios (main ÷ process, the shares, against the bare echo) are the steadier figures.',
  ];
}

/**
 * What the main thread is behind `n` front-end threads, and the block's figure: the core thread's CPU per request
 * at c=32 (in-process, HTTP binary) against the reference whole-server figure and against the goal, a fifth of it,
 * as measured and calibrated by the bare echo.
 */
function threadedHead(n: number, c32: Summary | undefined, slower: number, goal: number): string[] {
  const ref = REFERENCE.processUsC32;
  const figure = c32
    ? (() => {
        const us = c32.groupUs.main;
        const cal = us / slower;
        return [
          `**The core thread spent ${us1(us)} µs of CPU per request at c=32** (in-process identity, HTTP binary):`,
          `${(us / ref).toFixed(2)}× the reference's ${ref} µs of whole-server CPU per request, and ${(us / goal).toFixed(2)}× its fifth`,
          `(${us1(goal)} µs, the goal for a core thread). Calibrated by the bare echo (this machine ran it ${slower.toFixed(2)}× as slow as the`,
          `machine of the ${ref} µs), that is ${us1(cal)} µs: ${(cal / ref).toFixed(2)}× the ${ref} µs and ${(cal / goal).toFixed(2)}× the ${us1(goal)} µs, ` +
            `${cal <= goal ? 'within' : 'above'} the goal. One core thread at ${us1(us)} µs carries ≈ ${fmtInt(1e6 / us)} req/s here.`,
        ];
      })()
    : ['**The core thread at c=32 (in-process identity, HTTP binary) was not measured in this run**: it needs 32 in', '`--concurrency` and binary in `--protocols`.'];
  return [
    `**Behind ${n} front-end threads the main thread is the core thread**: the front-end threads (\`${FRONT_END_THREAD_PREFIX}<i>\`)`,
    'accept connections, read sockets, parse, decode tensors, encode and write; the core thread runs the core entry',
    '(model lookup, validation), scheduling and batching, the in-process callable (a worker instance runs its own on',
    'its thread), and the hand-off to and from the front-end threads (reading the requests they decoded out of a',
    'ring of shared memory, writing the responses into another, one message per turn). Its CPU per request bounds what one process serves, however many',
    'front-end threads it has. Absolute times are noisy on shared cores; the ratios (core ÷ process, the shares,',
    'against the bare echo) are the steadier figures.',
    '',
    ...figure,
  ];
}

runBench('bench:cores', WATCHDOG_MS, main);
