import { ModelConfig, type ModelConfigInit } from './config/model-config';
import { nameSpecs, type TensorSpec, type TensorSpecInit } from './config/tensor-spec';
import { TritonConfig, type TritonConfigInit } from './config/triton-config';
import { validateOrThrow } from './config/validate';
import { TritonError, type UnrecoverableError } from './errors';
import type { InferFunc } from './infer-func';
import { createInstances } from './instances/create-instances';
import { isOnnxModelSpec, resolveOnnxBinding, type OnnxModelSpec } from './onnx/onnx-model';
import { EnsembleInstance, ensembleSchedulingJson, isEnsembleSpec, planEnsemble, type EnsembleSpec } from './model/ensemble';
import type { BlsHandler } from './model/model';
import { RemoteModels } from './model/remote-models';
import { createLogger, type Logger } from './logger';
import type { InferenceRequest, InferenceResponse } from './model/inference';
import { Model } from './model/model';
import { ModelRepository } from './model/model-repository';
import { ResponseCache } from './model/response-cache';
import { GrpcServer } from './server/grpc/grpc-server';
import { Metrics, MetricsServer } from './metrics/metrics';
import { HttpServer } from './server/http/http-server';
import { SharedMemoryManager } from './server/shared-memory';
import { logSettingsOf, updateLogSettings, type LogSettings } from './log-settings';
import { Tracer, type TraceSettings } from './trace';
import type { RepositoryIndexEntry, ServerCore, ServerMetadata } from './server/server-core';
import { VERSION } from './version';

/** Arguments of `Triton.bind()`, as PyTriton's `bind`. */
export interface BindOptions {
  /** Model name: letters, digits, `_`, `-`, `.`; no path characters. */
  modelName: string;
  /** Model version (a positive integer); 1 by default. */
  modelVersion?: number;
  /**
   * The callable: a function, an object with a decorated method, a class, an `instanceFactory(...)`, or
   * `workers({ module, devices })` for worker threads, or `onnxModel({ path })`; or a list of them (one
   * instance each).
   */
  inferFunc: InferFunc | OnnxModelSpec | EnsembleSpec;
  /** Inputs; for `onnxModel(...)` they are read from the model and may be left out. */
  inputs?: readonly (TensorSpec | TensorSpecInit)[];
  /** Outputs; for `onnxModel(...)` they are read from the model and may be left out. */
  outputs?: readonly (TensorSpec | TensorSpecInit)[];
  config?: ModelConfig | ModelConfigInit;
  /** Also check output shapes against the declared dims (dtype and batch size are always checked). */
  strict?: boolean;
}

/** A transport the server starts and stops (HTTP, gRPC, metrics). */
export interface Transport {
  readonly name: string;
  /** Starts listening; resolves with the bound port. */
  start(): Promise<number>;
  /**
   * Called the moment the server starts stopping, while in-flight work drains; the port stays open (HTTP answers
   * every request from then on with `Connection: close`).
   */
  drain?(): void;
  /**
   * Refuses new connections and calls; called once in-flight inference has drained. May resolve once its
   * connections have closed (HTTP closes each after the response it is writing).
   */
  stopAccepting(): void | Promise<void>;
  /** Ends everything still open; `stop()` awaits it. */
  forceClose(): void | Promise<void>;
}

type State = 'created' | 'starting' | 'running' | 'stopping' | 'stopped';

const MODEL_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

/** Extensions the server implements; `GET /v2` lists exactly these. */
const EXTENSIONS = [
  'binary_tensor_data',
  'classification',
  'logging',
  'model_configuration',
  'model_repository',
  'model_repository(unload_dependents)',
  'parameters',
  'schedule_policy',
  'statistics',
  'trace',
];

/**
 * The server: binds models, serves them over HTTP (and the other transports), and stops in order:
 * not-ready and refusing new inference → drain in-flight work (up to `exitTimeoutSeconds`, then fail what is
 * left) → close the transports → close the instances.
 */
