/**
 * bench:flood — the server's memory under a flood of sequence STARTs that never END: over 4 gRPC
 * `ModelStreamInfer` streams, 100,000 STARTs, each of a new correlation id, to a sequence batcher of 2,048
 * candidate sequences that idle out after 300 ms (server.ts). The batcher holds 2,048 of them in its slots; the
 * others wait in its backlog, in arrival order, and each takes the slot of a sequence that idled out, so the
 * server holds most of the flood at once for the seconds it takes to run through it.
 *
 *   npm run build && node dist/bench/flood/run.js [--threads 1,2 --floods 4 --starts 100000 --streams 4
 *     --strategy oldest --settle 20 --idle-collection MB --malloc-arena-max N --snapshots DIR]
 *
 * For each thread count, one server child; its RSS (from /proc) before the first flood, then for each flood the
 * peak (VmHWM, reset before the flood through /proc/<pid>/clear_refs) and what is left once every answer has come
 * and the server has idled `--settle` seconds; and each thread's heap (V8's used and committed, its young
 * generation, external memory and ArrayBuffers) after each flood. `--snapshots DIR` writes a heap snapshot of
 * every thread before the first flood and after the last. The answers are counted by outcome.
 */
import * as grpc from '@grpc/grpc-js';
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import type { ModelInferRequestMessage, ModelStreamInferResponseMessage } from '../../lib/protocol/messages';
import { loadProtos } from '../../lib/protocol/protos';
import { arenaCapEnvironment, MALLOC_ARENA_MAX } from '../../lib/base/malloc-arenas';
import { log, runBench } from '../harness/bench-run';
import { ChildProc } from '../harness/child-proc';
import { machine } from '../harness/doc-block';
import { parseFlags, UsageError } from '../harness/options';
import { FLOOD_MODEL, type FloodServerCall, type FloodServerConfig, type ThreadMemory } from './server';

/** The whole run is stopped past this, whatever it is doing. */
const WATCHDOG_MS = 900_000;
const MB = 1024 * 1024;

interface Options {
  threads: number[];
  floods: number;
  starts: number;
  streams: number;
  strategy: FloodServerConfig['strategy'];
  settleMs: number;
  snapshots: string | undefined;
  /** The server's `idleCollectionMegabytes`, when given. */
  idleCollection: number | undefined;
  /** The server's environment: glibc's arena cap as `tstriton serve` starts under it, or as `--malloc-arena-max` says. */
  env: NodeJS.ProcessEnv;
}

function parseOptions(): Options {
  const f = parseFlags('node dist/bench/flood/run.js [options]', {
    threads: { type: 'list', default: ['1', '2'], help: 'front-end thread counts, one server each' },
    floods: { type: 'number', default: 4, help: 'floods in a row on each server' },
    starts: { type: 'number', default: 100_000, help: 'STARTs in a flood' },
    streams: { type: 'number', default: 4, help: 'gRPC streams a flood is spread over' },
    strategy: { type: 'list', default: ['oldest'], help: 'the sequence batcher: oldest or direct' },
    settle: { type: 'number', default: 20, help: 'seconds the server idles after a flood before its RSS is read and the next flood starts (the idle collection runs after 10 s of quiet)' },
    snapshots: { type: 'list', default: [], help: 'a folder for heap snapshots of every thread, before and after' },
    'idle-collection': { type: 'number', default: -1, help: "the server's idleCollectionMegabytes (-1: the server's default)" },
    'malloc-arena-max': {
      type: 'number',
      default: -1,
      help: `the server's MALLOC_ARENA_MAX (-1: as tstriton serve starts, ${MALLOC_ARENA_MAX} unless this environment sets it; 0: unset, glibc's own)`,
    },
  });
  const threads = f.threads.map(Number);
  if (!threads.every((n) => Number.isInteger(n) && n >= 1)) throw new UsageError(`--threads: expected counts ≥ 1, got ${f.threads.join(',')}`);
  const strategy = f.strategy[0];
  if (strategy !== 'oldest' && strategy !== 'direct') throw new UsageError(`--strategy: expected oldest or direct, got ${strategy}`);
  if (!(f.floods >= 1 && f.starts >= 1 && f.streams >= 1 && f.settle >= 0)) throw new UsageError('--floods, --starts and --streams are ≥ 1, --settle ≥ 0');
  const idleCollection = f['idle-collection'] < 0 ? undefined : f['idle-collection'];
  const arenas = f['malloc-arena-max'];
  const { MALLOC_ARENA_MAX: _, ...unset } = process.env;
  const env = arenas < 0 ? (arenaCapEnvironment() ?? process.env) : arenas === 0 ? unset : { ...process.env, MALLOC_ARENA_MAX: String(arenas) };
  return { threads, floods: f.floods, starts: f.starts, streams: f.streams, strategy, settleMs: f.settle * 1000, snapshots: f.snapshots[0], idleCollection, env };
}

