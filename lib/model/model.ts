import { MOVABLE_BUFFER, type InferCall, type OutputValue, type Request, type Response } from '../callable';
import { CANCELLATION, Cancellation } from '../cancellation';
import { warmupRequests } from './warmup';
import { ModelStatistics, type FailureReason } from './model-statistics';
import { buildModelConfigJson, type ModelConfigJson, type ModelDescription } from '../config/triton-model-config';
import type { NamedTensorSpec } from '../config/tensor-spec';
import type { ModelConfig } from '../config/model-config';
import { TritonError, UnrecoverableError } from '../errors';
import { inService, type HealthEvent, type Instance } from '../instances/instance';
import { Scheduler, type EnqueueOptions, type Scheduled } from '../scheduler/scheduler';
import { MAX_TIMER_MS } from '../scheduler/priority-queue';
import type { TensorData } from '../tensor/dtype';
import { checkData, elementCount, tensor, type Tensor } from '../tensor/tensor';
import type { InferenceRequest, InferenceResponse, NamedTensor } from './inference';
import { ResponseCache } from './response-cache';
import type { Tracer } from '../trace';

/** Model states, as the repository index reports them. */
export type ModelState = 'LOADING' | 'READY' | 'UNLOADING' | 'UNAVAILABLE';

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
  /** The server's response cache, when this model's config enables it. */
  responseCache?: ResponseCache;
  /** Records traces of the requests the trace settings sample. */
  tracer?: Tracer;
}

/** Runs a call a model makes to another model; `chain` is the call path ending with the caller. */
export type BlsHandler = (call: InferCall, chain: readonly string[], caller: Cancellation) => Promise<Record<string, Tensor>>;

/** The request the scheduler and the callable see; its AbortSignal is made only if the callable asks. */
class ScheduledRequest implements Request {
  infer: Request['infer'];
  readonly [CANCELLATION]: Cancellation;
  readonly [MOVABLE_BUFFER]: ArrayBufferLike | undefined;

  constructor(
    readonly inputs: Request['inputs'],
    readonly parameters: Request['parameters'],
    readonly requestedOutputs: readonly string[],
    readonly id: string,
    cancellation: Cancellation,
    movableBuffer: ArrayBufferLike | undefined,
  ) {
    this[CANCELLATION] = cancellation;
    this[MOVABLE_BUFFER] = movableBuffer;
  }

  get signal(): AbortSignal {
    return this[CANCELLATION].signal;
  }
}

function cancelReason(reason: unknown): TritonError {
  return reason instanceof TritonError ? reason : new TritonError('CANCELLED', 'request cancelled');
}

/**
 * Everything one request needs while it lives: the validated request for the scheduler, a cancellation that
 * fires when the client goes away, when the request is cancelled, or at its deadline (the `timeout`
 * parameter, or the transport's deadline), and the cleanup that releases all of it. One object per request
 * (not a bag of closures): it is made on the hot path.
 */
class RequestJob implements EnqueueOptions {
  /** Queue placement (the job is its own EnqueueOptions). */
  readonly priority: number | undefined;
  readonly timeoutMicroseconds: number | undefined;
  /** When the request arrived (performance.now()). */
  readonly start = performance.now();
  private readonly unfollow: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private deadline: Promise<never> | undefined;
  private released = false;

  constructor(
    private readonly model: Model,
    req: InferenceRequest,
    readonly request: ScheduledRequest,
    readonly rows: number,
    readonly batchKey: string,
    readonly cancellation: Cancellation,
  ) {
    this.priority = req.priority;
    this.timeoutMicroseconds = req.timeoutMicroseconds;
    this.unfollow = req.signal ? cancellation.follow(req.signal) : undefined;
    const timeoutMs = req.deadline !== undefined ? req.deadline - Date.now() : req.timeoutMicroseconds ? req.timeoutMicroseconds / 1000 : undefined;
    if (timeoutMs !== undefined && timeoutMs <= MAX_TIMER_MS) {
      this.deadline = new Promise<never>((_, reject) => {
        this.timer = setTimeout(() => {
          // Still queued: the queue's own timeout error. Running: the deadline ends it, and the callable sees the signal.
          cancellation.abort(new TritonError('UNAVAILABLE', 'Request timeout expired'));
          reject(new TritonError('DEADLINE_EXCEEDED', `[request id: ${req.id || '<id_unknown>'}] Request timeout expired after ${Math.round(timeoutMs)} ms`));
        }, Math.max(0, timeoutMs));
      });
      this.deadline.catch(() => {}); // only raced: never an unhandled rejection
    }
  }

