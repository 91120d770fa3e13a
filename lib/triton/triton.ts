import { TritonConfig, type TritonConfigInit } from '../config/triton-config';
import { validateOrThrow } from '../config/validate';
import { TritonError, serverStopping } from '../base/errors';
import { BlsRouter } from '../bls/bls-router';
import { InFlight } from '../base/in-flight';
import { createLogger, type Logger } from '../logging/logger';
import { parseBackendConfig } from '../config/backend-config';
import type { InferenceRequest, InferenceResponse } from '../model/inference';
import type { BoundModel } from '../model/bound-model';
import type { Model } from '../model/model';
import { boundModel } from '../model/model-handle';
import { buildModel, checkBinding, type BuildContext } from '../model/model-builder';
import type { BindOptions } from '../model/bind-options';
import { ModelControl, type LoadOverride } from '../model/model-control';
import { ModelRepository } from '../model/model-repository';
import { chatTemplateOf, type ChatMessage } from '../model/chat-template';
import { RepositoryControl } from '../repository/repository-control';
import { ResponseCache } from '../model/response-cache';
import { GrpcServer } from '../server/grpc/grpc-server';
import { Metrics, MetricsServer } from '../metrics/metrics';
import type { HttpServer } from '../server/http/http-server';
import { httpPortServer } from '../server/http-ports';
import type { HttpEndpoint, HttpRouter } from '../server/http/http-router';
import type { Registry } from 'prom-client';
import { headerMatcher } from '../server/forward-headers';
import { InferEntry, type InferCall, type ResponseSink } from '../server/infer-entry';
import { SharedMemoryManager } from '../server/shared-memory';
import { BufferPool } from '../tensor/buffer-pool';
import { logSettingsOf, updateLogSettings, type LogSettings } from '../logging/log-settings';
import { Tracer, type TraceSettings } from '../tracing/trace';
import type { RepositoryIndexEntry, ServerMetadata } from '../server/server-core';
import { VERSION } from '../base/version';
import { ServerLifecycle, type RunOptions } from './lifecycle';
import { portTransports, repositoryApiNeedsKey } from './server-ports';

export type { RunOptions } from './lifecycle';
export type { BindOptions } from '../model/bind-options';
export type { BoundModel } from '../model/bound-model';
export type { HttpEndpoint, HttpRouter, RouteHandler, ErrorRouteHandler, RouteRequest, RouteResponse, RoutePath } from '../server/http/http-router';

/** `triton.metrics`: the Prometheus registry served on the metrics port. */
export interface MetricsEndpoint {
  /** Add metrics of your own with `registers: [triton.metrics.registry]` (prom-client). */
  readonly registry: Registry;
}

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
 * The server: binds models, serves them over HTTP (and the other transports), and stops in order
 * (`ServerLifecycle`): not-ready and refusing new inference → drain in-flight work (up to `exitTimeoutSeconds`,
 * then fail what is left) → close the transports → close the instances.
 *
 * Its public type is what the package's declarations keep (docs/api.md); the members tagged internal serve the
 * transports (the `ServerCore` each is given) and the tests, and are left out of them (`stripInternal`).
 */
export class Triton implements AsyncDisposable {
  /** The settings in effect: the constructor's, then `TSTRITON_*` variables, then the defaults. */
  readonly config: TritonConfig;
  /** @internal */
  readonly repository = new ModelRepository();
  private readonly logger: Logger;
  /** The HTTP endpoint. */
  private readonly httpServer: HttpServer;
  /** Prometheus metrics. */
  private readonly prometheus: Metrics;
  /** Ports actually bound, by transport name (`http`, `grpc`, `metrics`, `openai`), once running. */
  readonly ports: Record<string, number>;
  /** The response cache (when `responseCacheByteSize` > 0), shared by the models that enable it. */
  private readonly responseCache: ResponseCache | undefined;
  /** System shared-memory regions clients registered (when `allowSharedMemory`). @internal */
  readonly sharedMemory: SharedMemoryManager;
  /** @internal */
  readonly requestBuffers: BufferPool;
  /** The trace extension: its settings, and the traces it writes to `traceFile`. */
  private readonly tracer: Tracer;

