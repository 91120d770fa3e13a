import { RESPONSE_PARAMETERS, type ParameterValue, type ResponseParameters } from '../callable/callable';
import type { ModelConfigJson } from '../config/triton-model-config';
import type { ModelMetadata } from '../protocol/model-metadata';
import type { Tensor } from '../tensor/tensor';
import { raceAbort, sleep } from './abortable-wait';
import { ClientError } from './client-error';
import type { CallSettings, ClientTransport, StreamSettings } from './client-transport';
import type { ClientTlsOptions } from './client-tls';
import { createTransport } from './create-transport';
import { toNamedTensors, type InferInputs } from './infer-inputs';

/** Settings of a `ModelClient`, as PyTriton's `ModelClient` arguments. */
export interface ModelClientOptions {
  /** Model version; the latest when omitted. */
  modelVersion?: string;
  /** How long the first call waits for the server and model to be ready and described (default 60). */
  initTimeoutSeconds?: number;
  /** Default timeout of each inference call (default 60). */
  inferenceTimeoutSeconds?: number;
  /** Wait for the model to be ready before the first inference (default true). */
  ensureModelIsReady?: boolean;
  /** HTTP headers or gRPC metadata sent with every call. */
  headers?: Readonly<Record<string, string>>;
  /** TLS settings for `https://` and `grpcs://` URLs: the CA to trust, and a client certificate and key for mutual TLS. */
  tls?: ClientTlsOptions;
}

/** Options of one call. */
export interface CallOptions {
  /** Aborting fails the call with a CANCELLED ClientError and cancels it on the server. */
  signal?: AbortSignal;
  /** Overrides the client's timeout for this call. */
  timeoutSeconds?: number;
  /** HTTP headers or gRPC metadata for this call, on top of the client's. */
  headers?: Readonly<Record<string, string>>;
}

/** Options of one inference call. */
export interface InferOptions extends CallOptions {
  /** Request parameters (custom ones reach the model's callable). */
  parameters?: Readonly<Record<string, ParameterValue>>;
  /** Outputs to return; all of them by default. */
  outputs?: readonly string[];
  /** Request id, echoed by the server. */
  id?: string;
}

/** Options of `stream()`. */
export interface StreamOptions extends InferOptions {
  /** The whole stream fails with DEADLINE_EXCEEDED (and is cancelled) after this many seconds; no limit by default. */
  timeoutSeconds?: number;
  /**
   * The iteration fails with DEADLINE_EXCEEDED (and the request is cancelled) when it waits longer than this
   * for the next response, the first included; the client's `inferenceTimeoutSeconds` by default.
   */
  responseTimeoutSeconds?: number;
}

/** One response of `stream()`. */
export interface StreamResponse {
  /** The output tensors by name (without the batch dimension, as `inferSample`). */
  readonly outputs: Record<string, Tensor>;
  /** The request id echoed by the server ('' when none was given). */
  readonly id: string;
  /** The response parameters the model returned with this response, if any. */
  readonly parameters?: ResponseParameters;
  /**
   * The server marked this as the request's last response; the iteration ends after it. gRPC marks it
   * (`triton_final_response`); SSE cannot, so over HTTP only a non-decoupled model's one response is final.
   */
  readonly final: boolean;
}

/** Options of `waitForServer` and `waitForModel`. */
export interface WaitOptions {
  /** Give up after this many seconds (default: the client's init timeout). */
  timeoutSeconds?: number;
  signal?: AbortSignal;
}

/** What the client learns about its model on first use. */
interface ModelInfo {
  readonly metadata: ModelMetadata;
  readonly maxBatchSize: number;
  readonly decoupled: boolean;
}

const DEFAULT_TIMEOUT_SECONDS = 60;
/** Readiness polls start this often and back off to `MAX_POLL_MS`: a remote server gives no event to wait on. */
const FIRST_POLL_MS = 50;
const MAX_POLL_MS = 1000;

