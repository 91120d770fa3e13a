import { TritonConfig, type TritonConfigInit } from '../config/triton-config';
import { validateOrThrow } from '../config/validate';
import { TritonError, type UnrecoverableError, serverStarting, serverStopping } from '../base/errors';
import { BlsRouter } from '../bls/bls-router';
import { InFlight } from '../base/in-flight';
import { createLogger, type Logger } from '../logging/logger';
import { parseBackendConfig } from '../config/backend-config';
import { eachAtMost, loadWithProgress, logModelTable, logLoadFailed, logServing, logStarted, logStartFailed } from '../repository/start-report';
import type { InferenceRequest, InferenceResponse } from '../model/inference';
import type { Model } from '../model/model';
import type { BoundModel } from '../model/bound-model';
import { boundModel } from '../model/model-handle';
import { buildModel, checkBinding, type BuildContext } from '../model/model-builder';
import type { BindOptions } from '../model/bind-options';
import { ModelControl, type LoadOverride } from '../model/model-control';
import { ModelRepository } from '../model/model-repository';
import { RepositoryControl } from '../repository/repository-control';
import { ResponseCache } from '../model/response-cache';
import { GrpcServer } from '../server/grpc/grpc-server';
import { FrontEnds, frontEndThreadCount, reusePortSupported } from '../server/front-end/front-ends';
import { Metrics, MetricsServer } from '../metrics/metrics';
import type { HttpServer } from '../server/http/http-server';
import { httpPortServer, openAiPortServer } from '../server/http-ports';
import type { HttpEndpoint, HttpRouter } from '../server/http/http-router';
import type { Registry } from 'prom-client';
import { headerMatcher } from '../server/forward-headers';
import { InferEntry, type InferCall, type ResponseSink } from '../server/infer-entry';
import { RestrictedApis } from '../server/restricted-api';
import { SharedMemoryManager } from '../server/shared-memory';
import { BufferPool } from '../tensor/buffer-pool';
import { logSettingsOf, updateLogSettings, type LogSettings } from '../logging/log-settings';
import { Tracer, type TraceSettings } from '../tracing/trace';
import type { RepositoryIndexEntry, ServerMetadata, Transport } from '../server/server-core';
import { applyMarkingTriggers } from '../server/marking-triggers';
import { VERSION } from '../base/version';

export type { BindOptions } from '../model/bind-options';
export type { BoundModel } from '../model/bound-model';
export type { HttpEndpoint, HttpRouter, RouteHandler, ErrorRouteHandler, RouteRequest, RouteResponse, RoutePath } from '../server/http/http-router';

/** `triton.metrics`: the Prometheus registry served on the metrics port. */
export interface MetricsEndpoint {
  /** Add metrics of your own with `registers: [triton.metrics.registry]` (prom-client). */
  readonly registry: Registry;
}

type State = 'created' | 'starting' | 'running' | 'stopping' | 'stopped';

/** Options of `run()` and `serve()`. */
export interface RunOptions {
  /** Stops the server (as `stop()` does) when it aborts; an aborted signal refuses to start. */
  signal?: AbortSignal;
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
 * The server: binds models, serves them over HTTP (and the other transports), and stops in order:
 * not-ready and refusing new inference → drain in-flight work (up to `exitTimeoutSeconds`, then fail what is
 * left) → close the transports → close the instances.
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
  readonly ports: Record<string, number> = {};
  /** The response cache (when `responseCacheByteSize` > 0), shared by the models that enable it. */
  private readonly responseCache: ResponseCache | undefined;
  /** System shared-memory regions clients registered (when `allowSharedMemory`). @internal */
  readonly sharedMemory: SharedMemoryManager;
  /** @internal */
  readonly requestBuffers: BufferPool;
  /** The trace extension: its settings, and the traces it writes to `traceFile`. */
  private readonly tracer: Tracer;

