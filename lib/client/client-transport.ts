import type { ParameterValue } from '../callable/callable';
import type { ModelConfigJson } from '../config/triton-model-config';
import type { NamedTensor } from '../tensor/named-tensor';
import type { ModelMetadata } from '../protocol/model-metadata';

/** Per-call settings every transport honours. */
export interface CallSettings {
  /** The call fails with DEADLINE_EXCEEDED after this many milliseconds. */
  readonly timeoutMs: number;
  /** Aborting fails the call with CANCELLED and stops it on the wire. */
  readonly signal?: AbortSignal;
  /** HTTP headers, or gRPC metadata. */
  readonly headers?: Readonly<Record<string, string>>;
}

/** One inference request as the client sends it. */
export interface ClientInferRequest {
  readonly modelName: string;
  readonly modelVersion: string;
  readonly id?: string;
  readonly inputs: readonly NamedTensor[];
  /** Outputs to return; all of them when undefined. */
  readonly outputs?: readonly string[];
  readonly parameters?: Readonly<Record<string, ParameterValue>>;
}

/** The answer to an inference request. */
export interface ClientInferResponse {
  readonly id: string;
  readonly modelName: string;
  readonly modelVersion: string;
  readonly outputs: readonly NamedTensor[];
  /** The response parameters, when the server sent any. */
  readonly parameters?: Readonly<Record<string, ParameterValue>>;
}

/** Settings of one streamed request. */
export interface StreamSettings {
  /** Aborting ends the iteration with CANCELLED and stops the request on the wire. */
  readonly signal?: AbortSignal;
  /** HTTP headers, or gRPC metadata. */
  readonly headers?: Readonly<Record<string, string>>;
  /** The whole stream fails with DEADLINE_EXCEEDED after this many milliseconds; unbounded when undefined. */
  readonly timeoutMs?: number;
  /** The iteration fails with DEADLINE_EXCEEDED when it waits longer than this for the next response. */
  readonly responseTimeoutMs: number;
}

/** The declared datatype and shape of an output, for protocols whose answers carry only values. */
export interface OutputSpec {
  readonly name: string;
  readonly datatype: string;
  /** The shape of one response's output, `-1` for variable dims (the batch dim, if any, set to 1). */
  readonly shape: readonly number[];
}

/** One streamed inference request: one request, zero or more responses. */
export interface ClientStreamRequest extends ClientInferRequest {
  /**
   * The outputs to decode (the requested ones), for the HTTP generate extension whose events carry bare
   * values; gRPC responses describe their outputs themselves.
   */
  readonly outputSpecs: readonly OutputSpec[];
  /** The model is decoupled: SSE events carry no final mark, so only a non-decoupled model's one response is known final. */
  readonly decoupled: boolean;
}

/** One response of a streamed request. */
export interface ClientStreamResponse {
  readonly id: string;
  readonly outputs: readonly NamedTensor[];
  /** The response parameters, when the server sent any (gRPC's `triton_*` ones left out). */
  readonly parameters?: Readonly<Record<string, ParameterValue>>;
  /** The server marked it as the request's last response. */
  readonly final: boolean;
}

/** What `ModelClient` needs from a protocol: KServe v2 over HTTP or gRPC. */
export interface ClientTransport {
  /** The URL the transport talks to, for messages. */
  readonly url: string;
  serverReady(settings: CallSettings): Promise<boolean>;
  /** False if the model is not ready or not known. */
  modelReady(name: string, version: string, settings: CallSettings): Promise<boolean>;
  modelMetadata(name: string, version: string, settings: CallSettings): Promise<ModelMetadata>;
  /** The model config in its JSON form (snake_case, `TYPE_*` enums, numbers), as `GET .../config` returns it. */
  modelConfig(name: string, version: string, settings: CallSettings): Promise<ModelConfigJson>;
  /**
   * The statistics extension's answer for a model (every version when `version` is empty) in its JSON form
   * (`{"model_stats": [...]}`, snake_case), as `GET .../stats` returns it; gRPC ModelStatistics reads the same.
   */
  modelStatistics(name: string, version: string, settings: CallSettings): Promise<unknown>;
  infer(request: ClientInferRequest, settings: CallSettings): Promise<ClientInferResponse>;
  /**
   * Streams one request's responses: gRPC ModelStreamInfer, or the HTTP generate extension's SSE. Nothing is
   * sent until the first `next()`; ending the iteration early cancels the request on the server.
   */
  stream(request: ClientStreamRequest, settings: StreamSettings): AsyncIterable<ClientStreamResponse>;
  close(): void;
}