export class Triton implements ServerCore, AsyncDisposable {
  readonly config: TritonConfig;
  readonly repository = new ModelRepository();
  readonly logger: Logger;
  /** The HTTP endpoint; `http.router` takes users' own express routes. */
  readonly http: HttpServer;
  /** Prometheus metrics; register your own on `metrics.registry`. */
  readonly metrics: Metrics;
  /** Ports actually bound, by transport name, once running. */
  readonly ports: Record<string, number> = {};
  /** The response cache (when `responseCacheByteSize` > 0), shared by the models that enable it. */
  readonly responseCache: ResponseCache | undefined;
  /** System shared-memory regions clients registered (when `allowSharedMemory`). */
  readonly sharedMemory: SharedMemoryManager;
  /** The trace extension: its settings, and the traces it writes to `traceFile`. */
  readonly tracer: Tracer;

  private state: State = 'created';
  /** How each bound model was bound, to build it again when it is loaded after an unload. */
  private readonly bindings = new Map<Model, BindOptions>();
  private readonly remote = new RemoteModels();
  private readonly transports: Transport[] = [];
  private stopping: Promise<number> | undefined;
  private exitCode = 0;
  private inFlight = 0;
  private idleWaiters: (() => void)[] = [];
  private stopped!: Promise<number>;
  private resolveStopped!: (code: number) => void;

  constructor(config?: TritonConfig | TritonConfigInit) {
    this.config = config instanceof TritonConfig ? config : TritonConfig.fromEnv(process.env, config);
    validateOrThrow(this.config, 'TritonConfig');
    this.logger = createLogger(this.config.logLevel);
    this.responseCache = this.config.responseCacheByteSize > 0 ? new ResponseCache(this.config.responseCacheByteSize) : undefined;
    this.sharedMemory = new SharedMemoryManager(this.config.allowSharedMemory);
    this.tracer = new Tracer(this.config.traceFile);
    this.http = new HttpServer(this, this.logger);
    this.metrics = new Metrics(this.repository, this.responseCache);
    if (this.config.allowHttp) {
      this.addTransport({
        name: 'http',
        start: () => this.http.listen(this.config.httpPort, this.config.httpAddress),
        drain: () => this.http.drain(),
        stopAccepting: () => this.http.stopAccepting(),
        forceClose: () => this.http.forceClose(),
      });
    }
    if (this.config.allowGrpc) this.addTransport(new GrpcServer(this));
    if (this.config.allowMetrics) {
      const server = new MetricsServer(this.metrics);
      this.addTransport({
        name: 'metrics',
        start: () => server.listen(this.config.metricsPort, this.config.metricsAddress),
        stopAccepting: () => {},
        forceClose: () => server.close(),
      });
    }
    this.stopped = new Promise((resolve) => (this.resolveStopped = resolve));
  }

  /** Adds a transport started by `run()` and stopped by `stop()`. */
  addTransport(transport: Transport): void {
    if (this.state !== 'created') throw new TritonError('INVALID_CONFIG', 'transports must be added before run()');
    this.transports.push(transport);
  }

  /** Binds a model. Every invalid option is rejected here with a message naming the field. */
  bind(options: BindOptions): Model {
    if (this.state === 'stopping' || this.state === 'stopped') throw new TritonError('UNAVAILABLE', 'cannot bind: the server is stopping');
    const { modelName } = options;
    if (typeof modelName !== 'string' || !MODEL_NAME.test(modelName)) {
      throw new TritonError('INVALID_CONFIG', `invalid modelName ${JSON.stringify(modelName)}: use letters, digits, '_', '-' and '.', starting with a letter, digit or '_'`);
    }
    const version = options.modelVersion ?? 1;
    if (!Number.isInteger(version) || version < 1) {
      throw new TritonError('INVALID_CONFIG', `invalid modelVersion for model '${modelName}': expected a positive integer, got ${String(version)}`);
    }
    if (this.repository.has(modelName)) {
      const taken = this.repository.all().some((m) => m.name === modelName && m.version === String(version));
      if (taken) throw new TritonError('ALREADY_EXISTS', `model '${modelName}' version ${version} is already bound`);
    }
    const model = this.buildModel(options, modelName, version);
    this.repository.add(model);
    this.bindings.set(model, options);
    if (this.state === 'running') {
      model.load().catch((err: Error) => this.logger.error({ model: modelName, err: err.message }, 'model failed to load'));
    }
    return model;
  }