  /** Its start, its state and its orderly stop. */
  private readonly lifecycle: ServerLifecycle;
  /** Requests in flight, for an orderly stop. */
  private readonly inFlight = new InFlight();
  /** Serves the calls models make to other models. */
  private readonly bls = new BlsRouter(this.repository, (request) => this.infer(request));
  /** What models are built with. */
  private readonly building: BuildContext;
  /** The repository extension's index, load and unload. */
  private readonly control: ModelControl;
  /** The models of the model repositories on disk (`modelRepository`). */
  private readonly repositories: RepositoryControl;
  /** Where every request from a transport enters. */
  private readonly entry: InferEntry;
  /** The gRPC endpoint when it is served on this thread. */
  private readonly grpc: GrpcServer | undefined;

  constructor(config?: TritonConfig | TritonConfigInit) {
    this.config = config instanceof TritonConfig ? config : TritonConfig.fromEnv(process.env, config);
    validateOrThrow(this.config, 'TritonConfig');
    this.logger = createLogger(this.config.logLevel, this.config.logFormat);
    this.responseCache = this.config.responseCacheByteSize > 0 ? new ResponseCache(this.config.responseCacheByteSize) : undefined;
    this.sharedMemory = new SharedMemoryManager(this.config.allowSharedMemory);
    this.requestBuffers = new BufferPool(this.config.requestBufferPoolByteSize);
    this.tracer = new Tracer(this.config.traceFile, this.config.traceConfig);
    this.prometheus = new Metrics(this.repository, this.responseCache, this.config);
    this.building = {
      repository: this.repository,
      responseCache: this.responseCache,
      tracer: this.tracer,
      observeLatencies: this.prometheus.observeLatencies,
      customMetrics: (model, version) => this.prometheus.custom.forModel(model, version),
      bls: this.bls.handle,
      onUnrecoverable: (err, model) => this.lifecycle.unrecoverable(err, model),
      gpuExecutionProvider: this.config.gpuExecutionProvider,
      defaultMaxBatchSize: parseBackendConfig(this.config.backendConfig).defaultMaxBatchSize,
    };
    this.entry = new InferEntry({
      repository: this.repository,
      inFlight: this.inFlight,
      refusal: () => this.lifecycle.refusal(),
      logger: this.logger,
      forward: {
        HTTP: headerMatcher(this.config.httpHeaderForwardPattern, 'httpHeaderForwardPattern'),
        GRPC: headerMatcher(this.config.grpcHeaderForwardPattern, 'grpcHeaderForwardPattern'),
      },
    });
    this.control = new ModelControl(this.repository, this.building, this.config, this.logger);
    this.repositories = new RepositoryControl(this.building, this.config, this.logger, { codeUploads: repositoryApiNeedsKey(this.config) });
    this.httpServer = httpPortServer(this, this.logger);
    // Built now, so that a bad TLS setting fails here rather than in run().
    this.grpc = this.config.allowGrpc ? new GrpcServer(this, this.logger) : undefined;
    this.lifecycle = new ServerLifecycle({
      config: this.config,
      logger: this.logger,
      repository: this.repository,
      repositories: this.repositories,
      inFlight: this.inFlight,
      portTransports: () => portTransports({ core: this, repository: this.repository, config: this.config, logger: this.logger, refusal: () => this.lifecycle.refusal(), httpServer: this.httpServer, grpc: this.grpc }),
      repositoryIndex: () => this.repositoryIndex(),
      release: async () => {
        this.repositories.removeUploads();
        this.bls.close();
        this.sharedMemory.closeAll();
        await this.tracer.close();
      },
    });
    this.ports = this.lifecycle.ports;
    if (this.config.allowMetrics) {
      const server = new MetricsServer(this.prometheus);
      this.lifecycle.addTransport({
        name: 'metrics',
        start: () => this.prometheus.start().then(() => server.listen(this.config.metricsPort, this.config.metricsAddress)),
        stopAccepting: () => {},
        forceClose: () => server.close(),
      });
    }
  }

