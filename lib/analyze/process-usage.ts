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
 * undefined where /proc cannot be read (not Linux, or the process is gone).
 */
export function sampleProcess(pid: number, proc = '/proc'): ProcessSample | undefined {
  try {
    const stat = readFileSync(`${proc}/${pid}/stat`, 'utf8');
    const status = readFileSync(`${proc}/${pid}/status`, 'utf8');
    return parseProcessSample(stat, status, performance.now());
  } catch {
    return undefined;
  }
}

/** Parses /proc/<pid>/stat and /proc/<pid>/status as read at `atMs`. */
export function parseProcessSample(stat: string, status: string, atMs: number): ProcessSample | undefined {
  // The command name (field 2) is in parentheses and may hold spaces: count the fields after its closing one.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 (utime, stime) are the 12th and 13th after the name.
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  const rss = /^VmRSS:\s+(\d+)\s*kB/m.exec(status);
  if (!Number.isFinite(utime) || !Number.isFinite(stime) || !rss) return undefined;
  return { cpuSeconds: (utime + stime) / CLOCK_TICKS_PER_SECOND, rssBytes: Number(rss[1]) * 1024, atMs };
}

/** CPU used between two samples of one process, in percent of one core (200 is two cores busy). */
export function cpuPercent(before: ProcessSample, after: ProcessSample): number {
  const wallSeconds = (after.atMs - before.atMs) / 1000;
  return wallSeconds > 0 ? (100 * (after.cpuSeconds - before.cpuSeconds)) / wallSeconds : 0;
}