  /** Builds a model and its instances from its binding (at bind, and again when it is loaded after an unload). */
  private buildModel(options: BindOptions, modelName: string, version: number): Model {
    const onnx = isOnnxModelSpec(options.inferFunc) ? resolveOnnxBinding(options.inferFunc, modelName, options) : undefined;
    const config = onnx?.config ?? (options.config instanceof ModelConfig ? options.config : new ModelConfig(options.config));
    validateOrThrow(config, `ModelConfig of model '${modelName}'`);
    if (config.responseCache && !this.responseCache) {
      throw new TritonError(
        'INVALID_CONFIG',
        `model '${modelName}' enables responseCache, but the server has no response cache: give it a size with new Triton({ responseCacheByteSize }) or TSTRITON_RESPONSE_CACHE_BYTE_SIZE`,
      );
    }
    if (config.responseCache && config.decoupled) {
      throw new TritonError('INVALID_CONFIG', `model '${modelName}' is decoupled: decoupled models cannot use the response cache`);
    }
    const inputs = nameSpecs(onnx?.inputs ?? options.inputs ?? [], 'INPUT');
    const outputs = nameSpecs(onnx?.outputs ?? options.outputs ?? [], 'OUTPUT');
    inputs.forEach((s, i) => validateOrThrow(s, `input ${i} of model '${modelName}'`));
    outputs.forEach((s, i) => validateOrThrow(s, `output ${i} of model '${modelName}'`));
    if (outputs.length === 0) throw new TritonError('INVALID_CONFIG', `model '${modelName}' must declare at least one output`);
    const labelled = inputs.find((s) => s.labels !== undefined);
    if (labelled) throw new TritonError('INVALID_CONFIG', `model '${modelName}': input '${labelled.name}' has labels; only outputs take labels`);
    for (const [kind, specs] of [['input', inputs], ['output', outputs]] as const) {
      const seen = new Set<string>();
      for (const s of specs) {
        if (seen.has(s.name)) throw new TritonError('INVALID_CONFIG', `model '${modelName}' declares ${kind} '${s.name}' twice`);
        seen.add(s.name);
      }
    }
    let instances;
    let ensembleFields: { platform: string; backend: string; instanceGroups: []; configExtra: Record<string, unknown> } | undefined;
    if (isEnsembleSpec(options.inferFunc)) {
      const steps = planEnsemble(modelName, options.inferFunc, inputs, outputs, config.effectiveMaxBatchSize, this.repository);
      // An ensemble's own queue only forwards: each step batches in its model's scheduler.
      config.batcher = null;
      instances = [new EnsembleInstance(`${modelName}_0`, steps)];
      ensembleFields = { platform: 'ensemble', backend: '', instanceGroups: [], configExtra: ensembleSchedulingJson(options.inferFunc.steps) };
    } else {
      instances = createInstances(onnx?.inferFunc ?? (options.inferFunc as InferFunc), modelName);
    }
    return new Model({
      platform: ensembleFields?.platform ?? onnx?.platform,
      backend: ensembleFields?.backend ?? onnx?.backend,
      instanceGroups: ensembleFields?.instanceGroups,
      configExtra: ensembleFields?.configExtra,
      bls: this.bls,
      defaultModelFilename: onnx?.defaultModelFilename,
      name: modelName,
      version: String(version),
      inputs,
      outputs,
      config,
      instances,
      strict: options.strict ?? false,
      onUnrecoverable: (err, m) => this.onUnrecoverable(err, m),
      responseCache: config.responseCache ? this.responseCache : undefined,
      tracer: this.tracer,
    });
  }

