import type { ParameterValue } from '../callable';
import type { ModelConfigJson } from '../config/triton-model-config';
import type { NamedTensor } from '../model/inference';
import type { ModelMetadata } from '../model/model';

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
  infer(request: ClientInferRequest, settings: CallSettings): Promise<ClientInferResponse>;
  close(): void;
}