// ---- the server's memory, from /proc ----------------------------------------------------------------

/** A field of /proc/<pid>/status in bytes (`VmRSS`, `VmHWM`). */
function status(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${field}:`));
  return Number(/(\d+)/.exec(line ?? '')?.[1]) * 1024;
}

/** The RSS of a process by the kind of memory, as /proc/<pid>/smaps shows its mappings (bytes). */
export interface RssByKind {
  /** glibc's main arena (the `[heap]` of brk). */
  brk: number;
  /** glibc's other arenas: anonymous read-write heaps at 64 MiB-aligned addresses (one or more per thread that mallocs). */
  arenas: number;
  /** Other anonymous memory: V8's heap pages, code, and mallocs over the mmap threshold. */
  anon: number;
  /** Mapped files (the node binary, libraries) and thread stacks. */
  file: number;
  /** Of all these, pages given back with MADV_FREE that the kernel has not taken yet: RSS until memory runs short. */
  lazyFree: number;
}

/** 64 MiB: where glibc aligns the heaps of its non-main arenas (HEAP_MAX_SIZE on 64-bit). */
const ARENA_ALIGN = 64n * 1024n * 1024n;

function rssByKind(pid: number): RssByKind {
  const out: RssByKind = { brk: 0, arenas: 0, anon: 0, file: 0, lazyFree: 0 };
  let kind: Exclude<keyof RssByKind, 'lazyFree'> = 'file';
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const mapping = /^([0-9a-f]+)-[0-9a-f]+ (\S+) \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (mapping) {
      const [, start = '0', perms, name] = mapping;
      if (name === '[heap]') kind = 'brk';
      else if (name) kind = 'file';
      else kind = BigInt(`0x${start}`) % ARENA_ALIGN === 0n && perms === 'rw-p' ? 'arenas' : 'anon';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) out[kind] += Number(rss[1]) * 1024;
    const lazy = /^LazyFree:\s+(\d+) kB/.exec(line);
    if (lazy) out.lazyFree += Number(lazy[1]) * 1024;
  }
  return out;
}

/** Starts the peak (VmHWM) over from the RSS now. */
function resetPeak(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

// ---- the flood ----------------------------------------------------------------------------------------

const streamDef = loadProtos('number').inference.ModelStreamInfer as grpc.MethodDefinition<ModelInferRequestMessage, ModelStreamInferResponseMessage>;
const ONE = Buffer.from(new Int32Array([1]).buffer);

/** A START of sequence `id`, without END. */
function start(id: number): ModelInferRequestMessage {
  return {
    model_name: FLOOD_MODEL,
    id: '',
    parameters: { sequence_id: { int64_param: id }, sequence_start: { bool_param: true } },
    inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1] }],
    raw_input_contents: [ONE],
  } as unknown as ModelInferRequestMessage;
}

/** The answers of a flood, by outcome: `ok`, or the error message with its numbers taken out. */
type Outcomes = Map<string, number>;

/**
 * Sends `count` STARTs of ids `first`, `first + 1`, ... on one stream, as fast as the stream takes them (a full
 * write buffer waits for 'drain'), half-closes, and resolves with its answers once the server ends the stream.
 */
function stream(client: grpc.Client, first: number, count: number, outcomes: Outcomes, onAnswer: () => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const call = client.makeBidiStreamRequest(streamDef.path, streamDef.requestSerialize, streamDef.responseDeserialize);
    let answered = 0;
    call.on('data', (m: ModelStreamInferResponseMessage) => {
      answered++;
      onAnswer();
      const key = m.error_message ? m.error_message.replace(/\d+/g, 'N') : 'ok';
      outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
    });
    call.on('error', reject);
    call.on('end', () => (answered === count ? resolve() : reject(new Error(`a stream ended after ${answered} of ${count} answers`))));
    let i = 0;
    const send = (): void => {
      while (i < count) if (!call.write(start(first + i++))) return void call.once('drain', send);
      call.end();
    };
    send();
  });
}

/**
 * One flood: `starts` STARTs of new ids from `first` on, spread over `streams` streams, each on a connection of
 * its own (as separate clients open them), so that the kernel spreads them over the front-end threads.
 * `halfway` runs once half the answers have come.
 */
async function flood(port: number, first: number, o: Options, halfway: () => Promise<void>): Promise<Outcomes> {
  // A channel of its own per client: grpc-js would otherwise share one connection among clients of one target.
  const clients = Array.from({ length: o.streams }, () => new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }));
  const outcomes: Outcomes = new Map();
  const per = Math.ceil(o.starts / o.streams);
  let answers = 0;
  let half: Promise<void> = Promise.resolve();
  const onAnswer = () => {
    if (++answers === Math.ceil(o.starts / 2)) half = halfway();
  };
  try {
    await Promise.all(clients.map((client, s) => stream(client, first + s * per, Math.min(per, o.starts - s * per), outcomes, onAnswer)));
    await half;
  } finally {
    for (const c of clients) c.close();
  }
  return outcomes;
}

// ---- a run ------------------------------------------------------------------------------------------

interface FloodRow {
  peak: number;
  after: number;
  kinds: RssByKind;
  seconds: number;
  outcomes: Outcomes;
  threads: ThreadMemory[];
}

interface ServerRun {
  frontEndThreads: number;
  before: number;
  beforeThreads: ThreadMemory[];
  floods: FloodRow[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function runServer(frontEndThreads: number, o: Options): Promise<ServerRun> {
  const script = path.join(__dirname, 'server.js');
  const cfg: FloodServerConfig = { frontEndThreads, strategy: o.strategy, idleCollectionMegabytes: o.idleCollection };
  const server = await ChildProc.start(`flood server (${frontEndThreads} thread${frontEndThreads > 1 ? 's' : ''})`, script, { args: [JSON.stringify(cfg)], env: o.env });
  const pid = server.proc.pid as number;
  const threads = () => server.call<ThreadMemory[]>({ op: 'threads' } satisfies FloodServerCall);
  const snapshot = (label: string) =>
    o.snapshots ? server.call<string[]>({ op: 'snapshot', dir: o.snapshots, label: `t${frontEndThreads}-${label}` } satisfies FloodServerCall).then((f) => log(`  snapshots: ${f.join(', ')}`)) : Promise.resolve();
  try {
    await sleep(o.settleMs);
    const run: ServerRun = { frontEndThreads, before: status(pid, 'VmRSS'), beforeThreads: await threads(), floods: [] };
    // After the RSS is read: a snapshot costs the server memory of its own.
    await snapshot('before');
    log(`${frontEndThreads} thread(s): RSS ${mb(run.before)} MB before (${kindsText(rssByKind(pid))})`);
    for (let k = 0; k < o.floods; k++) {
      resetPeak(pid);
      const t0 = Date.now();
      const outcomes = await flood(server.port, (k + 1) * 1_000_000, o, () => (k === 0 ? snapshot('halfway') : Promise.resolve()));
      const seconds = (Date.now() - t0) / 1000;
      const peak = status(pid, 'VmHWM');
      await sleep(o.settleMs);
      const row: FloodRow = { peak, after: status(pid, 'VmRSS'), kinds: rssByKind(pid), seconds, outcomes, threads: await threads() };
      run.floods.push(row);
      log(`  flood ${k + 1}: peak ${mb(peak)} MB, after ${mb(row.after)} MB (${kindsText(row.kinds)}) in ${seconds.toFixed(1)} s; ${outcomesText(outcomes)}`);
      log(`    ${threadsText(row.threads)}`);
    }
    await snapshot('after');
    return run;
  } finally {
    server.proc.kill('SIGTERM');
  }
}

const mb = (bytes: number): string => (bytes / MB).toFixed(0);

function kindsText(k: RssByKind): string {
  return `malloc main ${mb(k.brk)}, arenas ${mb(k.arenas)}, other anonymous ${mb(k.anon)}, files ${mb(k.file)}; lazily freed ${mb(k.lazyFree)}`;
}

function outcomesText(outcomes: Outcomes): string {
  return [...outcomes].map(([k, n]) => `${n} ${k}`).join('; ');
}

function threadsText(threads: readonly ThreadMemory[]): string {
  return threads
    .map((t) => `${t.thread} heap ${mb(t.heapUsed)}/${mb(t.heapTotal)} (new ${mb(t.newSpace)}) ext ${mb(t.external)} ab ${mb(t.arrayBuffers)}`)
    .join(' · ');
}

/** The bars of issue 35: N threads grow at most 1.25× what one thread grows at the peak; RSS after the last flood at most 5 % over what it was after the first. */
const BARS = { peakGrowthRatio: 1.25, afterGrowth: 0.05 };

/** Each bar, met or not, as a line; and whether all were met. */
function bars(runs: readonly ServerRun[]): { lines: string[]; met: boolean } {
  const lines: string[] = [];
  let met = true;
  const growth = (run: ServerRun) => Math.max(...run.floods.map((f) => f.peak)) - run.before;
  const one = runs.find((r) => r.frontEndThreads === 1);
  for (const r of runs) {
    const after = (r.floods[r.floods.length - 1] as FloodRow).after / (r.floods[0] as FloodRow).after - 1;
    const afterMet = after <= BARS.afterGrowth;
    met &&= afterMet;
    lines.push(`${r.frontEndThreads} thread(s): RSS after the last flood ${(after * 100).toFixed(1)} % over the first's (bar: ≤ ${BARS.afterGrowth * 100} %) ${afterMet ? 'met' : 'NOT met'}.`);
    if (r === one || !one) continue;
    const ratio = growth(r) / growth(one);
    const ratioMet = ratio <= BARS.peakGrowthRatio;
    met &&= ratioMet;
    lines.push(`${r.frontEndThreads} threads grow ${ratio.toFixed(2)}× what one thread grows at the peak (bar: ≤ ${BARS.peakGrowthRatio}×) ${ratioMet ? 'met' : 'NOT met'}.`);
  }
  return { lines, met };
}

