import type { ParameterValue, ResponseParameters, SequenceInfo } from '../callable/callable';
import type { RequestMemory } from '../tensor/buffer-pool';
import type { Cancellation } from '../base/cancellation';
import type { RequestSpan } from '../tracing/trace';
import type { NamedTensor } from '../tensor/named-tensor';

export type { NamedTensor } from '../tensor/named-tensor';

/** An inference request as a transport decoded it, before the model validated it. */
export interface InferenceRequest {
  readonly modelName: string;
  /** Requested version; undefined or '' means the latest. */
  readonly modelVersion?: string;
  /** Request id, echoed back ('' if none). */
  readonly id: string;
  readonly inputs: readonly NamedTensor[];
  /** Outputs the client named, in its order; undefined means every output. */
  readonly requestedOutputs?: readonly string[];
  /** Custom parameters (reserved keys removed). */
  readonly parameters: Readonly<Record<string, ParameterValue>>;
  /** Priority level (0 = the model's default). */
  readonly priority?: number;
  /** Queue timeout override in microseconds. */
  readonly timeoutMicroseconds?: number;
  /**
   * Fires when the client goes away or the request is cancelled; the callable's AbortSignal is made from it
   * only if the callable reads one.
   */
  readonly cancellation: Cancellation;
  /** Absolute deadline (ms since the epoch), e.g. from a gRPC deadline; the request fails once it passes. */
  readonly deadline?: number;
  /**
   * The W3C trace context the request carries (`traceparent`/`tracestate` from HTTP headers or gRPC metadata, or
   * the span of the model that made it); with OpenTelemetry tracing its span is a child of it.
   */
  readonly traceParent?: { readonly traceparent: string; readonly tracestate?: string };
  /** Models on the call path when this request comes from a model (BLS or ensemble step), outermost first. */
  readonly chain?: readonly string[];
  /**
   * A buffer that holds this request's input data and nothing anyone else reads (a request body the transport
   * assembled itself): a worker instance may move it to its thread instead of copying the inputs out of it.
   */
  readonly movableBuffer?: ArrayBufferLike;
  /**
   * The pooled memory the request's tensors live in, which the transport releases once the response is written;
   * a batch of its inputs may be copied into more of it (`concatBatch`).
   */
  readonly memory?: RequestMemory;
  /** `sequence_id`, `sequence_start` and `sequence_end`, when the request named a sequence. */
  readonly sequence?: SequenceInfo;
}

/** A validated response, outputs in the order the transport must write them. */
export interface InferenceResponse {
  readonly id: string;
  readonly modelName: string;
  readonly modelVersion: string;
  readonly outputs: readonly NamedTensor[];
  /** Response parameters the callable returned with its outputs. */
  readonly parameters?: ResponseParameters;
  /** The request's OpenTelemetry span, when it is traced: the transport reports the send on it (`sent`). */
  readonly span?: RequestSpan;
}

/** Validated outputs in the transport's order, with the response parameters the callable returned (if any). */
export type ValidatedOutputs = NamedTensor[] & { parameters?: ResponseParameters };
