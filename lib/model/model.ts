import type { Request, Response } from '../callable/callable';
import type { CustomMetrics } from '../callable/custom-metrics';
import { warmupRequests } from './warmup';
import { ModelStatistics, type LatencyObserver } from './model-statistics';
import type { ModelConfigJson, ModelDescription } from '../config/triton-model-config';
import type { ModelMetadata } from '../protocol/model-metadata';
import { describeModel, type DescribedModel } from './model-description';
import type { NamedTensorSpec } from '../config/tensor-spec';
import type { ModelConfig } from '../config/model-config';
import { TritonError, UnrecoverableError, tritonError } from '../base/errors';
import { inService, type HealthEvent, type Instance } from '../instances/instance';
import { Scheduler, type SchedulerHooks } from '../scheduler/scheduler';
import type { RequestScheduler } from '../scheduler/request-scheduler';
import { SequenceBatcher } from '../scheduler/sequence-batcher';
import type { InferenceRequest, InferenceResponse, ValidatedOutputs } from './inference';
import type { ResponseCache } from './response-cache';
import { RequestPipeline, type BlsHandler } from './request-pipeline';
import { RequestValidator } from './request-validation';
import { ResponseValidator } from './response-validation';
import type { Tracer } from '../tracing/trace';
import type { ModelState } from './model-view';

/** Everything a Model is built from. */
export interface ModelInit {
  name: string;
  version: string;
  inputs: NamedTensorSpec[];
  outputs: NamedTensorSpec[];
  config: ModelConfig;
  instances: Instance[];
  /** Also check output shapes against the declared dims. */
  strict: boolean;
  platform?: string;
  backend?: string;
  defaultModelFilename?: string;
  /** Called when a callable throws UnrecoverableError. */
  onUnrecoverable?: (err: UnrecoverableError, model: Model) => void;
  /** Serves `request.infer(...)` calls made by this model's callables. */
  bls?: BlsHandler;
  /** Instance groups to report instead of the ones derived from the instances (ensembles report none). */
  instanceGroups?: ModelDescription['instanceGroups'];
  /** Extra config fields (e.g. `ensemble_scheduling`). */
  configExtra?: Record<string, unknown>;
  /** The GPU execution accelerators the config reports until the instances report their own (ONNX models). */
  gpuExecutionAccelerators?: readonly string[];
  /** `optimization.graph.level` (ONNX models given a graph optimization level). */
  graphLevel?: number;
  /** The server's response cache, when this model's config enables it. */
  responseCache?: ResponseCache;
  /** Records traces of the requests the trace settings sample. */
  tracer?: Tracer;
  /** Makes the observer of this model's per-request latencies, when latency summaries or histograms are on. */
  observeLatencies?: LatencyObserverFactory;
  /** The custom metrics its instances get as `context.metrics`. */
  customMetrics?: CustomMetrics;
}

/** Makes a model's latency observer (see `LatencyObserver`). */
export type LatencyObserverFactory = (model: string, version: string, options: { cached: boolean; decoupled: boolean }) => LatencyObserver;

/**
 * A bound model: its specs and config, its instances and scheduler, its readiness, and loading (warm-up
 * included) and unloading. Its requests go through its `RequestPipeline`, which validates them against the specs
 * before they queue; the scheduler validates responses against the specs before they leave.
 */
export class Model {
  readonly name: string;
  readonly version: string;
  readonly inputs: readonly NamedTensorSpec[];
  readonly outputs: readonly NamedTensorSpec[];
  readonly config: ModelConfig;
  readonly strict: boolean;
  readonly instances: readonly Instance[];
  /** The dynamic batcher, or the sequence batcher of a model with `sequenceBatching`. */
  readonly scheduler: RequestScheduler<ValidatedOutputs>;
  /** The generated config; once the instances started, with what they reported (the GPU execution providers). */
  configJson: ModelConfigJson;
  readonly metadata: ModelMetadata;
  readonly statistics = new ModelStatistics();
  private current: ModelState = 'LOADING';
  /** Told when the model's readiness may have changed (its state, an instance's health): the repository's. */
  private readinessListener: (() => void) | undefined;
  /** Why the model failed to load, when it did. */
  loadError: Error | undefined;
  /** True once unloaded through the repository API (it then no longer counts toward server readiness). */
  unloaded = false;

