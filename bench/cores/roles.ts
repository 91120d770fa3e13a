/**
 * A main-thread CPU profile's busy time split by the role its code has with front-end threads in front of one
 * core thread (with front-end threads, the main thread is that core thread; with none, it does both): each
 * sample goes to the nearest frame up its stack that belongs to a role. Shared helpers (lib/tensor, lib/errors,
 * lib/config, the wire-neutral request of lib/server/infer-request.ts, ...) have no role of their own: their
 * time goes to whoever called them.
 */
import { readFileSync } from 'node:fs';

/** The roles, in report order. */
export const ROLES = ['transport', 'nodeIo', 'core', 'callable', 'gc', 'other'] as const;
export type Role = (typeof ROLES)[number];

/** How each role reads in the report. */
export const ROLE_LABELS: Record<Role, string> = {
  transport: 'transport code',
  nodeIo: 'Node I/O',
  core: 'core',
  callable: 'callable',
  gc: 'GC',
  other: 'other',
};

/** Our compiled files that decide a role, by path under dist/; the first match wins. */
const OURS: readonly [RegExp, Role][] = [
  // Front end: parsing, decoding, encoding and writing, per protocol.
  [/^lib\/server\/(http|grpc|openai)\//, 'transport'],
  [/^lib\/protocol\//, 'transport'],
  // With front-end threads (`httpThreadCount` above 1): what runs on those threads (their entry, and the core as
  // they see it) is front end; the core thread's side of the hand-off is core: taking requests in (the message
  // handler, the records read out of the ring), writing responses into records and posting them back, and
  // answering the threads' synchronous calls.
  [/^lib\/server\/front-end\/(front-end-thread|remote-core|core-mirrors)\.js$/, 'transport'],
  [/^lib\/server\/front-end\/(front-ends|messages|state-publisher|packed-error|hand-off|records)\.js$/, 'core'],
  // What must stay one per server: the entry, models, scheduling, instances (their main-thread side), metrics.
  [/^lib\/server\/(infer-entry|server-core)\.js$/, 'core'],
  [/^lib\/(model|scheduler|instances|metrics|tracing|bls|triton)\//, 'core'],
  [/^lib\/base\/(in-flight|cancellation)\.js$/, 'core'],
  [/^lib\/callable\/custom-metrics\.js$/, 'core'],
  // The model's own code: decorators and the identity callable.
  [/^(decorators|examples)\//, 'callable'],
  [/^bench\/cores\/identity-worker\.js$/, 'callable'],
];

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}

/** A V8 CPU profile as node:inspector's `Profiler.stop` returns it. */
export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

function roleOfUrl(url: string): Role | undefined {
  const i = url.indexOf('/dist/');
  if (i < 0) return undefined;
  const rel = url.slice(i + '/dist/'.length);
  return OURS.find(([re]) => re.test(rel))?.[1];
}

/**
 * Busy time by role, as shares (summing to 1), and the busy time in µs; idle time and the profiler's own calls
 * are left out. A sample with no frame of ours that
 * decides goes to `nodeIo` if Node's or an npm package's code is on its stack (socket reads and writes, the
 * HTTP parser, HTTP/2 framing, timers), to `gc` for the garbage collector, else to `other`.
 */
export function rolesOf(profile: CpuProfile): { shares: Record<Role, number>; busyMicros: number } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const memo = new Map<number, Role | 'idle'>();
  const classify = (id: number): Role | 'idle' => {
    const known = memo.get(id);
    if (known) return known;
    const leaf = byId.get(id)?.callFrame.functionName;
    let role: Role | 'idle' | undefined = leaf === '(idle)' ? 'idle' : leaf === '(garbage collector)' ? 'gc' : undefined;
    let sawNode = false;
    let profiler = false;
    for (let cur: number | undefined = id; cur !== undefined && !profiler; cur = parent.get(cur)) {
      const url = byId.get(cur)?.callFrame.url ?? '';
      // The profiler starting and stopping itself (inspector calls) is no part of serving.
      profiler = url === 'node:inspector';
      if (role !== undefined) continue;
      role = roleOfUrl(url);
      sawNode ||= url.startsWith('node:') || url.includes('/node_modules/');
    }
    const result = profiler ? 'idle' : (role ?? (sawNode ? 'nodeIo' : 'other'));
    memo.set(id, result);
    return result;
  };
  const time = Object.fromEntries(ROLES.map((r) => [r, 0])) as Record<Role, number>;
  let busy = 0;
  profile.samples.forEach((id, i) => {
    const role = classify(id);
    if (role === 'idle') return;
    const dt = profile.timeDeltas[i] ?? 0;
    time[role] += dt;
    busy += dt;
  });
  const shares = Object.fromEntries(ROLES.map((r) => [r, busy > 0 ? time[r] / busy : NaN])) as Record<Role, number>;
  return { shares, busyMicros: busy };
}

/** Reads a `.cpuprofile` file. */
export function readProfile(file: string): CpuProfile {
  return JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
}
