import { bestStepIndex, paretoFront, worthGoingOn, type Objective } from '../../../lib/analyze/objective';
import type { PerfStep } from '../../../lib/perf/perf-types';

/** A step at `concurrency` with its throughput and p95 latency (ms). */
function step(concurrency: number, throughput: number, p95Ms: number, errors = 0): PerfStep {
  const us = p95Ms * 1000;
  return {
    load: { kind: 'concurrency', concurrency },
    throughput,
    requests: 100,
    errors,
    latencyUs: { avg: us, min: us, max: us, p50: us, p90: us, p95: us, p99: us, std: 0 },
    stable: true,
    windowMs: 1000,
  };
}

const SWEEP = [step(1, 100, 1), step(2, 180, 2), step(4, 300, 4), step(8, 320, 9)];

describe('objective', () => {
  it('takes the most throughput within the latency budget', () => {
    const objective: Objective = { percentile: 'p95', latencyBudgetUs: 5000 };
    expect(bestStepIndex(SWEEP, objective)).toBe(2);
    expect(worthGoingOn(SWEEP[3] as PerfStep, objective)).toBe(false);
    expect(worthGoingOn(SWEEP[2] as PerfStep, objective)).toBe(true);
  });

  it('takes the least latency serving the throughput asked for', () => {
    const objective: Objective = { percentile: 'p95', minThroughput: 150 };
    expect(bestStepIndex(SWEEP, objective)).toBe(1);
    expect(worthGoingOn(SWEEP[1] as PerfStep, objective)).toBe(false);
  });

  it('meets nothing when every step is over the budget or failed', () => {
    expect(bestStepIndex(SWEEP, { percentile: 'p95', latencyBudgetUs: 500 })).toBe(-1);
    expect(bestStepIndex([step(1, 100, 1, 3)], { percentile: 'p95' })).toBe(-1);
  });

  it('keeps the Pareto front by rising latency', () => {
    const points = [
      { name: 'a', throughput: 100, latencyUs: 1000 },
      { name: 'b', throughput: 90, latencyUs: 2000 },
      { name: 'c', throughput: 300, latencyUs: 4000 },
      { name: 'd', throughput: 250, latencyUs: 5000 },
    ];
    expect(paretoFront(points).map((p) => p.name)).toEqual(['a', 'c']);
  });
});
