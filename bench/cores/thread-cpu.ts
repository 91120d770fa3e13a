/**
 * CPU time of another process, per thread, read from outside: `/proc/<pid>/stat` and
 * `/proc/<pid>/task/<tid>/{stat,comm}` (utime + stime, in clock ticks of `getconf CLK_TCK`), grouped by the
 * threads' names (thread-names.ts gives them where Node does not).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { THREAD_NAMES } from './thread-names';

/** The thread groups a request's CPU is reported over, in report order. */
export const GROUPS = ['main', 'front', 'instances', 'v8', 'libuv', 'other'] as const;
export type Group = (typeof GROUPS)[number];

/** How each group reads in the report. */
export const GROUP_LABELS: Record<Group, string> = {
  main: 'main (core) thread',
  front: 'front-end threads',
  instances: 'worker instances',
  v8: 'V8 platform (GC, compiler)',
  libuv: 'libuv pool',
  other: 'other',
};

/** How a server's front-end threads are named (lib/server/front-end/front-ends.ts: `tstriton-fe-<index>`). */
export const FRONT_END_THREAD_PREFIX = 'tstriton-fe-';

/**
 * The group of a thread named `name` (`tid` of process `pid`). Newer Node names its own threads (Node 24:
 * `MainThread`, `V8Worker`, `DelayedTaskSche`, `SignalInspector`, `libuv-worker`, and `WorkerThread` for a worker
 * given no name): those names count too. Front-end threads (`httpThreadCount` above 1) are workers Node names
 * after their `name` option, so they are told from worker instances by name.
 */
export function groupOf(pid: number, tid: number, name: string): Group {
  if (tid === pid) return 'main';
  if (name.startsWith(FRONT_END_THREAD_PREFIX)) return 'front';
  if (name === THREAD_NAMES.instance || name === 'WorkerThread') return 'instances';
  if (name === THREAD_NAMES.v8 || name.startsWith('V8') || name.startsWith('DelayedTask')) return 'v8';
  if (name === THREAD_NAMES.libuv) return 'libuv';
  return 'other';
}

let ticksPerSecond: number | undefined;

/** `getconf CLK_TCK`: the unit of utime and stime (100 on Linux almost everywhere). */
export function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    const n = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    ticksPerSecond = Number.isFinite(n) && n > 0 ? n : 100;
  }
  return ticksPerSecond;
}

/** utime + stime of a `stat` line, in ticks. The name before them is in parentheses and may hold spaces. */
function statTicks(line: string): number {
  const fields = line.slice(line.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 of proc(5); fields[0] is field 3 (state).
  return Number(fields[11]) + Number(fields[12]);
}

/** One reading of a process: its whole CPU (threads that ended included), and each live thread's. */
export interface ThreadReading {
  pid: number;
  processTicks: number;
  threads: Map<number, { name: string; ticks: number }>;
}

/** Reads `pid`'s CPU now. Throws when the process is gone. */
export function readThreads(pid: number): ThreadReading {
  const processTicks = statTicks(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  const threads = new Map<number, { name: string; ticks: number }>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const ticks = statTicks(readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8'));
      threads.set(Number(tid), { name: readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim(), ticks });
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return { pid, processTicks, threads };
}

/** What a process's threads used between two readings, µs. */
export interface ThreadUse {
  processMicros: number;
  /** Per group; `other` also holds the time of threads that ended in between. */
  byGroup: Record<Group, number>;
  /** Each thread that used any CPU, by name and tid, busiest first. */
  threads: { tid: number; name: string; group: Group; micros: number }[];
}

/** The CPU used from reading `a` to reading `b` (of the same process). */
export function threadUse(a: ThreadReading, b: ThreadReading): ThreadUse {
  const us = 1e6 / clockTicks();
  const byGroup = Object.fromEntries(GROUPS.map((g) => [g, 0])) as Record<Group, number>;
  const threads: ThreadUse['threads'] = [];
  for (const [tid, t] of b.threads) {
    const micros = (t.ticks - (a.threads.get(tid)?.ticks ?? 0)) * us;
    if (micros <= 0) continue;
    const group = groupOf(b.pid, tid, t.name);
    byGroup[group] += micros;
    threads.push({ tid, name: t.name, group, micros });
  }
  threads.sort((x, y) => y.micros - x.micros);
  const processMicros = (b.processTicks - a.processTicks) * us;
  // Threads that ended in between count in the process's time only.
  byGroup.other += Math.max(0, processMicros - GROUPS.reduce((sum, g) => sum + byGroup[g], 0));
  return { processMicros, byGroup, threads };
}
