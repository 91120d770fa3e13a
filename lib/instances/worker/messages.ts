/**
 * The protocol between a WorkerInstance (main thread) and its worker thread: one message per batch each way,
 * plus abort notices. Tensor data rides in the same message, its buffers in the transfer list.
 */
import type { ParameterValue, ResponseParameters, SequenceInfo } from '../../callable/callable';
import type { InstanceContext, InstanceReport } from '../../callable/instance-context';
import type { MetricFamilySpec, MetricUpdate } from '../../callable/custom-metrics';
import type { WireError } from './error-transfer';
import type { SequenceStateMark } from '../sequence-state-mark';
import type { Column } from './columns';

/** What a worker receives as `workerData`. */
export interface WorkerInit {
  /** Absolute path of the user's module. */
  readonly module: string;
  readonly exportName: string;
  readonly context: InstanceContext;
}

/** A batch of requests on the wire: their inputs as columns, and what most requests share sent once. */
export interface WireBatch {
  readonly count: number;
  readonly inputs: readonly Column[];
  /** The list every request asked for, or (when `outputsVary`) one list per request. */
  readonly requestedOutputs: readonly string[] | readonly (readonly string[])[];
  readonly outputsVary: boolean;
  /** Per request; absent when no request has parameters. */
  readonly parameters?: readonly Readonly<Record<string, ParameterValue>>[];
  /** Per request; absent when every id is ''. */
  readonly ids?: readonly string[];
  /** Per request (a sequence model's); absent when no request belongs to a sequence. */
  readonly sequences?: readonly (SequenceInfo | undefined)[];
  /** Per request, the sequence state the worker keeps for it (see sequence-state-mark.ts); absent when none has one. */
  readonly stateMarks?: readonly (SequenceStateMark | undefined)[];
  /** Requests the main thread may still abort (an 'abort' message then names one). */
  readonly live?: readonly number[];
  /** Requests aborted before the batch was sent, with the reason. */
  readonly aborted?: readonly { readonly index: number; readonly reason: WireError }[];
}

/** A batch's responses on the wire: as columns, or what the callable returned if it was not a list of records. */
export type WireResult =
  | {
      readonly count: number;
      readonly outputs: readonly Column[];
      /** Response parameters by response index; absent when no response has any. */
      readonly parameters?: readonly (ResponseParameters | undefined)[];
    }
  | { readonly raw: unknown };

/** A `request.infer(...)` call made in the worker, as it travels to the main thread (no signal: see `bls-abort`). */
export interface WireInferCall {
  readonly modelName: string;
  readonly modelVersion?: string;
  /** The call's inputs as the columns of a one-item batch. */
  readonly inputs: readonly Column[];
  readonly requestedOutputs?: readonly string[];
  readonly parameters?: Readonly<Record<string, ParameterValue>>;
  readonly url?: string;
  readonly sequence?: SequenceInfo;
}

/** Main thread → worker. */
export type ToWorker =
  /** A batch to run; with `stream`, a decoupled model's batch, answered item by item. */
  | { readonly type: 'batch'; readonly id: number; readonly batch: WireBatch; readonly stream?: true }
  /** The main thread consumed one item of stream `id`: the worker may send one more. */
  | { readonly type: 'stream-ack'; readonly id: number }
  /** Nobody reads stream `id` any more: the worker closes the callable's iterator. */
  | { readonly type: 'stream-cancel'; readonly id: number }
  | { readonly type: 'abort'; readonly id: number; readonly index: number; readonly reason: WireError }
  | { readonly type: 'bls-result'; readonly call: number; readonly outputs: readonly Column[] }
  | { readonly type: 'bls-error'; readonly call: number; readonly error: WireError }
  /** Sequences that ended: the worker frees their states. */
  | { readonly type: 'sequence-state-free'; readonly ids: readonly number[] }
  | { readonly type: 'close' };

/** Worker → main thread. */
export type FromWorker =
  /** Started; with what the instance says of itself (`InstanceReport`), when it says anything. */
  | { readonly type: 'ready'; readonly report?: InstanceReport }
  | { readonly type: 'start-failed'; readonly error: WireError }
  | { readonly type: 'result'; readonly id: number; readonly result: WireResult }
  | { readonly type: 'error'; readonly id: number; readonly error: WireError }
  /** One streamed item of batch `id`: a response (a one-response WireResult) and/or the end of a request's stream. */
  | { readonly type: 'item'; readonly id: number; readonly index: number; readonly final: boolean; readonly response?: WireResult }
  /** Stream `id` has no more items. */
  | { readonly type: 'stream-end'; readonly id: number }
  /** Request `index` of batch `id` calls another model (`request.infer`); `call` names the reply. */
  | { readonly type: 'bls'; readonly id: number; readonly index: number; readonly call: number; readonly request: WireInferCall }
  /** The worker-side signal of call `call` aborted. */
  | { readonly type: 'bls-abort'; readonly call: number; readonly reason: WireError }
  | { readonly type: 'closed'; readonly error?: WireError }
  /** The callable registered a custom metric family (`context.metrics.family`). */
  | { readonly type: 'metric-family'; readonly spec: MetricFamilySpec }
  /** The callable updated a custom metric. */
  | { readonly type: 'metric'; readonly name: string; readonly labels: Readonly<Record<string, string>>; readonly op: MetricUpdate; readonly value: number };