  /** Races `work` against the request's deadline, if it has one. */
  race<V>(work: Promise<V>): Promise<V> {
    return this.deadline ? Promise.race([work, this.deadline]) : work;
  }

  elapsedNs(): number {
    return Math.round((performance.now() - this.start) * 1e6);
  }

  cancel(): void {
    this.cancellation.abort();
  }

  /** A request whose client left (or whose deadline passed) fails even if its callable finished. */
  throwIfCancelled(): void {
    if (this.cancellation.aborted) throw cancelReason(this.cancellation.reason);
  }

  /** A client that went away explains the failure better than what its abort caused downstream. */
  error(err: unknown): unknown {
    const { aborted, reason } = this.cancellation;
    return aborted && (reason as TritonError | undefined)?.code === 'CANCELLED' ? cancelReason(reason) : err;
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.model.jobReleased();
    if (this.timer) clearTimeout(this.timer);
    this.unfollow?.();
  }
}

/** The kind of every model's metadata JSON (`GET /v2/models/{m}`). */
export interface ModelMetadata {
  name: string;
  versions: string[];
  platform: string;
  inputs: { name: string; datatype: string; shape: number[] }[];
  outputs: { name: string; datatype: string; shape: number[] }[];
}

/**
 * A bound model: its specs and config, its instances and scheduler, and its readiness. It validates
 * requests against the specs before they queue and responses against the specs before they leave.
 */
export class Model {
  readonly name: string;
  readonly version: string;
  readonly inputs: readonly NamedTensorSpec[];
  readonly outputs: readonly NamedTensorSpec[];
  readonly config: ModelConfig;
  readonly strict: boolean;
  readonly instances: readonly Instance[];
  readonly scheduler: Scheduler<NamedTensor[]>;
  readonly configJson: ModelConfigJson;
  readonly metadata: ModelMetadata;
  readonly statistics = new ModelStatistics();
  state: ModelState = 'LOADING';
  /** Why the model failed to load, when it did. */
  loadError: Error | undefined;
  /** True once unloaded through the repository API (it then no longer counts toward server readiness). */
  unloaded = false;

  private readonly inputByName: Map<string, NamedTensorSpec>;
  private readonly outputByName: Map<string, NamedTensorSpec>;
  private readonly allOutputNames: readonly string[];
  private readonly maxBatchSize: number;
  private readonly bls: BlsHandler | undefined;
  private readonly cache: ResponseCache | undefined;
  private readonly tracer: Tracer | undefined;
  private live = 0;
  private created = 0;
  private released = 0;
  /** Called when the last live request ends (an unload waits for it). */
  private drained: (() => void) | undefined;
  /** The latest instance failure, for the error of requests that no instance is left to run. */
  private lastFailure: HealthEvent | undefined;

  constructor(init: ModelInit) {
    this.bls = init.bls;
    this.cache = init.responseCache;
    this.tracer = init.tracer;
    this.name = init.name;
    this.version = init.version;
    this.inputs = init.inputs;
    this.outputs = init.outputs;
    this.config = init.config;
    this.strict = init.strict;
    this.instances = init.instances;
    this.maxBatchSize = init.config.effectiveMaxBatchSize;
    this.inputByName = new Map(init.inputs.map((s) => [s.name, s]));
    this.outputByName = new Map(init.outputs.map((s) => [s.name, s]));
    this.allOutputNames = init.outputs.map((s) => s.name);
    const batcher = init.config.batcher;
    this.scheduler = new Scheduler<NamedTensor[]>(
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
      (request, response) => this.validateOutputs(request, response),
      {
        onExecutionError: (err) => {
          if (err instanceof UnrecoverableError) init.onUnrecoverable?.(err, this);
        },
        onExecution: (record) => {
          this.statistics.recordExecution(record);
        },
        outOfService: () => this.outOfService(),
      },
    );
    for (const instance of init.instances) {
      instance.onHealthChange?.((event) => {
        if (!event.healthy) this.lastFailure = event;
        this.scheduler.wake();
      });
    }
    const description: ModelDescription = {
      name: init.name,
      platform: init.platform ?? '',
      backend: init.backend ?? 'tstriton',
      defaultModelFilename: init.defaultModelFilename,
      inputs: init.inputs,
      outputs: init.outputs,
      config: init.config,
      instanceGroups: init.instanceGroups ?? groupInstances(init.instances),
      extra: init.configExtra,
    };
    this.configJson = buildModelConfigJson(description);
    const batchDim = this.maxBatchSize > 0 ? [-1] : [];
    const specJson = (s: NamedTensorSpec) => ({ name: s.name, datatype: s.dtype, shape: [...batchDim, ...s.shape] });
    this.metadata = {
      name: init.name,
      versions: [init.version],
      platform: description.platform || description.backend,
      inputs: init.inputs.map(specJson),
      outputs: init.outputs.map(specJson),
    };
  }