  /**
   * The repository index: every bound model with its state (`READY`, `LOADING`, `UNLOADING`,
   * `UNAVAILABLE`) and, when not ready, why; only ready ones with `readyOnly`.
   */
  repositoryIndex(readyOnly = false): RepositoryIndexEntry[] {
    return this.repository
      .all()
      .filter((m) => !readyOnly || m.ready)
      .map((m) => {
        const reason = m.unloaded ? 'unloaded' : m.state === 'UNAVAILABLE' ? (m.loadError?.message ?? 'unavailable') : '';
        return reason ? { name: m.name, version: m.version, state: m.state, reason } : { name: m.name, version: m.version, state: m.state };
      });
  }

  /**
   * Loads a bound model again after an unload (or a failed load): new instances from its binding, warmup,
   * READY. A model that is ready already is left as it is. Every version of the name is loaded.
   */
  async loadModel(name: string): Promise<void> {
    this.requireModelControl();
    if (this.state !== 'running') throw new TritonError('UNAVAILABLE', 'Server is stopping and accepts no new requests');
    const models = this.repository.versionsOf(name);
    if (models.length === 0) throw new TritonError('INVALID_ARGUMENT', `failed to load '${name}', failed to poll from model repository`);
    for (const old of models) {
      if (old.state === 'READY' || old.state === 'LOADING') continue;
      if (old.state === 'UNLOADING') throw new TritonError('UNAVAILABLE', `model '${name}' is unloading; load it once it has unloaded`);
      const options = this.bindings.get(old) as BindOptions;
      const fresh = this.buildModel(options, old.name, Number(old.version));
      this.bindings.delete(old);
      this.bindings.set(fresh, options);
      this.repository.replace(fresh);
      this.logger.info({ model: name, version: fresh.version }, 'loading model');
      await fresh.load();
    }
  }

  /**
   * Unloads every version of a model: new requests are refused at once, the ones in flight finish (for up to
   * `exitTimeoutSeconds`), then its instances close. With `unloadDependents`, ensembles that call it are
   * unloaded too.
   */
  async unloadModel(name: string, unloadDependents = false): Promise<void> {
    this.requireModelControl();
    if (this.state !== 'running') throw new TritonError('UNAVAILABLE', 'Server is stopping and accepts no new requests');
    const models = this.repository.versionsOf(name);
    if (models.length === 0) throw new TritonError('INVALID_ARGUMENT', `failed to unload '${name}', no version is available`);
    const targets = [...models];
    if (unloadDependents) {
      for (const [model, options] of this.bindings) {
        if (isEnsembleSpec(options.inferFunc) && options.inferFunc.steps.some((s) => s.modelName === name)) targets.push(model);
      }
    }
    this.logger.info({ models: targets.map((m) => m.name) }, 'unloading');
    await Promise.all(targets.map((m) => m.unload(this.config.exitTimeoutSeconds * 1000)));
  }

  /** Load and unload are served only in `explicit` model control mode; Triton refuses them otherwise, in these words. */
  private requireModelControl(): void {
    if (this.config.modelControlMode !== 'explicit') {
      throw new TritonError('UNAVAILABLE', 'explicit model load / unload is not allowed if polling is enabled');
    }
  }

  /** Starts every transport in the background; resolves once they listen. */
  async run(): Promise<void> {
    if (this.state !== 'created') throw new TritonError('INVALID_CONFIG', `run() called twice (server is ${this.state})`);
    this.state = 'starting';
    try {
      for (const t of this.transports) this.ports[t.name] = await t.start();
    } catch (err) {
      this.state = 'running';
      await this.stop();
      throw err;
    }
    try {
      await Promise.all(this.repository.all().map((m) => m.load()));
    } catch (err) {
      this.state = 'running';
      await this.stop();
      throw err;
    }
    this.state = 'running';
    this.logger.info({ ports: this.ports, models: this.repository.all().map((m) => m.name) }, 'serving');
  }

