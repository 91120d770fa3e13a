/**
 * One configuration `tstriton analyze` measures: the model's batching and instances and the server's front-end
 * threads. Every field is concrete, so two candidates that serve the same way have the same key.
 */
export interface Candidate {
  /** `max_batch_size`; 0 for a model that does not batch. */
  readonly maxBatchSize: number;
  /** `dynamic_batching { max_queue_delay_microseconds }`. */
  readonly maxQueueDelayMicroseconds: number;
  /** Instances, all on `kind`. */
  readonly instanceCount: number;
  /** `cpu`, or `gpu:N` for the GPU of that index. */
  readonly kind: string;
  /** The server's front-end threads (`--http-thread-count`, `TSTRITON_HTTP_THREAD_COUNT`). */
  readonly httpThreadCount: number;
}

/** The dimensions of a candidate, in the order the quick search walks them (the most telling first). */
export const DIMENSIONS = ['maxBatchSize', 'instanceCount', 'maxQueueDelayMicroseconds', 'httpThreadCount', 'kind'] as const;
/** One dimension of the search. */
export type Dimension = (typeof DIMENSIONS)[number];

/** A candidate as a string that is equal for equal candidates: `mbs=8 delay=100us inst=2xcpu threads=1`. */
export function candidateKey(c: Candidate): string {
  return `mbs=${c.maxBatchSize} delay=${c.maxQueueDelayMicroseconds}us inst=${c.instanceCount}x${c.kind} threads=${c.httpThreadCount}`;
}

/** The fields in which `c` differs from `base`, for a short label (`mbs=32 inst=2`); `as bound` when none. */
export function candidateChanges(c: Candidate, base: Candidate): string {
  const parts: string[] = [];
  if (c.maxBatchSize !== base.maxBatchSize) parts.push(`mbs=${c.maxBatchSize}`);
  if (c.maxQueueDelayMicroseconds !== base.maxQueueDelayMicroseconds) parts.push(`delay=${c.maxQueueDelayMicroseconds}us`);
  if (c.instanceCount !== base.instanceCount || c.kind !== base.kind) parts.push(`inst=${c.instanceCount}x${c.kind}`);
  if (c.httpThreadCount !== base.httpThreadCount) parts.push(`threads=${c.httpThreadCount}`);
  return parts.length > 0 ? parts.join(' ') : 'as bound';
}