  private readonly requests: RequestValidator;
  private readonly responses: ResponseValidator;
  private readonly maxBatchSize: number;
  /** What the config is generated from. */
  private readonly described: DescribedModel;
  private readonly customMetrics: CustomMetrics | undefined;
  /** Where its requests go in and their responses come out. */
  private readonly pipeline: RequestPipeline;
  /** The latest instance failure, for the error of requests that no instance is left to run. */
  private lastFailure: HealthEvent | undefined;

  constructor(init: ModelInit) {
    this.customMetrics = init.customMetrics;
    this.statistics.observer = init.observeLatencies?.(init.name, init.version, { cached: init.responseCache !== undefined, decoupled: init.config.decoupled });
    this.name = init.name;
    this.version = init.version;
    this.inputs = init.inputs;
    this.outputs = init.outputs;
    this.config = init.config;
    this.strict = init.strict;
    this.instances = init.instances;
    this.maxBatchSize = init.config.effectiveMaxBatchSize;
    this.requests = new RequestValidator(init.name, init.inputs, init.outputs, this.maxBatchSize);
    this.responses = new ResponseValidator(init.name, init.outputs, this.maxBatchSize, init.strict);
    const batcher = init.config.batcher;
    const finalize = (request: Request, response: Response) => this.responses.validate(request, response);
    const hooks: SchedulerHooks = {
      onExecutionError: (err) => {
        if (err instanceof UnrecoverableError) init.onUnrecoverable?.(err, this);
      },
      onExecution: (record) => {
        this.statistics.recordExecution(record);
      },
      outOfService: () => this.outOfService(),
    };
    const sequenceBatching = init.config.sequenceBatching;
    this.scheduler = sequenceBatching
      ? new SequenceBatcher<ValidatedOutputs>(init.instances, { modelName: init.name, maxBatchSize: this.maxBatchSize, config: sequenceBatching }, finalize, hooks)
      : new Scheduler<ValidatedOutputs>(
          init.instances,
          {
            maxBatchSize: this.maxBatchSize,
            dynamicBatching: batcher !== null && this.maxBatchSize > 0,
            maxQueueDelayMicroseconds: batcher?.maxQueueDelayMicroseconds ?? 0,
            preferredBatchSize: batcher?.preferredBatchSize ?? [],
            preserveOrdering: batcher?.preserveOrdering ?? false,
            priorityLevels: batcher?.priorityLevels ?? 0,
            defaultPriorityLevel: batcher?.defaultPriorityLevel ?? 0,
            defaultQueuePolicy: batcher?.defaultQueuePolicy,
            priorityQueuePolicy: batcher?.priorityQueuePolicy,
          },
          finalize,
          hooks,
        );
    for (const instance of init.instances) {
      instance.onHealthChange?.((event) => {
        if (!event.healthy) this.lastFailure = event;
        this.scheduler.wake();
        this.readinessListener?.();
      });
    }
    this.pipeline = new RequestPipeline(this, this.requests, { cache: init.responseCache, tracer: init.tracer, bls: init.bls });
    this.described = init;
    ({ configJson: this.configJson, metadata: this.metadata } = describeModel(init, this.maxBatchSize));
  }

  /**
   * Ready: loaded, not stopping, and every instance healthy or coming back by itself. A worker restarting at
   * once after a crash keeps the model ready (requests queue for it); one backing off after repeated failures,
   * or failed for good, makes it not ready.
   */
  get ready(): boolean {
    return this.state === 'READY' && this.instances.every(inService);
  }

  /** Where the model is in its life, as the repository index reports it. */
  get state(): ModelState {
    return this.current;
  }

  set state(state: ModelState) {
    if (state === this.current) return;
    this.current = state;
    this.readinessListener?.();
  }