  /** The HTTP port's router, for routes of your own beside the KServe v2 API (an express `Router`). */
  get http(): HttpEndpoint {
    return { router: this.httpServer.router as unknown as HttpRouter };
  }

  /** The Prometheus registry served on the metrics port, for metrics of your own. */
  get metrics(): MetricsEndpoint {
    return this.prometheus;
  }

  /**
   * Binds a model. Every invalid option is rejected here with a message naming the field. Returns a read-only
   * handle on the bound model version (its name, version, state and generated config).
   */
  bind(options: BindOptions): BoundModel {
    if (this.lifecycle.state === 'stopping' || this.lifecycle.state === 'stopped') throw new TritonError('UNAVAILABLE', 'cannot bind: the server is stopping');
    const { modelName, version } = checkBinding(options, this.repository);
    const model = buildModel(options, modelName, version, this.building);
    this.repository.add(model);
    this.control.bound(model, options);
    if (this.lifecycle.state === 'running') {
      model.load().catch((err: Error) => this.logger.error({ model: modelName, err: err.message }, 'model failed to load'));
    }
    return boundModel(model, this.repository);
  }

  /**
   * Serves the models of a Triton-layout model repository (`<model>/config.pbtxt`, `<model>/<version>/model.onnx`)
   * beside the bound ones, as `modelRepository` does: before `run()`, they load with the server; after, at once
   * (all of them, except in `explicit` mode, where they wait for a load request).
   */
  async loadRepository(dir: string): Promise<void> {
    if (this.lifecycle.state === 'stopping' || this.lifecycle.state === 'stopped') throw serverStopping();
    if (!this.config.modelRepository.includes(dir)) this.config.modelRepository.push(dir);
    if (this.lifecycle.state === 'running') await this.repositories.scan(this.config.modelControlMode !== 'explicit');
  }

  /** @internal */
  repositoryIndex(readyOnly = false): RepositoryIndexEntry[] {
    const entries = this.control.index(readyOnly);
    if (readyOnly) return entries;
    const loaded = new Set(this.repository.all().map((m) => m.name));
    // A model whose last load failed while an earlier load still serves shows that load's reason.
    const marked = entries.map((e) => {
      const stale = e.reason === undefined ? this.repositories.staleReason(e.name) : undefined;
      return stale === undefined ? e : { ...e, reason: `the last load failed, the version loaded before still serves: ${stale}` };
    });
    return [...marked, ...this.repositories.entries(loaded)].sort((a, b) => a.name.localeCompare(b.name) || Number(a.version) - Number(b.version));
  }

  /**
   * Loads a model: a bound one again from its binding; a repository one from its folder, read again (or from
   * the request's config and files, as Triton's load API).
   */
  /** @internal */
  async loadModel(name: string, override: LoadOverride = {}): Promise<void> {
    this.control.requireExplicit();
    if (this.lifecycle.state !== 'running') throw serverStopping();
    const overriding = override.config !== undefined || override.files !== undefined;
    if (this.control.isBound(name)) {
      if (overriding) {
        const key = override.config !== undefined ? 'config' : `file:${Object.keys(override.files ?? {})[0] ?? ''}`;
        throw new TritonError('UNSUPPORTED', `failed to load '${name}': '${key}' is not supported; models are bound in code, so a load can only bring a bound model back`);
      }
      return this.control.load(name, () => this.lifecycle.state === 'running');
    }
    if (this.config.modelRepository.length === 0 && !overriding) return this.control.load(name, () => this.lifecycle.state === 'running');
    return this.repositories.load(name, override);
  }

  /** @internal */
  unloadModel(name: string, unloadDependents = false): Promise<void> {
    return this.control.unload(name, unloadDependents, () => this.lifecycle.state === 'running');
  }

  /** Starts every transport in the background; resolves once they listen. */
  run(options: RunOptions = {}): Promise<void> {
    return this.lifecycle.run(options);
  }