  private state: State = 'created';
  /** How each bound model was bound, to build it again when it is loaded after an unload. */
  private readonly transports: Transport[] = [];
  private stopping: Promise<number> | undefined;
  private exitCode = 0;
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
  private stopped!: Promise<number>;
  private resolveStopped!: (code: number) => void;

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
      onUnrecoverable: (err, model) => this.onUnrecoverable(err, model),
      gpuExecutionProvider: this.config.gpuExecutionProvider,
      defaultMaxBatchSize: parseBackendConfig(this.config.backendConfig).defaultMaxBatchSize,
    };
    this.entry = new InferEntry({
      repository: this.repository,
      inFlight: this.inFlight,
      refusal: () => (this.state === 'running' ? undefined : this.notRunning()),
      logger: this.logger,
      forward: {
        HTTP: headerMatcher(this.config.httpHeaderForwardPattern, 'httpHeaderForwardPattern'),
        GRPC: headerMatcher(this.config.grpcHeaderForwardPattern, 'grpcHeaderForwardPattern'),
      },
    });
    this.control = new ModelControl(this.repository, this.building, this.config, this.logger);
    this.repositories = new RepositoryControl(this.building, this.config, this.logger, { codeUploads: this.repositoryApiNeedsKey() });
    this.httpServer = httpPortServer(this, this.logger);
    // Built now, so that a bad TLS setting fails here rather than in run().
    this.grpc = this.config.allowGrpc ? new GrpcServer(this, this.logger) : undefined;
    if (this.config.allowMetrics) {
      const server = new MetricsServer(this.prometheus);
      this.addTransport({
        name: 'metrics',
        start: () => this.prometheus.start().then(() => server.listen(this.config.metricsPort, this.config.metricsAddress)),
        stopAccepting: () => {},
        forceClose: () => server.close(),
      });
    }
    this.stopped = new Promise((resolve) => (this.resolveStopped = resolve));
  }

  /** Adds a transport started by `run()` and stopped by `stop()`. */
  private addTransport(transport: Transport): void {
    if (this.state !== 'created') throw new TritonError('INVALID_CONFIG', 'transports must be added before run()');
    this.transports.push(transport);
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
    if (this.state === 'stopping' || this.state === 'stopped') throw new TritonError('UNAVAILABLE', 'cannot bind: the server is stopping');
    const { modelName, version } = checkBinding(options, this.repository);
    const model = buildModel(options, modelName, version, this.building);
    this.repository.add(model);
    this.control.bound(model, options);
    if (this.state === 'running') {
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
    if (this.state === 'stopping' || this.state === 'stopped') throw serverStopping();
    if (!this.config.modelRepository.includes(dir)) this.config.modelRepository.push(dir);
    if (this.state === 'running') await this.repositories.scan(this.config.modelControlMode !== 'explicit');
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
    if (this.state !== 'running') throw serverStopping();
    const overriding = override.config !== undefined || override.files !== undefined;
    if (this.control.isBound(name)) {
      if (overriding) {
        const key = override.config !== undefined ? 'config' : `file:${Object.keys(override.files ?? {})[0] ?? ''}`;
        throw new TritonError('UNSUPPORTED', `failed to load '${name}': '${key}' is not supported; models are bound in code, so a load can only bring a bound model back`);
      }
      return this.control.load(name, () => this.state === 'running');
    }
    if (this.config.modelRepository.length === 0 && !overriding) return this.control.load(name, () => this.state === 'running');
    return this.repositories.load(name, override);
  }

  /** @internal */
  unloadModel(name: string, unloadDependents = false): Promise<void> {
    return this.control.unload(name, unloadDependents, () => this.state === 'running');
  }

  /** Starts every transport in the background; resolves once they listen. */
  async run(options: RunOptions = {}): Promise<void> {
    if (this.state !== 'created') throw new TritonError('INVALID_CONFIG', `run() called twice (server is ${this.state})`);
    const { signal } = options;
    if (signal?.aborted) throw new TritonError('CANCELLED', 'run() was cancelled before the server started');
    // The ports' transports, decided now that users' routes are mounted (a bad setting leaves the server unstarted).
    this.transports.unshift(...this.frontEnds());
    // The signal stops the server, now or once it has started.
    signal?.addEventListener('abort', () => void this.stop(), { once: true });
    this.state = 'starting';
    if (this.config.modelControlMode === 'explicit' && !this.repositoryApiNeedsKey()) {
      this.logger.warn(
        {},
        'explicit model control with the model-repository API open to every client: anyone who can reach the HTTP or gRPC port can load and unload models; restrict it with httpRestrictedApi and grpcRestrictedProtocol (model-repository:<header>=<value>), see docs/security.md',
      );
    }
    const marking = applyMarkingTriggers({ soft: this.config.incrementalMarkingSoftTrigger, hard: this.config.incrementalMarkingHardTrigger });
    if (marking.length > 0) this.logger.debug({ v8Flags: marking }, 'V8 marking triggers set');
    try {
      for (const t of this.transports) {
        const port = await t.start();
        this.ports[t.name] = port;
        logStarted(this.logger, t.name, this.listenAddress(t.name), port);
      }
      await this.loadAtStart();
    } catch (err) {
      // Said once, with the code the process exits with; then the stop's own line.
      this.exitCode = 1;
      logStartFailed(this.logger, err, this.exitCode);
      this.state = 'running';
      await this.stop();
      throw err;
    }
    this.state = 'running';
    logServing(this.logger, this.ports, this.repositoryIndex(), this.isReady());
  }

  /**
   * Loads the bound models, then the repositories' (`modelLoadThreadCount` at once), each saying how long it
   * took; then logs the model table. A model that fails stops the start unless `exitOnError` is false (a
   * repository model only when it is true).
   *
   * @throws the first bound model's load error, or one naming every repository model that failed.
   */
  private async loadAtStart(): Promise<void> {
    const { exitOnError } = this.config;
    try {
      await eachAtMost(this.config.modelLoadThreadCount, this.repository.all(), async (m) => {
        try {
          await loadWithProgress(this.logger, m.name, [m.version], () => m.load());
        } catch (err) {
          if (exitOnError !== false) throw err;
          logLoadFailed(this.logger, m.name, (err as Error).message, m.version);
        }
      });
      if (this.config.modelRepository.length > 0) await this.repositories.start();
    } finally {
      logModelTable(this.logger, this.repositoryIndex().filter((e) => e.state !== ''));
    }
    const failed = [...this.repositories.failedReasons()];
    if (exitOnError === true && failed.length > 0) {
      const reasons = failed.map(([name, reason]) => `'${name}': ${reason}`).join('; ');
      throw new TritonError('INTERNAL', `${failed.length === 1 ? 'a model' : `${failed.length} models`} failed to load, and exit-on-error stops the start: ${reasons}`);
    }
  }

  /** The address a transport listens on, as configured. */
  private listenAddress(transport: string): string | undefined {
    const { config } = this;
    const addresses: Record<string, string> = { http: config.httpAddress, openai: config.httpAddress, grpc: config.grpcAddress, metrics: config.metricsAddress };
    return addresses[transport];
  }

  /**
   * Runs until stopped by `stop()`, SIGINT or SIGTERM, `options.signal`, or an UnrecoverableError; resolves with the exit
   * code (non-zero after an UnrecoverableError) and sets `process.exitCode` to it.
   */
  async serve(options: RunOptions = {}): Promise<number> {
    // Listened for before the start, so that a signal as soon as the server says it serves stops it in order (a
    // signal with no listener ends the process at once). One during the start stops the server once the start is
    // over; a second one, unheard, ends the process.
    let starting: Promise<void> | undefined;
    const onSignal = (signal: NodeJS.Signals) => {
      this.logger.info({ signal }, 'stopping on signal');
      void (starting ?? Promise.resolve()).catch(() => undefined).then(() => this.stop());
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    try {
      starting = this.run(options);
      await starting;
      const code = await this.stopped;
      process.exitCode = code;
      return code;
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  }

  /** Stops the server in order; idempotent. Resolves with the exit code. */
  stop(): Promise<number> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  /** True when every port that serves the model repository API (load, unload) asks for a key. */
  private repositoryApiNeedsKey(): boolean {
    const http = !this.config.allowHttp || RestrictedApis.parse(this.config.httpRestrictedApi, 'httpRestrictedApi').restriction('model-repository') !== undefined;
    const grpc = !this.config.allowGrpc || RestrictedApis.parse(this.config.grpcRestrictedProtocol, 'grpcRestrictedProtocol').restriction('model-repository') !== undefined;
    return http && grpc;
  }

  /**
   * The HTTP, OpenAI and gRPC transports: on `httpThreadCount` front-end threads where there are more than one,
   * else on this thread. Routes mounted on `http.router` are served on this thread only, so with them an automatic
   * thread count stays at one (and an explicit one above one is refused).
   */
  private frontEnds(): Transport[] {
    const { config } = this;
    const openai = config.openai && config.openaiPort >= 0;
    let threads = config.allowHttp || config.allowGrpc || openai ? frontEndThreadCount(config) : 1;
    if (threads > 1 && this.httpServer.router.stack.length > 0) {
      if (config.httpThreadCount > 1) {
        throw new TritonError('INVALID_CONFIG', `routes mounted on http.router are served on the core thread only; set httpThreadCount to 1 (it is ${config.httpThreadCount})`);
      }
      this.logger.info({}, 'routes are mounted on http.router: the ports are served on the core thread (httpThreadCount 1)');
      threads = 1;
    }
    if (threads > 1 && !reusePortSupported()) {
      this.logger.warn({ httpThreadCount: threads, node: process.versions.node, platform: process.platform }, 'this platform cannot listen on one port from several threads (reusePort): the core thread serves the ports');
      threads = 1;
    }
    if (threads > 1) return new FrontEnds({ core: this, repository: this.repository, config, logger: this.logger }, threads).transports();
    const transports: Transport[] = [];
    if (config.allowHttp) {
      transports.push({
        name: 'http',
        start: () => this.httpServer.listen(config.httpPort, config.httpAddress),
        drain: () => this.httpServer.drain(),
        stopAccepting: () => this.httpServer.stopAccepting(),
        forceClose: () => this.httpServer.forceClose(),
      });
    }
    if (openai) transports.push(openAiPortServer(this, this.logger));
    if (this.grpc) transports.push(this.grpc);
    return transports;
  }

  /** Resolves with the exit code once the server has stopped, however it stopped. */
  get done(): Promise<number> {
    return this.stopped;
  }

  /** Live: started and not yet stopped (`GET /v2/health/live`). */
  isLive(): boolean {
    return this.state === 'running' || this.state === 'stopping';
  }

  /** Ready: running, and with `strictReadiness` every model ready (`GET /v2/health/ready`). */
  isReady(): boolean {
    if (this.state !== 'running') return false;
    // Models unloaded on purpose do not hold the server back.
    if (!this.config.strictReadiness) return true;
    return this.repositories.failed.size === 0 && this.repository.all().every((m) => m.ready || m.unloaded);
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
  modelStatistics(name?: string, version?: string): Record<string, unknown>[] {
    const models = name ? [this.repository.get(name, version)] : this.repository.all().filter((m) => m.ready);
    for (const m of models) {
      if (m.state !== 'READY') throw new TritonError('MODEL_NOT_FOUND', `requested model '${m.name}' is not available`);
    }
    return models.map((m) => m.statistics.toJson(m.name, m.version));
  }

  /** Why inference is refused outside 'running': still starting, or stopping. */
  private notRunning(): TritonError {
    return this.state === 'starting' || this.state === 'created' ? serverStarting() : serverStopping();
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
    if (this.state !== 'running') throw this.notRunning();
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
    this.repositories.close();
    for (const m of this.repository.all()) m.state = 'UNAVAILABLE';
    for (const t of this.transports) t.drain?.();
    if (wasRunning) {
      const drained = await this.inFlight.idle(this.config.exitTimeoutSeconds * 1000);
      if (!drained) {
        this.logger.warn({ inFlight: this.inFlight.size }, 'exit timeout reached: failing the remaining requests');
        for (const m of this.repository.all()) m.scheduler.rejectAll(new TritonError('UNAVAILABLE', 'Server stopped before the request ran'));
      }
      // Together: a transport waiting for its connections to finish holds no other back.
      await Promise.all(this.transports.map((t) => t.stopAccepting()));
      await Promise.all(this.transports.map((t) => t.forceClose()));
    }
    await Promise.allSettled(this.repository.all().flatMap((m) => m.instances.map((i) => i.close())));
    this.repositories.removeUploads();
    this.bls.close();
    this.sharedMemory.closeAll();
    await this.tracer.close();
    this.state = 'stopped';
    // A server that never started (a binding failed before run()) has nothing to report stopping.
    if (wasRunning) this.logger.info({ exitCode: this.exitCode }, 'stopped');
    this.resolveStopped(this.exitCode);
    return this.exitCode;
  }

}
