import type { PerfOptions, PerfStep } from '../perf/perf-types';
import type { LoadSettings, MeasuredStep, MeasureFn } from './analyze-types';
import type { CandidateServer } from './candidate-server';
import { worthGoingOn, type Objective } from './objective';
import { cpuPercent, sampleLoadGenerator, sampleProcess } from './process-usage';

/** A candidate's sweep under way, for the progress bar. */
export interface SweepProgress {
  readonly phase: 'warm-up' | 'measuring';
  readonly step?: number;
  readonly steps?: number;
  readonly concurrency?: number;
}

/**
 * The most concurrency the warm-up loads a server with: enough for the largest batches searched by default (128),
 * without making a slow model work off a sweep's top (1024 requests in flight) before its first step.
 */
const WARMUP_MAX_CONCURRENCY = 128;

/** Throughput that grows less than this from one step to the next counts as no growth. */
const SATURATION_GAIN = 1.02;

/**
 * Loads a candidate's server for `warmupMs`, then measures it at each concurrency of the sweep, one step at a time,
 * sampling the server's CPU and memory, and the load generator's CPU, around each step. The sweep stops early where
 * more concurrency cannot help the objective (latency past the budget, the throughput asked for met, failed
 * requests), or when two steps in a row gain no throughput (the server is saturated). An aborted `signal` ends the
 * step under way; the steps measured are kept.
 */
export async function measureCandidate(
  server: CandidateServer,
  model: string,
  load: LoadSettings,
  objective: Objective,
  measure: MeasureFn,
  signal: AbortSignal,
  onProgress: (progress: SweepProgress) => void,
): Promise<MeasuredStep[]> {
  const options = (concurrency: number, intervalMs: number, maxTrials: number): PerfOptions => ({
    target: { url: `127.0.0.1:${load.protocol === 'http' ? server.httpPort : server.grpcPort}`, protocol: load.protocol, model },
    batchSize: load.batchSize,
    loads: [{ kind: 'concurrency', concurrency }],
    measurementIntervalMs: intervalMs,
    maxTrials,
    stabilityPercentage: load.stabilityPercentage,
    percentile: Number(objective.percentile.slice(1)),
    ...(load.shapes && { shapes: load.shapes }),
    ...(load.inputData && { inputData: load.inputData }),
    signal,
  });
  if (load.warmupMs > 0) {
    onProgress({ phase: 'warm-up' });
    await measure(options(Math.min(Math.max(...load.concurrency), WARMUP_MAX_CONCURRENCY), load.warmupMs, 1));
  }
  const steps: MeasuredStep[] = [];
  let flat = 0;
  for (const [i, concurrency] of load.concurrency.entries()) {
    if (signal.aborted) break;
    onProgress({ phase: 'measuring', step: i + 1, steps: load.concurrency.length, concurrency });
    const before = sampleProcess(server.pid);
    const loadBefore = sampleLoadGenerator();
    const report = await measure(options(concurrency, load.measurementIntervalMs, load.maxTrials));
    const after = sampleProcess(server.pid);
    const loadAfter = sampleLoadGenerator();
    const step = report.steps[0];
    if (!step) break;
    steps.push({
      step,
      ...(before && after && { cpuPercent: cpuPercent(before, after), rssBytes: after.rssBytes }),
      ...(loadBefore && loadAfter && { loadCpuPercent: cpuPercent(loadBefore, loadAfter) }),
    });
    const previous = steps[steps.length - 2]?.step;
    flat = previous && step.throughput < previous.throughput * SATURATION_GAIN ? flat + 1 : 0;
    if (!worthGoingOn(step, objective) || flat >= 2) break;
  }
  return steps;
}

/** The steps of a sweep, without what the server used. */
export function perfSteps(steps: readonly MeasuredStep[]): PerfStep[] {
  return steps.map((s) => s.step);
}