  /**
   * Runs until stopped by `stop()`, SIGINT or SIGTERM, `options.signal`, or an UnrecoverableError; resolves with the exit
   * code (non-zero after an UnrecoverableError) and sets `process.exitCode` to it.
   */
  serve(options: RunOptions = {}): Promise<number> {
    return this.lifecycle.serve(options);
  }

  /** Stops the server in order; idempotent. Resolves with the exit code. */
  stop(): Promise<number> {
    return this.lifecycle.stop();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  /** Resolves with the exit code once the server has stopped, however it stopped. */
  get done(): Promise<number> {
    return this.lifecycle.done;
  }

  /** Live: started and not yet stopped (`GET /v2/health/live`). */
  isLive(): boolean {
    return this.lifecycle.isLive();
  }

  /** Ready: running, and with `strictReadiness` every model ready (`GET /v2/health/ready`). */
  isReady(): boolean {
    return this.lifecycle.isReady();
  }

  /** @internal */
  metadata(): ServerMetadata {
    const extensions = this.config.allowSharedMemory ? [...EXTENSIONS, 'system_shared_memory'] : [...EXTENSIONS];
    return { name: 'tstriton', version: this.config.serverVersion ?? VERSION, extensions };
  }

  /** @internal */
  traceSettings(model?: string, update?: Readonly<Record<string, unknown>>): TraceSettings {
    // An unknown model is refused as in inference requests.
    const name = model === undefined ? undefined : this.repository.get(model).name;
    return this.tracer.settings(name, update);
  }

  /** @internal */
  logSettings(update?: Readonly<Record<string, unknown>>): LogSettings {
    return update ? updateLogSettings(this.logger, update) : logSettingsOf(this.logger);
  }

  /** @internal */
  chatPrompt(modelName: string, messages: () => readonly ChatMessage[]): string {
    return chatTemplateOf(this.repository.get(modelName))(messages());
  }

  /** @internal */
  modelStatistics(name?: string, version?: string): Record<string, unknown>[] {
    const models = name ? [this.statisticsOf(name, version)] : this.repository.all().filter((m) => m.ready);
    return models.map((m) => m.statistics.toJson(m.name, m.version));
  }

  /** The ready model version whose statistics a request names, refused in the words of Triton's statistics. */
  private statisticsOf(name: string, version?: string): Model {
    try {
      return this.repository.get(name, version);
    } catch (err) {
      // A name never known keeps the lookup's answer; a known one with nothing ready to serve is "not available".
      if (!(err instanceof TritonError) || err.code === 'MODEL_NOT_FOUND') throw err;
      if (!version) throw new TritonError('MODEL_NOT_FOUND', `requested model '${name}' is not available`);
      throw new TritonError('MODEL_NOT_FOUND', `requested model version is not available for model '${name}'`);
    }
  }

  /**
   * The core's entry for the transports: one request from the lookup of its model to its last response
   * (`InferEntry`).
   * @internal
   */
  inferAsync(call: InferCall, sink: ResponseSink): Promise<void> {
    return this.entry.infer(call, sink);
  }

  /** Runs one request in the process (a BLS call, a test); one response, as from a non-decoupled model. @internal */
  infer(request: InferenceRequest): Promise<InferenceResponse> {
    let response: InferenceResponse | undefined;
    const call: InferCall = { modelName: request.modelName, modelVersion: request.modelVersion, unaryEndpoint: 'infer()', decode: () => request };
    return this.entry.infer(call, (r) => void (response = r)).then(() => response as InferenceResponse);
  }

  /** Runs one request of a decoupled model in the process; its responses as they come, the last one final. @internal */
  inferStream(request: InferenceRequest): AsyncIterable<InferenceResponse & { final: boolean }> {
    const refused = this.lifecycle.refusal();
    if (refused) throw refused;
    const responses = this.repository.get(request.modelName, request.modelVersion).inferStream(request);
    const inFlight = this.inFlight;
    inFlight.add();
    async function* tracked() {
      try {
        yield* responses;
      } finally {
        inFlight.done();
      }
    }
    return tracked();
  }
}