  /**
   * Ready: loaded, not stopping, and every instance healthy or coming back by itself. A worker restarting at
   * once after a crash keeps the model ready (requests queue for it); one backing off after repeated failures,
   * or failed for good, makes it not ready.
   */
  get ready(): boolean {
    return this.state === 'READY' && this.instances.every(inService);
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
    return new TritonError('MODEL_NOT_READY', `Request for unavailable model: '${this.name}' is not ready${why}`);
  }

  /** Starts every instance, runs the warmup, and turns the model READY; a failure leaves it UNAVAILABLE. */
  async load(): Promise<void> {
    try {
      await Promise.all(
        this.instances.map((instance) =>
          instance.start({ modelName: this.name, modelVersion: this.version, modelConfig: this.configJson, instanceName: instance.name, device: instance.device }),
        ),
      );
      for (const setting of this.config.warmup) {
        for (const instance of this.instances) {
          for (let i = 0; i < setting.count; i++) {
            const requests = warmupRequests(setting, this.inputs, this.maxBatchSize > 0, this.allOutputNames);
            const responses = await instance.execute(requests);
            requests.forEach((r, j) => this.validateOutputs(r, responses[j] as Response));
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
    return this.live;
  }

  /** Per-request states created and released since the model was bound (equal when nothing leaks). */
  get requestStates(): { created: number; released: number } {
    return { created: this.created, released: this.released };
  }

  /** Validates, queues and runs one request; resolves with its validated outputs. */
  infer(req: InferenceRequest): Promise<InferenceResponse> {
    if (this.config.decoupled) {
      return Promise.reject(new TritonError('UNSUPPORTED', `model '${this.name}' is decoupled and can only be called through a streaming endpoint`));
    }
    let job: RequestJob;
    try {
      job = this.prepare(req);
    } catch (err) {
      return Promise.reject(err);
    }
    if (this.cache) return this.inferCached(this.cache, req, job);
    // Continuations instead of an async function: this runs for every request.
    return job.race(this.scheduler.enqueue(job.request, job.rows, job.batchKey, job)).then(
      (scheduled) => this.succeeded(req, job, scheduled),
      (err: unknown) => this.failed(job, err),
    );
  }

  /** Answers from the response cache, or runs the request and stores its response. */
  private inferCached(cache: ResponseCache, req: InferenceRequest, job: RequestJob): Promise<InferenceResponse> {
    const lookupStart = performance.now();
    const { inputs, requestedOutputs, parameters } = job.request;
    const key = ResponseCache.keyOf(this.name, this.version, inputs, requestedOutputs, parameters);
    const hit = cache.lookup(key);
    const lookupNs = nsSince(lookupStart);
    if (hit) {
      this.statistics.recordCacheHit(job.elapsedNs(), lookupNs);
      job.release();
      return Promise.resolve({ id: req.id, modelName: this.name, modelVersion: this.version, outputs: hit });
    }
    return job.race(this.scheduler.enqueue(job.request, job.rows, job.batchKey, job)).then(
      (scheduled) => {
        if (!job.cancellation.aborted) {
          const insertStart = performance.now();
          cache.insert(key, scheduled.value);
          this.statistics.recordCacheMiss(lookupNs + nsSince(insertStart));
        }
        return this.succeeded(req, job, scheduled);
      },
      (err: unknown) => this.failed(job, err),
    );
  }

  private succeeded(req: InferenceRequest, job: RequestJob, scheduled: Scheduled<NamedTensor[]>): InferenceResponse {
    try {
      job.throwIfCancelled();
    } catch (err) {
      return this.failed(job, err);
    }
    this.statistics.recordSuccess(job.elapsedNs(), scheduled);
    this.tracer?.record(this.name, this.version, req.id, job.start, scheduled);
    job.release();
    return { id: req.id, modelName: this.name, modelVersion: this.version, outputs: scheduled.value };
  }

  private failed(job: RequestJob, err: unknown): never {
    const error = job.error(err);
    this.statistics.recordFailure(job.elapsedNs(), failureReason(error));
    job.release();
    throw error;
  }

  /**
   * Validates and queues one request of a decoupled model; its responses arrive as they are produced, each
   * marked final or not. Stopping the iteration early cancels the request (its callable sees the signal).
   */
  inferStream(req: InferenceRequest, highWaterMark = 16): AsyncIterable<InferenceResponse & { final: boolean }> {
    if (!this.config.decoupled) {
      throw new TritonError('UNSUPPORTED', `model '${this.name}' is not decoupled: use ModelInfer or /infer`);
    }
    const job = this.prepare(req);
    const stream = this.scheduler.enqueueStream(job.request, job.rows, job.batchKey, job, highWaterMark);
    const { name, version, statistics } = this;
    async function* responses(): AsyncGenerator<InferenceResponse & { final: boolean }> {
      let finished = false;
      try {
        const events = stream[Symbol.asyncIterator]();
        for (;;) {
          const next = await job.race(events.next());
          if (next.done) break;
          job.throwIfCancelled();
          const { value, final } = next.value;
          yield { id: req.id, modelName: name, modelVersion: version, outputs: value ?? [], final };
        }
        finished = true;
        statistics.recordSuccess(job.elapsedNs(), { value: undefined, queueNs: 0, computeInputNs: 0, computeInferNs: 0, computeOutputNs: 0, batchRows: job.rows });
      } catch (err) {
        finished = true;
        const error = job.error(err);
        statistics.recordFailure(job.elapsedNs(), failureReason(error));
        throw error;
      } finally {
        if (!finished) {
          // The reader went away: cancel the request so its producer stops.
          job.cancel();
          statistics.recordFailure(job.elapsedNs(), 'CANCELED');
        }
        stream.stopReading();
        job.release();
      }
    }
    return responses();
  }

  /**
   * Everything one request needs while it lives: the validated request for the scheduler, a signal that fires
   * when the client goes away, when the request is cancelled, or at its deadline (the `timeout` parameter, or
   * the transport's deadline), and the cleanup that releases all of it.
   */
  private prepare(req: InferenceRequest): RequestJob {
    if (!this.ready) throw new TritonError('MODEL_NOT_READY', `Request for unavailable model: '${this.name}' is not ready`);
    // Built only when an error message needs it.
    const { inputs, rows, batchKey } = this.validateInputs(req);
    const requestedOutputs = this.validateRequestedOutputs(req);
    const cancellation = req.cancellation ?? new Cancellation();
    this.live++;
    this.created++;
    const request = new ScheduledRequest(inputs, req.parameters, requestedOutputs, req.id, cancellation, req.movableBuffer);
    const bls = this.bls;
    if (bls) request.infer = (call) => bls(call, [...(req.chain ?? []), this.name], cancellation);
    return new RequestJob(this, req, request, rows, batchKey, cancellation);
  }

  /** @internal Called once by each request's job when it ends. */
  jobReleased(): void {
    this.live--;
    this.released++;
    if (this.live === 0 && this.drained) this.drained();
  }

  /**
   * Unloads the model: refuses new requests at once (`UNLOADING`), lets the ones it holds finish for up to
   * `timeoutMs` (then fails those still queued), and closes its instances (`UNAVAILABLE`). A model is not
   * loaded again: the server builds a new one from the same binding.
   */
  async unload(timeoutMs: number): Promise<void> {
    if (this.state === 'UNLOADING' || this.unloaded) return;
    this.state = 'UNLOADING';
    if (this.live > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        this.drained = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.drained = undefined;
      this.scheduler.rejectAll(new TritonError('UNAVAILABLE', `model '${this.name}' was unloaded before the request ran`));
    }
    await Promise.allSettled(this.instances.map((i) => i.close()));
    this.state = 'UNAVAILABLE';
    this.unloaded = true;
  }

  private validateInputs(req: InferenceRequest): { inputs: Record<string, Tensor>; rows: number; batchKey: string } {
    const inputs: Record<string, Tensor> = {};
    let rows = -1;
    // Requests batch together only when their inputs and non-batch dims agree: the key says both.
    let key = '';
    let keyParts: string[] | undefined;
    const batched = this.maxBatchSize > 0;
    for (const { name, tensor: t } of req.inputs) {
      const spec = this.inputByName.get(name);
      if (!spec) throw invalid(`${prefixOf(req.id)}unexpected inference input '${name}' for model '${this.name}'`);
      if (name in inputs) throw invalid(`${prefixOf(req.id)}input '${name}' was given more than once for model '${this.name}'`);
      if (t.dtype !== spec.dtype) {
        throw invalid(`${prefixOf(req.id)}inference input '${name}' data-type is '${t.dtype}', but model '${this.name}' expects '${spec.dtype}'`);
      }
      if (batched) {
        const batch = t.shape[0];
        if (batch === undefined) {
          throw invalid(`${prefixOf(req.id)}inference input '${name}' for model '${this.name}' has no batch dimension; expected shape [-1,${spec.shape.join(',')}]`);
        }
        if (rows === -1) rows = batch;
        else if (batch !== rows) {
          throw invalid(`${prefixOf(req.id)}inference input '${name}' batch size ${batch} does not match the batch size ${rows} of the other inputs for model '${this.name}'`);
        }
      }
      if (!shapeMatches(t.shape, batched ? 1 : 0, spec.shape)) {
        const expected = this.maxBatchSize > 0 ? [-1, ...spec.shape] : spec.shape;
        throw invalid(`${prefixOf(req.id)}unexpected shape for input '${name}' for model '${this.name}'. Expected [${expected.join(',')}], got [${t.shape.join(',')}]`);
      }
      inputs[name] = t;
      let part = `${name}:`;
      for (let i = batched ? 1 : 0; i < t.shape.length; i++) part += `${t.shape[i]},`;
      if (key === '') key = part;
      else (keyParts ??= [key]).push(part);
    }
    const missing = this.inputs.filter((s) => !s.optional && !(s.name in inputs)).map((s) => s.name);
    if (missing.length > 0) {
      const required = this.inputs.filter((s) => !s.optional).length;
      const got = Object.keys(inputs);
      throw invalid(
        `${prefixOf(req.id)}expected ${required} inputs but got ${got.length} inputs for model '${this.name}'. ` +
          `Got input(s) [${got.map((n) => `'${n}'`).join(', ')}], but missing required input(s) [${missing.map((n) => `'${n}'`).join(', ')}]. ` +
          'Please provide all required input(s).',
      );
    }
    if (this.maxBatchSize > 0) {
      if (rows < 1 || rows > this.maxBatchSize) {
        throw invalid(`${prefixOf(req.id)}inference request batch-size must be <= ${this.maxBatchSize} for '${this.name}'` + (rows < 1 ? ` and >= 1, got ${rows}` : ''));
      }
    } else {
      rows = 1;
    }
    return { inputs, rows, batchKey: keyParts ? keyParts.sort().join('|') : key };
  }

  private validateRequestedOutputs(req: InferenceRequest): readonly string[] {
    if (req.requestedOutputs === undefined || req.requestedOutputs.length === 0) return this.allOutputNames;
    for (const name of req.requestedOutputs) {
      if (!this.outputByName.has(name)) throw invalid(`${prefixOf(req.id)}unexpected inference output '${name}' for model '${this.name}'`);
    }
    return req.requestedOutputs;
  }

  /** Checks one raw response against the output specs and orders it as the request asked. */
  private validateOutputs(request: Request, response: Response): NamedTensor[] {
    const prefix = () => prefixOf(request.id);
    const requested = request.requestedOutputs;
    const rows = this.maxBatchSize > 0 ? firstRows(request.inputs) : 1;
    if (typeof response !== 'object' || response === null) {
      throw failed(`${prefix()}model '${this.name}': the callable returned ${response === null ? 'null' : typeof response} instead of an object of outputs`);
    }
    if (this.strict) {
      for (const name of Object.keys(response)) {
        if (!this.outputByName.has(name)) throw failed(`${prefix()}model '${this.name}': the callable returned output '${name}', which the model does not declare`);
      }
    }
    return requested.map((name) => {
      const spec = this.outputByName.get(name) as NamedTensorSpec;
      const value = response[name];
      if (value === undefined) throw failed(`${prefix()}model '${this.name}': output '${name}' is missing from the callable's response`);
      const t = toTensor(value, spec, () => `${prefix()}model '${this.name}', output '${name}'`);
      if (this.maxBatchSize > 0 && t.shape[0] !== rows) {
        throw failed(`${prefix()}model '${this.name}', output '${name}': batch size ${t.shape[0] ?? 'none'} does not match the request's batch size ${rows}`);
      }
      if (this.strict) {
        if (!shapeMatches(t.shape, this.maxBatchSize > 0 ? 1 : 0, spec.shape)) {
          const expected = this.maxBatchSize > 0 ? [-1, ...spec.shape] : spec.shape;
          throw failed(`${prefix()}model '${this.name}', output '${name}': shape [${t.shape.join(',')}] does not match the declared [${expected.join(',')}]`);
        }
      }
      return { name, tensor: t };
    });
  }
}

/** How error messages name a request, as Triton does. */
function prefixOf(id: string): string {
  return `[request id: ${id || '<id_unknown>'}] `;
}

/** Dim 0 of a request's first input (0 when it has none). */
function firstRows(inputs: Readonly<Record<string, Tensor>>): number {
  for (const name in inputs) return inputs[name]?.shape[0] ?? 0;
  return 0;
}

/** Checks an output value against its spec; `where` names it in errors (built only for one). */
function toTensor(value: OutputValue, spec: NamedTensorSpec, where: () => string): Tensor {
  if (typeof value !== 'object' || value === null || !Array.isArray(value.shape)) {
    throw failed(`${where()}: expected a tensor ({ shape, data }), got ${value === null ? 'null' : typeof value}`);
  }
  const dtype = value.dtype ?? spec.dtype;
  if (dtype !== spec.dtype) throw failed(`${where()}: datatype is ${dtype}, but the model declares ${spec.dtype}`);
  let data = value.data as TensorData | readonly unknown[];
  if (dtype === 'BYTES' && Array.isArray(data) && data.some((e) => typeof e === 'string')) {
    data = (data as readonly (string | Uint8Array)[]).map((e) => (typeof e === 'string' ? Buffer.from(e, 'utf8') : e));
  }
  const problem = checkData(dtype, data);
  if (problem) throw failed(`${where()}: ${problem}`);
  if (elementCount(value.shape) !== (data as TensorData).length) {
    throw failed(`${where()}: shape [${value.shape.join(',')}] needs ${elementCount(value.shape)} elements, data holds ${(data as TensorData).length}`);
  }
  return 'dtype' in value && value.dtype === dtype && data === value.data ? (value as Tensor) : tensor(dtype, value.shape, data as TensorData<typeof dtype>);
}

function failureReason(err: unknown): FailureReason {
  if (!(err instanceof TritonError)) return 'OTHER';
  switch (err.code) {
    case 'CANCELLED':
      return 'CANCELED';
    case 'UNAVAILABLE':
      return 'REJECTED';
    case 'INFERENCE_FAILED':
    case 'UNRECOVERABLE':
    case 'INTERNAL':
      return 'BACKEND';
    default:
      return 'OTHER';
  }
}

/** True if `shape` from index `from` on matches `spec` (-1 matches any size). */
function shapeMatches(shape: readonly number[], from: number, spec: readonly number[]): boolean {
  if (shape.length - from !== spec.length) return false;
  for (let i = 0; i < spec.length; i++) {
    const want = spec[i] as number;
    const got = shape[from + i] as number;
    if (!Number.isInteger(got) || got < 0) return false;
    if (want !== -1 && want !== got) return false;
  }
  return true;
}

function groupInstances(instances: readonly Instance[]): ModelDescription['instanceGroups'] {
  const cpu = instances.filter((i) => i.device.kind === 'cpu').length;
  const gpus = instances.filter((i) => i.device.kind === 'gpu').map((i) => i.device.id);
  const groups: { kind: 'KIND_CPU' | 'KIND_GPU'; count: number; gpus: number[] }[] = [];
  if (cpu > 0) groups.push({ kind: 'KIND_CPU', count: cpu, gpus: [] });
  if (gpus.length > 0) {
    const distinct = [...new Set(gpus)].sort((a, b) => a - b);
    groups.push({ kind: 'KIND_GPU', count: gpus.length / distinct.length, gpus: distinct });
  }
  return groups;
}

function invalid(message: string): TritonError {
  return new TritonError('INVALID_ARGUMENT', message);
}

function failed(message: string): TritonError {
  return new TritonError('INFERENCE_FAILED', message);
}

function nsSince(start: number): number {
  return Math.round((performance.now() - start) * 1e6);
}
