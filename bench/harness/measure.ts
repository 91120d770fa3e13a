/**
 * One measurement: a load run against a server child, with what the server's threads did over it; and the
 * order in which the variants of a round run.
 */
import { usageDelta, type ChildProc, type Usage, type UsageDelta } from './child-proc';
import type { LoadResult } from './load-driver';
import type { LoadGen, LoadSpec } from './loadgen';
import { fmtInt, fmtUs } from './stats';

/** A load run with what the server's threads did over it. */
export interface Sample extends LoadResult {
  /** Good responses per second in the window. */
  rps: number;
  /** Server CPU (all threads) per response, µs. */
  serverCpuPerReq: number;
  /** The server's threads over the window, or over the whole run (see `MeasureOptions.serverCpu`). */
  usage: UsageDelta;
}

/** How measure reads the server's CPU and treats late requests. */
export interface MeasureOptions {
  /**
   * Over what the server's CPU is read: `window`, when the load generator's window opens and closes (to within
   * the IPC delay), or `run`, before and after the whole run, warm-up included, and divided by the responses
   * served in it (a count window's warm-up and count; a time window's count scaled by (warm-up + duration) /
   * duration). Count windows are always read over the run. Default: `window`.
   */
  serverCpu?: 'window' | 'run';
  /** Requests still unanswered at the cap are dropped and reported (`late`) instead of failing the sample. */
  allowLate?: boolean;
}

/** Runs `spec` against `server`; throws on failed requests, an empty window, or (unless allowed) late requests. */
export async function measure(load: LoadGen, server: ChildProc, spec: LoadSpec, what: string, options: MeasureOptions = {}): Promise<Sample> {
  const overRun = spec.count !== undefined || options.serverCpu === 'run';
  let usage: UsageDelta;
  let r: LoadResult;
  if (overRun) {
    const start = await server.usage();
    r = await load.run(spec);
    usage = usageDelta(start, await server.usage());
  } else {
    const at = (ms: number) => new Promise<Usage>((resolve, reject) => setTimeout(() => void server.usage().then(resolve, reject), ms));
    const start = at(spec.warmupMs ?? 0);
    const end = at((spec.warmupMs ?? 0) + (spec.durationMs ?? 0));
    r = await load.run(spec);
    usage = usageDelta(await start, await end);
  }
  if (r.errors > 0) throw new Error(`${what}: ${r.errors} errors, first: ${r.firstError}`);
  if (r.late > 0 && !options.allowLate) throw new Error(`${what}: ${r.late} requests unanswered when the load was stopped`);
  if (r.count === 0) throw new Error(`${what}: no response in the window`);
  const served = !overRun
    ? r.count
    : spec.count !== undefined
      ? r.count + (spec.warmupCount ?? 0)
      : r.count * (((spec.warmupMs ?? 0) + (spec.durationMs ?? 0)) / (spec.durationMs ?? 1));
  return { ...r, rps: (r.count * 1000) / r.elapsedMs, serverCpuPerReq: usage.cpuMicros / served, usage };
}

/** The variants of round `round` (0-based) in the order they run: as given, then reversed (ABBA across rounds). */
export function abba<T>(round: number, variants: readonly T[]): T[] {
  return round % 2 === 0 ? [...variants] : [...variants].reverse();
}

/** A sample's throughput, latency and CPU figures, for the progress lines. */
export function describeSample(s: Sample): string {
  return (
    `${fmtInt(s.rps).padStart(7)} req/s  p50 ${fmtUs(s.p50).padStart(6)} µs  p99 ${fmtUs(s.p99).padStart(6)} µs` +
    `  server ${s.serverCpuPerReq.toFixed(1)} µs/req  client ${(s.clientCpu * 100).toFixed(0)} %`
  );
}
