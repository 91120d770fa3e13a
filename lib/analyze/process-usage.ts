import { readFileSync } from 'node:fs';

/** Linux's USER_HZ: the unit of the CPU times in /proc/<pid>/stat (100 on every Linux architecture that Node runs on). */
const CLOCK_TICKS_PER_SECOND = 100;

/** A process's CPU time so far and its memory now, from /proc. */
export interface ProcessSample {
  /** User plus system CPU time of all its threads, seconds. */
  readonly cpuSeconds: number;
  /** Resident set size, bytes. */
  readonly rssBytes: number;
  /** When it was taken (performance.now()), milliseconds. */
  readonly atMs: number;
}

/**
 * Reads `pid`'s CPU time (utime + stime of /proc/<pid>/stat) and resident memory (VmRSS of /proc/<pid>/status);
 * undefined where /proc cannot be read (not Linux, or the process is gone). `pid` 'self' with `children` also counts
 * the CPU time of the children it has reaped (cutime + cstime): a perf_analyzer that ran a step and exited.
 */
export function sampleProcess(pid: number | 'self', proc = '/proc', children = false): ProcessSample | undefined {
  try {
    const stat = readFileSync(`${proc}/${pid}/stat`, 'utf8');
    const status = readFileSync(`${proc}/${pid}/status`, 'utf8');
    return parseProcessSample(stat, status, performance.now(), children);
  } catch {
    return undefined;
  }
}

/**
 * What the load generator uses: this process (tstriton perf's threads run in it) and the children it reaped, the
 * perf_analyzer of each step when it measures. The candidate servers are children too, but none ends during a step.
 */
export function sampleLoadGenerator(proc = '/proc'): ProcessSample | undefined {
  return sampleProcess('self', proc, true);
}

/** Parses /proc/<pid>/stat and /proc/<pid>/status as read at `atMs`; with `children`, the reaped children's CPU too. */
export function parseProcessSample(stat: string, status: string, atMs: number, children = false): ProcessSample | undefined {
  // The command name (field 2) is in parentheses and may hold spaces: count the fields after its closing one.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 to 17 (utime, stime, cutime, cstime) are the 12th to 15th after the name.
  const [utime, stime, cutime, cstime] = fields.slice(11, 15).map(Number) as [number, number, number, number];
  const ticks = utime + stime + (children ? cutime + cstime : 0);
  const rss = /^VmRSS:\s+(\d+)\s*kB/m.exec(status);
  if (!Number.isFinite(ticks) || !rss) return undefined;
  return { cpuSeconds: ticks / CLOCK_TICKS_PER_SECOND, rssBytes: Number(rss[1]) * 1024, atMs };
}

/** CPU used between two samples of one process, in percent of one core (200 is two cores busy). */
export function cpuPercent(before: ProcessSample, after: ProcessSample): number {
  const wallSeconds = (after.atMs - before.atMs) / 1000;
  return wallSeconds > 0 ? (100 * (after.cpuSeconds - before.cpuSeconds)) / wallSeconds : 0;
}