function table(runs: readonly ServerRun[], o: Options): string {
  const floods = Array.from({ length: o.floods }, (_, k) => k + 1);
  const head = ['threads', 'before', ...floods.map((k) => `flood ${k}: peak / after`), 'growth at peak', `after flood ${o.floods} / after flood 1`];
  const rows = runs.map((r) => {
    const last = r.floods[r.floods.length - 1] as FloodRow;
    const first = r.floods[0] as FloodRow;
    const peak = Math.max(...r.floods.map((f) => f.peak));
    return [
      String(r.frontEndThreads),
      mb(r.before),
      ...r.floods.map((f) => `${mb(f.peak)} / ${mb(f.after)}`),
      `+${mb(peak - r.before)}`,
      `${((last.after / first.after - 1) * 100).toFixed(1)} %`,
    ];
  });
  const lines = [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)];
  const idle = o.idleCollection === undefined ? "the server's default idleCollectionMegabytes" : `idleCollectionMegabytes ${o.idleCollection}`;
  const arenas = `MALLOC_ARENA_MAX ${o.env.MALLOC_ARENA_MAX ?? "unset (glibc's own)"}`;
  lines.push('', `RSS in MB; ${o.starts} STARTs over ${o.streams} streams, ${o.strategy}, ${idle}, ${arenas}; ${machine()}.`);
  for (const line of bars(runs).lines) lines.push(line);
  lines.push('', 'After the last flood, each thread (MB: heap used/committed, young generation, external, ArrayBuffers):');
  for (const r of runs) lines.push(`- ${r.frontEndThreads} thread(s): ${threadsText((r.floods[r.floods.length - 1] as FloodRow).threads)}`);
  return lines.join('\n');
}

runBench('bench:flood', WATCHDOG_MS, async (ctx) => {
  const o = parseOptions();
  const runs: ServerRun[] = [];
  for (const n of o.threads) runs.push(await runServer(n, o));
  const body = table(runs, o);
  log(`(${ctx.elapsedS().toFixed(0)} s)`);
  return { key: 'flood', body, write: false, allMet: bars(runs).met };
});