/**
 * A server's answer for a model name it does not know at all (Triton's wording). A known model with no ready
 * version ("has no available versions"), a version not at ready state, and a version it does not have ("version N
 * is not found": a load may still add it) say otherwise, and are waited for.
 */
const UNKNOWN_MODEL = /^Request for unknown model: '.*' is not found$/;
/** Errors that end a wait at once: the server's final answer. */
const FINAL = new WeakSet<ClientError>();

/**
 * A client for one model on a Triton-compatible server, over HTTP (`http://host:port`, or `https://host:port` over
 * TLS with the `tls` option) or gRPC (`grpc://host:port`, or `grpcs://host:port` over TLS), as PyTriton's `ModelClient`. Inputs and outputs are `Tensor`s;
 * `inferSample` adds and strips the batch dimension, `inferBatch` sends batches as they are.
 * Every failure is a `ClientError` carrying the server's status.
 */
export class ModelClient {
  readonly url: string;
  readonly modelName: string;
  readonly modelVersion: string;
  private readonly transport: ClientTransport;
  private readonly initTimeoutMs: number;
  private readonly inferenceTimeoutMs: number;
  private readonly ensureModelIsReady: boolean;
  private readonly headers: Readonly<Record<string, string>>;
  private info: Promise<ModelInfo> | undefined;
  private closed = false;

  constructor(url: string, modelName: string, options: ModelClientOptions = {}) {
    this.url = url;
    this.modelName = modelName;
    this.modelVersion = options.modelVersion ?? '';
    this.initTimeoutMs = seconds(options.initTimeoutSeconds, 'initTimeoutSeconds');
    this.inferenceTimeoutMs = seconds(options.inferenceTimeoutSeconds, 'inferenceTimeoutSeconds');
    this.ensureModelIsReady = options.ensureModelIsReady ?? true;
    this.headers = options.headers ?? {};
    this.transport = createTransport(url, { tls: options.tls });
  }

  /** Resolves once the server reports ready; fails with DEADLINE_EXCEEDED after the timeout. */
  waitForServer(options: WaitOptions = {}): Promise<void> {
    return this.waitUntil('server', (s) => this.transport.serverReady(s), options);
  }

  /**
   * Resolves once the model reports ready; fails with DEADLINE_EXCEEDED after the timeout. A model the server
   * does not know at all (`Request for unknown model: '<m>' is not found`) fails at once with the server's error:
   * a model that exists but has no ready version yet (loading, unloaded, failed to load), or lacks the version
   * asked for, is waited for.
   */
  waitForModel(options: WaitOptions = {}): Promise<void> {
    return this.waitUntil(
      `model '${this.modelName}'`,
      async (s) => {
        if (await this.transport.modelReady(this.modelName, this.modelVersion, s)) return true;
        await this.transport.modelMetadata(this.modelName, this.modelVersion, s).catch((err: unknown) => {
          if (err instanceof ClientError && err.status !== undefined && UNKNOWN_MODEL.test(err.message)) FINAL.add(err);
          throw err;
        });
        return false;
      },
      options,
    );
  }

  /** The model's config, in the JSON form of `GET /v2/models/{m}/config` on either protocol. */
  modelConfig(options: CallOptions = {}): Promise<ModelConfigJson> {
    this.checkOpen();
    return this.transport.modelConfig(this.modelName, this.modelVersion, this.settings(options, this.initTimeoutMs));
  }

  /** The model's metadata: inputs and outputs with datatypes and shapes. */
  modelMetadata(options: CallOptions = {}): Promise<ModelMetadata> {
    this.checkOpen();
    return this.transport.modelMetadata(this.modelName, this.modelVersion, this.settings(options, this.initTimeoutMs));
  }

  /** Runs one sample: adds a batch dimension of 1 to every input and removes it from every output. */
  async inferSample(inputs: InferInputs, options: InferOptions = {}): Promise<Record<string, Tensor>> {
    const { metadata, maxBatchSize } = await raceAbort(this.modelInfo(), options.signal);
    const batched = maxBatchSize > 0;
    const outputs = await this.infer(toNamedTensors(inputs, metadata, batched), options);
    if (!batched) return outputs;
    for (const [name, t] of Object.entries(outputs)) outputs[name] = { dtype: t.dtype, shape: t.shape.slice(1), data: t.data };
    return outputs;
  }

