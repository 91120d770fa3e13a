import type { FailureReason } from '../base/errors';
import type { ExecutionRecord, Scheduled } from '../scheduler/scheduler';

export type { FailureReason };

/** A count and a cumulative duration, as Triton's `StatisticDuration`. */
export interface Duration {
  count: number;
  ns: number;
}

/** Statistics of one execution batch size. */
interface BatchStats {
  compute_input: Duration;
  compute_infer: Duration;
  compute_output: Duration;
}

/**
 * What a model's statistics report per request, beyond their cumulative counts: one request's durations, for
 * the latency summaries and the first-response histogram. Absent (not called at all) when both are off.
 */
export interface LatencyObserver {
  /** A request that ended (succeeded or failed) after `totalNs` in the server. */
  request(totalNs: number): void;
  /** A request that ran: its queue and compute durations. */
  computed(queueNs: number, computeInputNs: number, computeInferNs: number, computeOutputNs: number): void;
  /** A request answered from the response cache: no queue wait, no compute. */
  cached(): void;
  /** A decoupled model's first response to a request, `ns` after the request arrived. */
  firstResponse(ns: number): void;
}

const zero = (): Duration => ({ count: 0, ns: 0 });

/**
 * A model's statistics in the shape of Triton's statistics extension. Per request: success, fail, queue and
 * compute_* (every request of an execution counts once, so the three compute counts always agree, as
 * perf_analyzer requires); per execution: `execution_count`, `inference_count` (rows) and `batch_stats`.
 */
export class ModelStatistics {
  success = zero();
  fail = zero();
  queue = zero();
  computeInput = zero();
  computeInfer = zero();
  computeOutput = zero();
  /** Requests answered from the response cache (lookup time), and misses (lookup and insertion time). */
  cacheHit = zero();
  cacheMiss = zero();
  inferenceCount = 0;
  executionCount = 0;
  lastInference = 0;
  readonly failures: Record<FailureReason, number> = { REJECTED: 0, CANCELED: 0, BACKEND: 0, OTHER: 0 };
  private readonly batches = new Map<number, BatchStats>();
  /** Executions per instance name. */
  readonly executionsByInstance = new Map<string, number>();
  /** Sees each request's durations, for the latency summaries and histograms; unset when they are off. */
  observer: LatencyObserver | undefined;

  /** Records a request that succeeded after `totalNs` in the server. */
  recordSuccess(totalNs: number, s: Scheduled<unknown>): void {
    add(this.success, totalNs);
    add(this.queue, s.queueNs);
    add(this.computeInput, s.computeInputNs);
    add(this.computeInfer, s.computeInferNs);
    add(this.computeOutput, s.computeOutputNs);
    this.lastInference = Date.now();
    const o = this.observer;
    if (o) {
      o.request(totalNs);
      o.computed(s.queueNs, s.computeInputNs, s.computeInferNs, s.computeOutputNs);
    }
  }

  /**
   * Records a request answered from the response cache after `totalNs`, `lookupNs` of it in the lookup: a
   * success with no queue wait and no compute, and no execution.
   */
  recordCacheHit(totalNs: number, lookupNs: number): void {
    add(this.success, totalNs);
    add(this.queue, 0);
    add(this.cacheHit, lookupNs);
    this.lastInference = Date.now();
    if (this.observer) {
      this.observer.request(totalNs);
      this.observer.cached();
    }
  }

  /** Records the cache work of a request that missed and was then stored: lookup and insertion. */
  recordCacheMiss(ns: number): void {
    add(this.cacheMiss, ns);
  }

  /** Records a request that failed after `totalNs`. */
  recordFailure(totalNs: number, reason: FailureReason): void {
    add(this.fail, totalNs);
    this.failures[reason]++;
    this.observer?.request(totalNs);
  }

  /** Records a decoupled model's first response to a request, `ns` after the request arrived. */
  recordFirstResponse(ns: number): void {
    this.observer?.firstResponse(ns);
  }

  /** Records one execution. */
  recordExecution(e: ExecutionRecord): void {
    if (e.failed) return;
    this.executionCount++;
    this.inferenceCount += e.rows;
    this.executionsByInstance.set(e.instance.name, (this.executionsByInstance.get(e.instance.name) ?? 0) + 1);
    let b = this.batches.get(e.rows);
    if (!b) this.batches.set(e.rows, (b = { compute_input: zero(), compute_infer: zero(), compute_output: zero() }));
    add(b.compute_input, e.computeInputNs);
    add(b.compute_infer, e.computeInferNs);
    add(b.compute_output, e.computeOutputNs);
  }

  /** Executions per batch size (rows), ascending. */
  executionsByBatchSize(): [number, number][] {
    return [...this.batches.entries()].sort(([a], [b]) => a - b).map(([rows, b]) => [rows, b.compute_infer.count]);
  }

  /** Triton's JSON form of one model's entry in `model_stats`. */
  toJson(name: string, version: string): Record<string, unknown> {
    return {
      name,
      version,
      last_inference: this.lastInference,
      inference_count: this.inferenceCount,
      execution_count: this.executionCount,
      inference_stats: {
        success: { ...this.success },
        fail: { ...this.fail },
        queue: { ...this.queue },
        compute_input: { ...this.computeInput },
        compute_infer: { ...this.computeInfer },
        compute_output: { ...this.computeOutput },
        cache_hit: { ...this.cacheHit },
        cache_miss: { ...this.cacheMiss },
      },
      response_stats: {},
      batch_stats: [...this.batches.entries()]
        .sort(([a], [b]) => a - b)
        .map(([batch_size, s]) => ({
          batch_size,
          compute_input: { ...s.compute_input },
          compute_infer: { ...s.compute_infer },
          compute_output: { ...s.compute_output },
        })),
      memory_usage: [],
    };
  }
}

function add(d: Duration, ns: number): void {
  d.count++;
  d.ns += ns;
}