  /** Calls `listener` whenever the model's readiness may have changed; one listener, the repository's. */
  onReadinessChange(listener: () => void): void {
    this.readinessListener = listener;
  }

  /** Why requests already queued fail when no instance is left in service. */
  private outOfService(): TritonError {
    const failure = this.lastFailure;
    let why = '';
    if (failure?.cause) {
      why = failure.retryInMs
        ? `: instance ${failure.instance} keeps failing and waits ${failure.retryInMs} ms before it restarts again (last failure: ${failure.cause.message})`
        : `: instance ${failure.instance} failed and does not restart (${failure.cause.message})`;
    }
    return tritonError('modelNotReady', { model: this.name, why });
  }

  /** Starts every instance, runs the warmup, and turns the model READY; a failure leaves it UNAVAILABLE. */
  async load(): Promise<void> {
    try {
      await Promise.all(
        this.instances.map((instance) =>
          instance.start({
            modelName: this.name,
            modelVersion: this.version,
            modelConfig: this.configJson,
            instanceName: instance.name,
            device: instance.device,
            ...(this.customMetrics && { metrics: this.customMetrics }),
          }),
        ),
      );
      if (this.instances.some((i) => i.report !== undefined)) this.configJson = describeModel(this.described, this.maxBatchSize).configJson;
      for (const setting of this.config.warmup) {
        for (const instance of this.instances) {
          for (let i = 0; i < setting.count; i++) {
            const requests = warmupRequests(setting, this.inputs, this.maxBatchSize > 0, this.requests.allOutputNames);
            const responses = await instance.execute(requests);
            requests.forEach((r, j) => this.responses.validate(r, responses[j] as Response));
          }
        }
      }
      this.state = 'READY';
    } catch (err) {
      this.state = 'UNAVAILABLE';
      // Started workers keep running otherwise.
      await Promise.allSettled(this.instances.map((i) => i.close()));
      this.loadError = err instanceof Error ? err : new Error(String(err));
      throw new TritonError('INTERNAL', `failed to load model '${this.name}': ${this.loadError.message}`, { cause: err });
    }
  }

  /** Requests this model is working on (validated and not yet answered); per-request state lives as long. */
  get liveRequests(): number {
    return this.pipeline.liveRequests;
  }

  /** Per-request states created and released since the model was bound (equal when nothing leaks). */
  get requestStates(): { created: number; released: number } {
    return this.pipeline.requestStates;
  }

  /**
   * Validates, queues and runs one request; resolves with its validated outputs. The caller has refused a
   * decoupled model (`refuseDecoupled`), once, where it looked the model up.
   */
  infer(req: InferenceRequest): Promise<InferenceResponse> {
    return this.pipeline.infer(req);
  }

  /**
   * Validates and queues one request of a decoupled model; its responses arrive as they are produced, each
   * marked final or not. Stopping the iteration early cancels the request (its callable sees the signal).
   */
  inferStream(req: InferenceRequest, highWaterMark = 16): AsyncIterable<InferenceResponse & { final: boolean }> {
    return this.pipeline.inferStream(req, highWaterMark);
  }

  /**
   * Unloads the model: refuses new requests at once (`UNLOADING`), lets the ones it holds finish for up to
   * `timeoutMs` (then fails those still queued), and closes its instances (`UNAVAILABLE`). A model is not
   * loaded again: the server builds a new one from the same binding.
   */
  async unload(timeoutMs: number): Promise<void> {
    if (this.state === 'UNLOADING' || this.unloaded) return;
    this.state = 'UNLOADING';
    if (this.pipeline.liveRequests > 0) {
      await this.pipeline.idle(timeoutMs);
      this.scheduler.rejectAll(new TritonError('UNAVAILABLE', `model '${this.name}' was unloaded before the request ran`));
    }
    await Promise.allSettled(this.instances.map((i) => i.close()));
    this.state = 'UNAVAILABLE';
    this.unloaded = true;
  }
}