  /** Runs one batch: dim 0 of every input is the batch size. The model must support batching. */
  async inferBatch(inputs: InferInputs, options: InferOptions = {}): Promise<Record<string, Tensor>> {
    const { metadata, maxBatchSize } = await raceAbort(this.modelInfo(), options.signal);
    if (maxBatchSize === 0) {
      throw new ClientError('INVALID_ARGUMENT', `model '${this.modelName}' does not support batching (max_batch_size 0); use inferSample`);
    }
    return this.infer(toNamedTensors(inputs, metadata, false), options);
  }

  /**
   * Streams the responses of one sample, as `inferSample` shapes it: over gRPC with ModelStreamInfer, over HTTP
   * with the generate extension's `/generate_stream` (Server-Sent Events). A decoupled model sends zero or more
   * responses, any other model one. Nothing is sent until iteration starts; responses are read as the loop
   * asks for them, so a slow loop slows the server down rather than buffering. Leaving the loop early
   * (`break`, `return`, a throw) cancels the request on the server; so do the signal (the iteration fails with
   * CANCELLED) and the timeouts (DEADLINE_EXCEEDED). An error the model reports mid-stream fails the
   * iteration with INTERNAL (no status) after the responses before it.
   *
   * Over HTTP the generate extension carries JSON values only: inputs are sent as flat values which the server
   * fits to each input's declared shape, BYTES as UTF-8 text, and FP16/BF16 inputs are refused.
   */
  async *stream(inputs: InferInputs, options: StreamOptions = {}): AsyncGenerator<StreamResponse, void, undefined> {
    const { metadata, maxBatchSize, decoupled } = await raceAbort(this.modelInfo(), options.signal);
    this.checkOpen();
    const batched = maxBatchSize > 0;
    const wanted = options.outputs ? new Set(options.outputs) : undefined;
    const outputSpecs = metadata.outputs
      .filter((o) => !wanted || wanted.has(o.name))
      .map((o) => ({ name: o.name, datatype: o.datatype, shape: batched ? [1, ...o.shape.slice(1)] : o.shape }));
    const request = {
      modelName: this.modelName,
      modelVersion: this.modelVersion,
      id: options.id,
      inputs: toNamedTensors(inputs, metadata, batched),
      outputs: options.outputs,
      parameters: options.parameters,
      outputSpecs,
      decoupled,
    };
    const settings: StreamSettings = {
      signal: options.signal,
      headers: this.headersFor(options),
      timeoutMs: options.timeoutSeconds === undefined ? undefined : seconds(options.timeoutSeconds, 'timeoutSeconds'),
      responseTimeoutMs: options.responseTimeoutSeconds === undefined ? this.inferenceTimeoutMs : seconds(options.responseTimeoutSeconds, 'responseTimeoutSeconds'),
    };
    for await (const response of this.transport.stream(request, settings)) {
      const outputs: Record<string, Tensor> = {};
      for (const { name, tensor } of response.outputs) outputs[name] = batched ? { dtype: tensor.dtype, shape: tensor.shape.slice(1), data: tensor.data } : tensor;
      yield { outputs, id: response.id, final: response.final, ...(response.parameters && { parameters: response.parameters }) };
    }
  }

