import { invalidConfig } from '../base/errors';
import { candidateKey, DIMENSIONS, type Candidate, type Dimension } from './candidate';

/** The values each dimension of the search takes, in rising order. */
export type SearchSpace = { readonly [D in Dimension]: readonly Candidate[D][] };

/** The bounds of the search, as the flags give them. */
export interface SearchBounds {
  readonly minModelBatchSize: number;
  readonly maxModelBatchSize: number;
  readonly queueDelaysUs: readonly number[];
  readonly minInstanceCount: number;
  readonly maxInstanceCount: number;
  readonly kinds: readonly string[];
  readonly httpThreadCounts: readonly number[];
}

/**
 * The values of each dimension: the powers of two between the batch-size bounds (Model Analyzer's steps), every
 * instance count between its bounds, and the lists as given. A model that does not batch keeps its `max_batch_size`
 * 0 and its queue delay.
 *
 * @throws TritonError `INVALID_CONFIG` naming the bound that leaves a dimension without a value: then no candidate exists.
 */
export function searchSpace(bounds: SearchBounds, base: Candidate): SearchSpace {
  const batches = base.maxBatchSize > 0;
  const space: SearchSpace = {
    maxBatchSize: batches ? powersOfTwo(bounds.minModelBatchSize, bounds.maxModelBatchSize) : [0],
    maxQueueDelayMicroseconds: batches ? sortedUnique(bounds.queueDelaysUs) : [base.maxQueueDelayMicroseconds],
    instanceCount: range(bounds.minInstanceCount, bounds.maxInstanceCount),
    kind: [...new Set(bounds.kinds)],
    httpThreadCount: sortedUnique(bounds.httpThreadCounts),
  };
  const empty: Record<Dimension, string> = {
    maxBatchSize: `no power of two lies between --min-model-batch-size ${bounds.minModelBatchSize} and --max-model-batch-size ${bounds.maxModelBatchSize}`,
    maxQueueDelayMicroseconds: '--queue-delays lists no delay',
    instanceCount: `--min-instance-count ${bounds.minInstanceCount} is above --max-instance-count ${bounds.maxInstanceCount}`,
    kind: '--kind lists no instance kind',
    httpThreadCount: '--http-thread-counts lists no thread count',
  };
  for (const d of DIMENSIONS) if (space[d].length === 0) throw invalidConfig(`no candidate to measure: ${empty[d]}`);
  return space;
}

/**
 * Checks the bounds alone, before any server runs, as for a model that batches.
 *
 * @throws TritonError `INVALID_CONFIG` naming the bound that leaves no candidate.
 */
export function checkBounds(bounds: Omit<SearchBounds, 'kinds'> & { readonly kinds?: readonly string[] }): void {
  searchSpace({ ...bounds, kinds: bounds.kinds ?? ['cpu'] }, { maxBatchSize: 1, maxQueueDelayMicroseconds: 0, instanceCount: 1, kind: 'cpu', httpThreadCount: 1 });
}

/** How many candidates the full grid holds. */
export function gridSize(space: SearchSpace): number {
  return DIMENSIONS.reduce((n, d) => n * space[d].length, 1);
}

/** Every candidate of the grid (`--search brute`), the last dimension varying fastest. */
export function* gridCandidates(space: SearchSpace): Generator<Candidate> {
  const dims = [...DIMENSIONS];
  const walk = function* (i: number, partial: Partial<Record<Dimension, unknown>>): Generator<Candidate> {
    if (i === dims.length) {
      yield partial as unknown as Candidate;
      return;
    }
    const d = dims[i] as Dimension;
    for (const v of space[d]) yield* walk(i + 1, { ...partial, [d]: v });
  };
  yield* walk(0, {});
}

/** Measures a candidate: its result, or undefined when the run must stop (out of time, interrupted). */
export type Evaluate<R> = (candidate: Candidate) => Promise<R | undefined>;
/** Positive when result `a` is better than `b`. */
export type Compare<R> = (a: R, b: R) => number;

/**
 * Model Analyzer's quick search, as a coarse sweep and a refinement: from `start` (the model as bound), each
 * dimension in turn is swept over every other value of its list (both ends included) with the others held at the
 * best so far; then the neighbours of the best, one step along each dimension, are measured until none is better.
 * Each candidate is evaluated once. Resolves when the search is
 * done or `evaluate` says to stop.
 */
export async function quickSearch<R>(space: SearchSpace, start: Candidate, startResult: R, evaluate: Evaluate<R>, compare: Compare<R>): Promise<void> {
  let best = { candidate: start, result: startResult };
  const seen = new Set([candidateKey(start)]);
  const consider = async (candidate: Candidate): Promise<boolean> => {
    const key = candidateKey(candidate);
    if (seen.has(key)) return true;
    seen.add(key);
    const result = await evaluate(candidate);
    if (result === undefined) return false;
    if (compare(result, best.result) > 0) best = { candidate, result };
    return true;
  };
  for (const d of DIMENSIONS) {
    const from = best.candidate;
    for (const value of coarse<number | string>(space[d])) if (!(await consider({ ...from, [d]: value }))) return;
  }
  for (;;) {
    const from = best.candidate;
    for (const d of DIMENSIONS) {
      for (const value of neighbours<number | string>(space[d], from[d])) if (!(await consider({ ...from, [d]: value }))) return;
    }
    if (best.candidate === from) return;
  }
}

/** Every other value of a list, the last one included. */
export function coarse<T>(values: readonly T[]): T[] {
  return values.filter((_, i) => i % 2 === 0 || i === values.length - 1);
}

/** The values on either side of `value` in a rising list (of the nearest entry, when `value` is not in it). */
export function neighbours<T extends number | string>(values: readonly T[], value: T): T[] {
  let at = values.indexOf(value);
  if (at < 0 && typeof value === 'number') {
    const distance = (v: T) => Math.abs(Math.log2(Math.max(Number(v), 0.5)) - Math.log2(Math.max(value, 0.5)));
    at = values.reduce((best, v, i) => (distance(v) < distance(values[best] as T) ? i : best), 0);
    return [values[at] as T, ...neighbours(values, values[at] as T)].filter((v) => v !== value);
  }
  return [values[at - 1], values[at + 1]].filter((v): v is T => v !== undefined);
}

function powersOfTwo(min: number, max: number): number[] {
  const out: number[] = [];
  for (let v = 1; v <= max; v *= 2) if (v >= min) out.push(v);
  return out;
}

function range(min: number, max: number): number[] {
  return Array.from({ length: Math.max(0, max - min + 1) }, (_, i) => min + i);
}

function sortedUnique(values: readonly number[]): number[] {
  return [...new Set(values)].sort((a, b) => a - b);
}