  /**
   * Runs until stopped by `stop()`, SIGINT or SIGTERM, or an UnrecoverableError; resolves with the exit
   * code (non-zero after an UnrecoverableError) and sets `process.exitCode` to it.
   */
  async serve(): Promise<number> {
    await this.run();
    const onSignal = (signal: NodeJS.Signals) => {
      this.logger.info({ signal }, 'stopping on signal');
      void this.stop();
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    const code = await this.stopped;
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.exitCode = code;
    return code;
  }

  /** Stops the server in order; idempotent. Resolves with the exit code. */
  stop(): Promise<number> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  /** Resolves with the exit code once the server has stopped, however it stopped. */
  get done(): Promise<number> {
    return this.stopped;
  }

  isLive(): boolean {
    return this.state === 'running' || this.state === 'stopping';
  }

  isReady(): boolean {
    if (this.state !== 'running') return false;
    // Models unloaded on purpose do not hold the server back.
    return !this.config.strictReadiness || this.repository.all().every((m) => m.ready || m.unloaded);
  }

  metadata(): ServerMetadata {
    const extensions = this.config.allowSharedMemory ? [...EXTENSIONS, 'system_shared_memory'] : [...EXTENSIONS];
    return { name: 'tstriton', version: this.config.serverVersion ?? VERSION, extensions };
  }

  traceSettings(model?: string, update?: Readonly<Record<string, unknown>>): TraceSettings {
    // An unknown model is refused as in inference requests.
    const name = model === undefined ? undefined : this.repository.get(model).name;
    return this.tracer.settings(name, update);
  }

  logSettings(update?: Readonly<Record<string, unknown>>): LogSettings {
    return update ? updateLogSettings(this.logger, update) : logSettingsOf(this.logger);
  }

  modelStatistics(name?: string, version?: string): Record<string, unknown>[] {
    const models = name ? [this.repository.get(name, version)] : this.repository.all().filter((m) => m.ready);
    for (const m of models) {
      if (m.state !== 'READY') throw new TritonError('MODEL_NOT_FOUND', `requested model '${m.name}' is not available`);
    }
    return models.map((m) => m.statistics.toJson(m.name, m.version));
  }

  infer(request: InferenceRequest): Promise<InferenceResponse> {
    if (this.state !== 'running') return Promise.reject(new TritonError('UNAVAILABLE', 'Server is stopping and accepts no new requests'));
    let model: Model;
    try {
      model = this.repository.get(request.modelName, request.modelVersion);
    } catch (err) {
      return Promise.reject(err);
    }
    this.inFlight++;
    if (this.logger.isLevelEnabled('debug')) return this.inferLogged(model, request);
    return model.infer(request).then(this.inferDone, this.inferFailed);
  }

  /** `infer` with a debug line per request (log_verbose_level ≥ 1). */
  private inferLogged(model: Model, request: InferenceRequest): Promise<InferenceResponse> {
    const start = performance.now();
    const line = (outcome: string) => ({ model: model.name, version: model.version, id: request.id, outcome, ms: Math.round((performance.now() - start) * 1000) / 1000 });
    return model.infer(request).then(
      (response) => {
        this.logger.debug(line('ok'), 'inference request');
        return this.inferDone(response);
      },
      (err: unknown) => {
        this.logger.debug(line(err instanceof Error ? err.message : String(err)), 'inference request');
        return this.inferFailed(err);
      },
    );
  }

  /** The end of an infer call (made once: this runs for every request). */
  private readonly inferDone = (response: InferenceResponse): InferenceResponse => {
    this.leaveInfer();
    return response;
  };

  private readonly inferFailed = (err: unknown): never => {
    this.leaveInfer();
    throw err;
  };

  private leaveInfer(): void {
    this.inFlight--;
    if (this.inFlight === 0) for (const w of this.idleWaiters.splice(0)) w();
  }

  /** Serves `request.infer(...)`: a bound model through its scheduler, or a remote one through the client. */
  private readonly bls: BlsHandler = async (call, chain, callerCancellation) => {
    const signal = call.signal ? AbortSignal.any([call.signal, callerCancellation.signal]) : callerCancellation.signal;
    const caller = chain[chain.length - 1] ?? '';
    if (call.url) return this.remote.infer(call, signal, caller);
    const model = this.repository.get(call.modelName, call.modelVersion);
    // The simple deadlock: every execution slot of the callee is held by a caller up this very chain.
    const held = chain.filter((name) => name === model.name).length;
    const capacity = model.instances.reduce((n, i) => n + (i.maxConcurrency ?? 1), 0);
    if (held > 0 && held >= capacity) {
      throw new TritonError(
        'INVALID_ARGUMENT',
        `model '${caller}' calls '${model.name}', whose ${capacity} instance(s) are all held by its callers (${chain.join(' -> ')}); ` +
          'this would deadlock: give it more instances or do not call it from itself',
      );
    }
    try {
      const response = await this.infer({
        modelName: model.name,
        modelVersion: model.version,
        id: '',
        inputs: Object.entries(call.inputs).map(([name, tensor]) => ({ name, tensor })),
        requestedOutputs: call.requestedOutputs,
        parameters: call.parameters ?? {},
        signal,
        chain,
      });
      return Object.fromEntries(response.outputs.map((o) => [o.name, o.tensor]));
    } catch (err) {
      const e = err instanceof TritonError ? err : new TritonError('INFERENCE_FAILED', String((err as Error)?.message ?? err));
      throw new TritonError(e.code, `model '${caller}' calling '${model.name}': ${e.message}`, { cause: err });
    }
  };

  inferStream(request: InferenceRequest): AsyncIterable<InferenceResponse & { final: boolean }> {
    if (this.state !== 'running') throw new TritonError('UNAVAILABLE', 'Server is stopping and accepts no new requests');
    const model = this.repository.get(request.modelName, request.modelVersion);
    const responses = model.inferStream(request);
    this.inFlight++;
    const done = () => {
      this.inFlight--;
      if (this.inFlight === 0) for (const w of this.idleWaiters.splice(0)) w();
    };
    async function* tracked() {
      try {
        yield* responses;
      } finally {
        done();
      }
    }
    return tracked();
  }

  private onUnrecoverable(err: UnrecoverableError, model: Model): void {
    this.logger.error({ model: model.name, err: err.message }, 'unrecoverable error: stopping the server');
    this.exitCode = 1;
    for (const m of this.repository.all()) m.state = 'UNAVAILABLE';
    // Let the failing batch answer its clients before the transports close.
    setImmediate(() => void this.stop());
  }

  private async shutdown(): Promise<number> {
    const wasRunning = this.state === 'running' || this.state === 'starting';
    // Not ready first: health probes answer "not ready" and new inference is refused with UNAVAILABLE
    // while the transports stay up for the requests still in flight.
    this.state = 'stopping';
    for (const m of this.repository.all()) m.state = 'UNAVAILABLE';
    for (const t of this.transports) t.drain?.();
    if (wasRunning) {
      const drained = await this.waitIdle(this.config.exitTimeoutSeconds * 1000);
      if (!drained) {
        this.logger.warn({ inFlight: this.inFlight }, 'exit timeout reached: failing the remaining requests');
        for (const m of this.repository.all()) m.scheduler.rejectAll(new TritonError('UNAVAILABLE', 'Server stopped before the request ran'));
      }
      // Together: a transport waiting for its connections to finish holds no other back.
      await Promise.all(this.transports.map((t) => t.stopAccepting()));
      await Promise.all(this.transports.map((t) => t.forceClose()));
    }
    await Promise.allSettled(this.repository.all().flatMap((m) => m.instances.map((i) => i.close())));
    this.remote.close();
    this.sharedMemory.closeAll();
    this.tracer.close();
    this.state = 'stopped';
    this.logger.info({ exitCode: this.exitCode }, 'stopped');
    this.resolveStopped(this.exitCode);
    return this.exitCode;
  }

  private waitIdle(timeoutMs: number): Promise<boolean> {
    if (this.inFlight === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.idleWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }
}
