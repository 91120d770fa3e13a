/**
 * Measurement windows of one step and what perf_analyzer makes of them: a window is stable with the two before it
 * when their throughputs and latencies (the average, or `--percentile`'s) agree within `--stability-percentage`;
 * the step then reports those three windows merged (their requests, latencies and server counters together).
 */
import { recordAt, type Collected } from './load-pool';
import { RECORD_FIELDS } from './load-messages';
import type { PerfLatency, PerfLoad, PerfStep } from './perf-types';
import { serverSide, type StatsSnapshot } from './server-stats';

/** The windows perf_analyzer's stability check compares, and merges for the report. */
export const STABILITY_WINDOWS = 3;

/** One measurement window of a step. */
export interface PerfWindow {
  readonly durationMs: number;
  readonly collected: Collected;
  /** The server's counters at the window's start and end; absent without the statistics extension. */
  readonly statsBefore?: StatsSnapshot;
  readonly statsAfter?: StatsSnapshot;
}

/** What the stability check reads of a window: its throughput and its latency (the average, or `percentile`'s). */
function windowFigures(w: PerfWindow, percentile: number | undefined): { throughput: number; latency: number } {
  const latencies = sortedLatencies([w]);
  const latency = percentile === undefined ? latencyStats(latencies).avg : percentileOf(latencies, percentile);
  return { throughput: w.durationMs > 0 ? latencies.length / w.durationMs : 0, latency };
}

/** Whether the last `STABILITY_WINDOWS` windows agree within `percentage` % in throughput and latency. */
export function isStable(windows: readonly PerfWindow[], percentage: number, percentile: number | undefined): boolean {
  if (windows.length < STABILITY_WINDOWS) return false;
  const last = windows.slice(-STABILITY_WINDOWS).map((w) => windowFigures(w, percentile));
  if (last.some((f) => f.throughput === 0)) return false;
  const within = (values: number[]): boolean => Math.max(...values) / Math.min(...values) <= 1 + percentage / 100;
  return within(last.map((f) => f.throughput)) && within(last.map((f) => f.latency));
}

/** The windows merged into one step: their requests, latencies, durations and server counters together. */
export function mergeWindows(windows: readonly PerfWindow[], batchSize: number, load: PerfLoad, stable: boolean, percentile: number | undefined): PerfStep {
  const durationMs = windows.reduce((a, w) => a + w.durationMs, 0);
  const latencies = sortedLatencies(windows);
  let errors = 0;
  let sendUs = 0;
  let all = 0;
  let cpuUs = 0;
  let delayed = 0;
  for (const w of windows) {
    cpuUs += w.collected.cpuUs;
    delayed += w.collected.delayed;
    for (const records of w.collected.records) {
      for (let i = 0; i < records.length / RECORD_FIELDS; i++) {
        const r = recordAt(records, i);
        all++;
        sendUs += r.sendUs;
        if (r.latencyUs < 0) errors++;
      }
    }
  }
  const requests = latencies.length;
  const first = windows[0];
  const last = windows[windows.length - 1];
  const server = first?.statsBefore && last?.statsAfter ? serverSide(first.statsBefore, last.statsAfter) : undefined;
  const firstError = windows.map((w) => w.collected.firstError).find((e) => e !== undefined);
  return {
    load,
    throughput: durationMs > 0 ? (requests * batchSize * 1000) / durationMs : 0,
    requests,
    errors,
    latencyUs: latencyStats(latencies),
    ...(server && { server }),
    stable,
    windowMs: durationMs,
    clientSendUs: all > 0 ? sendUs / all : 0,
    clientCpuUsPerRequest: all > 0 ? cpuUs / all : 0,
    ...(delayed > 0 && { delayedRequests: delayed }),
    ...(percentile !== undefined && { percentileUs: percentileOf(latencies, percentile) }),
    ...(firstError !== undefined && { firstError }),
  };
}

/** The latencies of the windows' successful requests, ascending. */
function sortedLatencies(windows: readonly PerfWindow[]): Float64Array {
  const out: number[] = [];
  for (const w of windows) {
    for (const records of w.collected.records) {
      for (let i = 0; i < records.length / RECORD_FIELDS; i++) {
        const latency = recordAt(records, i).latencyUs;
        if (latency >= 0) out.push(latency);
      }
    }
  }
  return Float64Array.from(out).sort();
}

/** The `p`th percentile of ascending `sorted` (nearest rank), 0 when empty. */
function percentileOf(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

/** Average, spread and percentiles of ascending latencies. */
function latencyStats(sorted: Float64Array): PerfLatency {
  const n = sorted.length;
  if (n === 0) return { avg: 0, min: 0, max: 0, p50: 0, p90: 0, p95: 0, p99: 0, std: 0 };
  let sum = 0;
  for (const v of sorted) sum += v;
  const avg = sum / n;
  let square = 0;
  for (const v of sorted) square += (v - avg) ** 2;
  return {
    avg,
    min: sorted[0] as number,
    max: sorted[n - 1] as number,
    p50: percentileOf(sorted, 50),
    p90: percentileOf(sorted, 90),
    p95: percentileOf(sorted, 95),
    p99: percentileOf(sorted, 99),
    std: Math.sqrt(square / n),
  };
}

/** The latency of a step that the summary line uses: `--percentile`'s, or the average. */
export function stepLatency(step: PerfStep): number {
  return step.percentileUs ?? step.latencyUs.avg;
}
