import type { PerfLatency, PerfStep } from '../perf/perf-types';

/** The latency percentiles a budget may be set at, as perf_analyzer reports them. */
export const PERCENTILES = ['p50', 'p90', 'p95', 'p99'] as const;
/** A latency percentile of the report. */
export type Percentile = (typeof PERCENTILES)[number];

/**
 * What makes one configuration better than another, as Model Analyzer's objectives and constraints: the most
 * throughput whose latency at `percentile` is within `latencyBudgetUs`, or, with `minThroughput`, the least latency
 * that still serves that many inferences per second. With neither, the most throughput.
 */
export interface Objective {
  readonly percentile: Percentile;
  readonly latencyBudgetUs?: number;
  readonly minThroughput?: number;
}

/** The latency of a step at the objective's percentile, microseconds. */
export function latencyAt(step: PerfStep, percentile: Percentile): number {
  return step.latencyUs[percentile as keyof PerfLatency];
}

/** Whether a step meets the objective's constraints (and had no failed requests). */
export function meets(step: PerfStep, objective: Objective): boolean {
  if (step.errors > 0 || step.requests === 0) return false;
  if (objective.latencyBudgetUs !== undefined && latencyAt(step, objective.percentile) > objective.latencyBudgetUs) return false;
  if (objective.minThroughput !== undefined && step.throughput < objective.minThroughput) return false;
  return true;
}

/** Positive when step `a` is better than `b` under the objective; both meet its constraints. */
export function compareSteps(a: PerfStep, b: PerfStep, objective: Objective): number {
  const latency = latencyAt(b, objective.percentile) - latencyAt(a, objective.percentile);
  const throughput = a.throughput - b.throughput;
  // The least latency when a throughput is asked for; otherwise the most throughput, the lower latency breaking a tie.
  return objective.minThroughput !== undefined && objective.latencyBudgetUs === undefined ? latency || throughput : throughput || latency;
}

/** The index of the best step of a sweep under the objective, or -1 when none meets its constraints. */
export function bestStepIndex(steps: readonly PerfStep[], objective: Objective): number {
  let best = -1;
  steps.forEach((step, i) => {
    if (meets(step, objective) && (best < 0 || compareSteps(step, steps[best] as PerfStep, objective) > 0)) best = i;
  });
  return best;
}

/**
 * Whether measuring at more concurrency can still find a better step: not once latency is past the budget (it only
 * grows with concurrency), nor once the throughput asked for is met when the least latency is wanted.
 */
export function worthGoingOn(step: PerfStep, objective: Objective): boolean {
  if (objective.latencyBudgetUs !== undefined && latencyAt(step, objective.percentile) > objective.latencyBudgetUs) return false;
  if (objective.minThroughput !== undefined && objective.latencyBudgetUs === undefined && meets(step, objective)) return false;
  return step.errors === 0;
}

/** One point of a Pareto front: a label and its throughput and latency. */
export interface ParetoPoint {
  readonly throughput: number;
  readonly latencyUs: number;
}

/**
 * The points no other point beats on both throughput (more) and latency (less), by rising latency: the choices
 * worth having, each trading latency for throughput.
 */
export function paretoFront<T extends ParetoPoint>(points: readonly T[]): T[] {
  const sorted = [...points].sort((a, b) => a.latencyUs - b.latencyUs || b.throughput - a.throughput);
  const front: T[] = [];
  for (const p of sorted) if (front.length === 0 || p.throughput > (front[front.length - 1] as T).throughput) front.push(p);
  return front;
}
