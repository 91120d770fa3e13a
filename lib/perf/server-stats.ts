/**
 * The server's side of a measurement, as perf_analyzer reads it: the statistics extension's cumulative counters
 * of the model, read before and after a window and differenced.
 */
import type { PerfServerSide } from './perf-types';

/** One duration counter of the statistics extension: requests (or executions) and their total nanoseconds. */
interface Duration {
  readonly count: number;
  readonly ns: number;
}

/** The counters of one model version at one moment. */
export interface StatsSnapshot {
  readonly inferenceCount: number;
  readonly executionCount: number;
  readonly success: Duration;
  readonly queue: Duration;
  readonly computeInput: Duration;
  readonly computeInfer: Duration;
  readonly computeOutput: Duration;
  readonly cacheHit: Duration;
}

/**
 * The counters of `model` (`version`, or the highest version listed when empty) in a statistics answer
 * (`{"model_stats": [...]}`, HTTP or gRPC); undefined when the answer does not list it.
 */
export function statsSnapshot(answer: unknown, model: string, version: string): StatsSnapshot | undefined {
  const list = (answer as { model_stats?: unknown }).model_stats;
  if (!Array.isArray(list)) return undefined;
  const mine = (list as { name?: unknown; version?: unknown }[]).filter((s) => s.name === model && (version === '' || String(s.version) === version));
  const entry = mine.sort((a, b) => Number(b.version) - Number(a.version))[0] as Record<string, unknown> | undefined;
  if (!entry) return undefined;
  const stats = (entry.inference_stats ?? {}) as Record<string, { count?: unknown; ns?: unknown } | undefined>;
  const duration = (key: string): Duration => ({ count: Number(stats[key]?.count ?? 0), ns: Number(stats[key]?.ns ?? 0) });
  return {
    inferenceCount: Number(entry.inference_count ?? 0),
    executionCount: Number(entry.execution_count ?? 0),
    success: duration('success'),
    queue: duration('queue'),
    computeInput: duration('compute_input'),
    computeInfer: duration('compute_infer'),
    computeOutput: duration('compute_output'),
    cacheHit: duration('cache_hit'),
  };
}

/** What the server did between two snapshots, with durations as averages per request in microseconds. */
export function serverSide(before: StatsSnapshot, after: StatsSnapshot): PerfServerSide {
  const avgUs = (key: 'success' | 'queue' | 'computeInput' | 'computeInfer' | 'computeOutput'): number => {
    const count = after[key].count - before[key].count;
    return count > 0 ? (after[key].ns - before[key].ns) / count / 1000 : 0;
  };
  const requestUs = avgUs('success');
  const [queueUs, computeInputUs, computeInferUs, computeOutputUs] = [avgUs('queue'), avgUs('computeInput'), avgUs('computeInfer'), avgUs('computeOutput')];
  return {
    inferenceCount: after.inferenceCount - before.inferenceCount,
    executionCount: after.executionCount - before.executionCount,
    successCount: after.success.count - before.success.count,
    queueUs,
    computeInputUs,
    computeInferUs,
    computeOutputUs,
    cacheHitCount: after.cacheHit.count - before.cacheHit.count,
    requestUs,
    overheadUs: Math.max(0, requestUs - queueUs - computeInputUs - computeInferUs - computeOutputUs),
  };
}
