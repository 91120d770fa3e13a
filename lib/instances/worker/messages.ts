/**
 * The protocol between a WorkerInstance (main thread) and its worker thread: one message per batch each way,
 * plus abort notices. Tensor data rides in the same message, its buffers in the transfer list.
 */
import type { ParameterValue } from '../../callable';
import type { InstanceContext } from '../instance';
import type { WireError } from './error-transfer';
import type { WireValue } from './tensor-transfer';

/** What a worker receives as `workerData`. */
export interface WorkerInit {
  /** Absolute path of the user's module. */
  readonly module: string;
  readonly exportName: string;
  readonly context: InstanceContext;
}

/** Whether a request can be aborted: never (it has no signal), not yet, or already. */
export type AbortState = 'never' | 'live' | 'aborted';

/** One request of a batch on the wire; its `signal` becomes an AbortSignal owned by the worker. */
export interface WireRequest {
  readonly inputs: Record<string, WireValue>;
  readonly parameters: Readonly<Record<string, ParameterValue>>;
  readonly requestedOutputs: readonly string[];
  readonly id: string;
  readonly abort: AbortState;
  /** Why it was aborted, when `abort` is `'aborted'`. */
  readonly reason?: WireError;
}

/** One response on the wire: its values, or what the callable returned if it was not an object. */
export type WireResponse = { readonly values: Record<string, WireValue> } | { readonly raw: unknown };

/** Main thread → worker. */
export type ToWorker =
  | { readonly type: 'batch'; readonly id: number; readonly requests: readonly WireRequest[] }
  | { readonly type: 'abort'; readonly id: number; readonly index: number; readonly reason: WireError }
  | { readonly type: 'close' };

/** Worker → main thread. */
export type FromWorker =
  | { readonly type: 'ready' }
  | { readonly type: 'start-failed'; readonly error: WireError }
  | { readonly type: 'result'; readonly id: number; readonly responses: readonly WireResponse[] | { readonly raw: unknown } }
  | { readonly type: 'error'; readonly id: number; readonly error: WireError }
  | { readonly type: 'closed'; readonly error?: WireError };
