import type { DataType, TensorData } from '../tensor/dtype';
import type { Tensor } from '../tensor/tensor';
import type { InstanceContext } from './instance-context';

import type { ParameterValue } from '../protocol/infer-parameter';

export type { ParameterValue };

/** One inference request as the callable sees it. */
export interface Request {
  /** Input tensors by name. With a batching model, dim 0 of each is this request's batch size. */
  readonly inputs: Readonly<Record<string, Tensor>>;
  /** Request parameters (custom keys; reserved ones are consumed by the server). */
  readonly parameters: Readonly<Record<string, ParameterValue>>;
  /** Names of the outputs the client asked for; all outputs when it named none. */
  readonly requestedOutputs: readonly string[];
  /** Request id as sent by the client ('' if none). */
  readonly id: string;
  /** Fires when the client goes away or the request is cancelled. */
  readonly signal: AbortSignal;
  /**
   * Calls another model from inside this one (business logic scripting): a bound model through its scheduler,
   * so the call batches with other traffic, or a model on another server when `url` is given. Present on the
   * requests the server hands to in-process and worker instances (from a worker, the call runs on the main
   * thread and its outputs come back as a message).
   */
  readonly infer?: (call: InferCall) => Promise<Record<string, Tensor>>;
  /**
   * The sequence this request belongs to: its correlation id and whether it starts or ends the sequence. Always
   * present on a model with a sequence batcher (`sequenceBatching`); on other models, when the client sent
   * `sequence_id`, `sequence_start` or `sequence_end` (as Triton hands any backend the correlation id).
   */
  readonly sequence?: SequenceInfo;
}

/** A request's place in a sequence: the correlation id (`sequence_id`) and the START/END flags. */
export interface SequenceInfo {
  /** Correlation id: an unsigned integer (a BigInt beyond 2^53) or a string. */
  readonly id: number | bigint | string;
  readonly start: boolean;
  readonly end: boolean;
}

/** A call to another model, made with `request.infer(...)`. */
export interface InferCall {
  readonly modelName: string;
  readonly modelVersion?: string;
  /** Input tensors by name (with the batch dim when the callee batches). */
  readonly inputs: Readonly<Record<string, Tensor>>;
  /** Outputs to return; all by default. */
  readonly requestedOutputs?: readonly string[];
  readonly parameters?: Readonly<Record<string, ParameterValue>>;
  /** Cancels the call; the caller's own signal is followed as well. */
  readonly signal?: AbortSignal;
  /** `http://host:port` or `grpc://host:port` of another tstriton or Triton server; this server when absent. */
  readonly url?: string;
  /** The sequence the call belongs to, for a callee with a sequence batcher (bound models on this server). */
  readonly sequence?: SequenceInfo;
}

/**
 * An output value: a full tensor, or `{ shape, data }` whose dtype is taken from the output's spec.
 * BYTES data may be given as strings.
 */
export type OutputValue =
  | Tensor
  | { readonly dtype?: DataType; readonly shape: readonly number[]; readonly data: TensorData | readonly string[] };

/**
 * The key under which a response carries its response parameters, as Triton's Python backend
 * `InferenceResponse(parameters=...)`: `{ OUTPUT0: t, [RESPONSE_PARAMETERS]: { tokens: 12 } }`. They reach the
 * client in the HTTP `parameters` object and gRPC `ModelInferResponse.parameters`. A symbol, so that no output
 * name is taken.
 */
export const RESPONSE_PARAMETERS: unique symbol = Symbol.for('tstriton.responseParameters');

/** Response parameters: string, integer, boolean or double values by name. */
export type ResponseParameters = Readonly<Record<string, ParameterValue>>;

/** One response: output values by name, and optionally its response parameters. */
export type Response = Record<string, OutputValue> & { readonly [RESPONSE_PARAMETERS]?: ResponseParameters };

/** Attaches response parameters to a response (`{ ...outputs, [RESPONSE_PARAMETERS]: parameters }`). */
export function withParameters<R extends Record<string, OutputValue>>(outputs: R, parameters: ResponseParameters): R & { readonly [RESPONSE_PARAMETERS]: ResponseParameters } {
  return { ...outputs, [RESPONSE_PARAMETERS]: parameters };
}

/** The response parameters a response carries, if any. */
export function parametersOf(response: object): ResponseParameters | undefined {
  return (response as { [RESPONSE_PARAMETERS]?: ResponseParameters })[RESPONSE_PARAMETERS];
}

/** One response of a decoupled (streaming) model: for request `index` of the batch. */
export interface StreamItem {
  /** Position of the request in the batch. */
  readonly index: number;
  /** The response; absent to only end the request's stream. */
  readonly response?: Response;
  /** No more responses for this request follow. Streams still open when the callable ends are ended then. */
  readonly final?: boolean;
}

/**
 * The raw inference contract: a list of requests in, one response per request out, in order. The second
 * argument describes the model and the instance running the batch (decorators use it).
 */
export type InferCallable = (requests: Request[], instance?: InstanceContext) => Promise<Response[]> | Response[];

/**
 * The raw contract of a decoupled (streaming) model: an async iterable of `StreamItem`s — zero or more
 * responses per request, each request's stream ending on its own. `bind()` accepts it as `inferFunc` for a
 * model with `decoupled: true`.
 */
export type DecoupledCallable = (requests: Request[], instance?: InstanceContext) => AsyncIterable<StreamItem>;

/**
 * The key under which a server request carries a buffer its inputs view and nobody else reads, which an
 * instance may move to another thread (see `InferenceRequest.movableBuffer`).
 */
export const MOVABLE_BUFFER: unique symbol = Symbol('tstriton.movableBuffer');

/**
 * True for async generators and other async iterables: what a decoupled callable returns, where a plain one
 * returns responses.
 */
export function isAsyncIterable<T = unknown>(value: unknown): value is AsyncIterable<T> {
  return typeof value === 'object' && value !== null && typeof (value as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === 'function';
}
