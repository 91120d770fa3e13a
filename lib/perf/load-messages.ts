/**
 * The messages between `runPerf` (the main thread) and its load threads (load-worker.ts). A load thread keeps its
 * connections from step to step; each step sets its lanes or its rate, and `collect` hands back what completed.
 */
import type { ConnectionTarget } from './connection-target';

/** How a load thread reaches the server, sent once when it starts. */
export interface LoadWorkerInit {
  readonly target: ConnectionTarget;
  /** Report the completed count every `progressMs` (0: never). */
  readonly progressMs: number;
}

/**
 * The requests of a step, pre-encoded (raw HTTP/1.1 requests, or serialized ModelInferRequest messages):
 * `shared` are sent in turn by every lane, each lane starting at its own offset; `perLane` gives each lane its own
 * list (the steps of its sequence), sent in order and again from the start.
 */
export type StepRequests = { readonly shared: readonly Uint8Array[] } | { readonly perLane: readonly (readonly Uint8Array[])[] };

/** What a load thread is told. */
export type ToLoadWorker =
  | { readonly t: 'closed'; readonly lanes: number; readonly requests: StepRequests }
  | { readonly t: 'open'; readonly rate: number; readonly distribution: 'constant' | 'poisson'; readonly requests: StepRequests }
  | { readonly t: 'collect' }
  | { readonly t: 'stop' }
  | { readonly t: 'close' };

/**
 * The requests completed since the last collect, `RECORD_FIELDS` numbers each: the end time (ms since the epoch,
 * fractional), the latency (µs; negative for a failed request), and the client's send time (µs).
 */
export interface CollectedRecords {
  readonly t: 'records';
  readonly records: Float64Array;
  readonly count: number;
  /** CPU the load thread used since the last collect, microseconds (user + system). */
  readonly cpuUs: number;
  /** Open loop on a sequence model: requests sent later than due, every sequence having one in flight. */
  readonly delayed: number;
  /** The first failure since the last collect, in words. */
  readonly firstError?: string;
}

/** Numbers per completed request in `CollectedRecords.records`. */
export const RECORD_FIELDS = 3;

/** What a load thread answers. */
export type FromLoadWorker =
  | { readonly t: 'ready' }
  | CollectedRecords
  | { readonly t: 'progress'; readonly completed: number }
  | { readonly t: 'stopped' }
  | { readonly t: 'failed'; readonly message: string };