  /** Closes connections; later calls fail with UNAVAILABLE. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.transport.close();
  }

  /** Closes the client at the end of an `await using` scope, as `close()`. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.close();
  }

  private async infer(inputs: ReturnType<typeof toNamedTensors>, options: InferOptions): Promise<Record<string, Tensor>> {
    this.checkOpen();
    const response = await this.transport.infer(
      {
        modelName: this.modelName,
        modelVersion: this.modelVersion,
        id: options.id,
        inputs,
        outputs: options.outputs,
        parameters: options.parameters,
      },
      this.settings(options, this.inferenceTimeoutMs),
    );
    const out: Record<string, Tensor> & { [RESPONSE_PARAMETERS]?: ResponseParameters } = {};
    for (const { name, tensor } of response.outputs) out[name] = tensor;
    // Under a symbol, so that no output name is taken; read it with parametersOf(outputs).
    if (response.parameters) out[RESPONSE_PARAMETERS] = response.parameters;
    return out;
  }

  /** Metadata and batch size, fetched once (after waiting for readiness); a failure is retried on the next call. */
  private modelInfo(): Promise<ModelInfo> {
    this.checkOpen();
    if (!this.info) {
      this.info = this.describe().catch((err: unknown) => {
        this.info = undefined;
        throw err;
      });
      // A caller that gave up (abort) no longer awaits it; the failure is reported to the next caller instead.
      this.info.catch(() => undefined);
    }
    return this.info;
  }

  private async describe(): Promise<ModelInfo> {
    const deadline = Date.now() + this.initTimeoutMs;
    if (this.ensureModelIsReady) await this.waitForModel({ timeoutSeconds: this.initTimeoutMs / 1000 });
    const settings = (): CallSettings => ({ timeoutMs: Math.max(1, deadline - Date.now()), headers: this.headers });
    const metadata = await this.transport.modelMetadata(this.modelName, this.modelVersion, settings());
    const config = await this.transport.modelConfig(this.modelName, this.modelVersion, settings());
    const policy = config.model_transaction_policy as { decoupled?: boolean } | undefined;
    return { metadata, maxBatchSize: Number(config.max_batch_size ?? 0), decoupled: policy?.decoupled === true };
  }

  private async waitUntil(what: string, check: (s: CallSettings) => Promise<boolean>, options: WaitOptions): Promise<void> {
    this.checkOpen();
    const timeoutMs = options.timeoutSeconds === undefined ? this.initTimeoutMs : seconds(options.timeoutSeconds, 'timeoutSeconds');
    const deadline = Date.now() + timeoutMs;
    let pollMs = FIRST_POLL_MS;
    let last = 'not ready';
    for (;;) {
      const left = deadline - Date.now();
      try {
        if (await check({ timeoutMs: Math.max(1, Math.min(left, 5000)), signal: options.signal, headers: this.headers })) return;
      } catch (err) {
        if (err instanceof ClientError && (err.code === 'CANCELLED' || FINAL.has(err))) throw err;
        last = (err as Error).message;
      }
      this.checkOpen();
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        throw new ClientError('DEADLINE_EXCEEDED', `${what} at ${this.url} was not ready within ${timeoutMs / 1000} s (last answer: ${last})`);
      }
      await sleep(Math.min(pollMs, remaining), options.signal);
      pollMs = Math.min(pollMs * 2, MAX_POLL_MS);
    }
  }

  private settings(options: CallOptions, defaultTimeoutMs: number): CallSettings {
    const timeoutMs = options.timeoutSeconds === undefined ? defaultTimeoutMs : seconds(options.timeoutSeconds, 'timeoutSeconds');
    return { timeoutMs, signal: options.signal, headers: this.headersFor(options) };
  }

  /** The client's headers with the call's on top. */
  private headersFor(options: CallOptions): Readonly<Record<string, string>> {
    return options.headers ? { ...this.headers, ...options.headers } : this.headers;
  }

  private checkOpen(): void {
    if (this.closed) throw new ClientError('UNAVAILABLE', `the client for model '${this.modelName}' at ${this.url} is closed`);
  }
}

function seconds(value: number | undefined, name: string): number {
  if (value === undefined) return DEFAULT_TIMEOUT_SECONDS * 1000;
  if (typeof value !== 'number' || !(value > 0)) throw new ClientError('INVALID_ARGUMENT', `${name} must be a positive number of seconds, got ${String(value)}`);
  return value * 1000;
}
