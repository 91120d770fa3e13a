import type { DataType, TensorData } from './tensor/dtype';
import type { Tensor } from './tensor/tensor';

/** A request parameter value (string, integer, boolean or double; 64-bit integers as BigInt). */
export type ParameterValue = string | number | boolean | bigint;

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
}

/**
 * An output value: a full tensor, or `{ shape, data }` whose dtype is taken from the output's spec.
 * BYTES data may be given as strings.
 */
export type OutputValue =
  | Tensor
  | { readonly dtype?: DataType; readonly shape: readonly number[]; readonly data: TensorData | readonly string[] };

/** One response: output values by name. */
export type Response = Record<string, OutputValue>;

/** The raw inference contract: a list of requests in, one response per request out, in order. */
export type InferCallable = (requests: Request[]) => Promise<Response[]> | Response[];

/** An AbortSignal that never fires, for requests that carry none. */
export const NEVER_ABORTED: AbortSignal = new AbortController().signal;

/** Marks a function made by `@batch`, `@sample` or their wrappers as a ready raw callable. */
export const CALLABLE_MARK: unique symbol = Symbol.for('tstriton.callable');

/** A raw callable carrying the decorator that made it. */
export type MarkedCallable = InferCallable & { [CALLABLE_MARK]?: string };

/** True if `fn` was made by one of the decorators. */
export function isMarkedCallable(fn: unknown): fn is MarkedCallable {
  return typeof fn === 'function' && (fn as MarkedCallable)[CALLABLE_MARK] !== undefined;
}
