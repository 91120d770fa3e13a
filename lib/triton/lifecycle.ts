import type { TritonConfig } from '../config/triton-config';
import { TritonError, type UnrecoverableError, serverStarting, serverStopping } from '../base/errors';
import type { InFlight } from '../base/in-flight';
import type { Logger } from '../logging/logger';
import type { Model } from '../model/model';
import type { ModelRepository } from '../model/model-repository';
import type { RepositoryIndexEntry } from '../model/model-control';
import type { RepositoryControl } from '../repository/repository-control';
import { eachAtMost, loadWithProgress, logModelTable, logLoadFailed, logServing, logStarted, logStartFailed } from '../repository/start-report';
import { IdleCollection } from '../server/idle-collection';
import { applyMarkingTriggers } from '../server/marking-triggers';
import type { Transport } from '../server/server-core';
import { repositoryApiNeedsKey } from './server-ports';

const MB = 1024 * 1024;

/** Where the server is in its life. */
export type ServerState = 'created' | 'starting' | 'running' | 'stopping' | 'stopped';

/** Options of `run()` and `serve()`. */
export interface RunOptions {
  /** Stops the server (as `stop()` does) when it aborts; an aborted signal refuses to start. */
  signal?: AbortSignal;
}

/** The server's parts as its start and its stop see them. */
export interface LifecycleParts {
  readonly config: TritonConfig;
  readonly logger: Logger;
  /** The models. */
  readonly repository: ModelRepository;
  /** The models of the model repositories on disk. */
  readonly repositories: RepositoryControl;
  /** Requests in flight, drained by the stop. */
  readonly inFlight: InFlight;
  /** The ports' transports, decided when the server starts (users' routes are mounted by then). */
  portTransports(): Transport[];
  /** The repository index, as the start reports it. */
  repositoryIndex(): RepositoryIndexEntry[];
  /** Releases what outlives the models (uploads, BLS, shared memory, the trace file), last in the stop. */
  release(): Promise<void>;
}

/**
 * The server's life: it starts its transports and loads its models (`run`), runs until a signal (`serve`), and
 * stops in order (`stop`): not-ready and refusing new inference → drain in-flight work (up to
 * `exitTimeoutSeconds`, then fail what is left) → close the transports → close the instances.
 */
export class ServerLifecycle {
  /** Ports actually bound, by transport name, once running. */
  readonly ports: Record<string, number> = {};
  private current: ServerState = 'created';
  private readonly transports: Transport[] = [];
  private stopping: Promise<number> | undefined;
  private exitCode = 0;
  private readonly stopped: Promise<number>;
  private resolveStopped!: (code: number) => void;
  /** This thread's (the core thread's) collection when it goes quiet after a burst; the front-end threads run their own. */
  private idleCollection: IdleCollection | undefined;

  constructor(private readonly parts: LifecycleParts) {
    this.stopped = new Promise((resolve) => (this.resolveStopped = resolve));
  }

  get state(): ServerState {
    return this.current;
  }

  /** Resolves with the exit code once the server has stopped, however it stopped. */
  get done(): Promise<number> {
    return this.stopped;
  }

  /** Moves to `state`; readiness follows it, and what front-end threads publish of it follows at once. */
  private enter(state: ServerState): void {
    this.current = state;
    this.parts.repository.readinessChanged();
  }

  /** Adds a transport started by `run()` and stopped by `stop()`. */
  addTransport(transport: Transport): void {
    if (this.current !== 'created') throw new TritonError('INVALID_CONFIG', 'transports must be added before run()');
    this.transports.push(transport);
  }

  /** Live: started and not yet stopped. */
  isLive(): boolean {
    return this.current === 'running' || this.current === 'stopping';
  }

  /** Ready: running, and with `strictReadiness` every model ready. */
  isReady(): boolean {
    if (this.current !== 'running') return false;
    // Models unloaded on purpose do not hold the server back.
    if (!this.parts.config.strictReadiness) return true;
    return this.parts.repositories.failed.size === 0 && this.parts.repository.all().every((m) => m.ready || m.unloaded);
  }

  /** Why inference is refused outside 'running': still starting, or stopping; undefined while running. */
  refusal(): TritonError | undefined {
    if (this.current === 'running') return undefined;
    return this.current === 'starting' || this.current === 'created' ? serverStarting() : serverStopping();
  }

  /** Starts every transport in the background; resolves once they listen. */
  async run(options: RunOptions = {}): Promise<void> {
    const { config, logger } = this.parts;
    if (this.current !== 'created') throw new TritonError('INVALID_CONFIG', `run() called twice (server is ${this.current})`);
    const { signal } = options;
    if (signal?.aborted) throw new TritonError('CANCELLED', 'run() was cancelled before the server started');
    // The ports' transports, decided now that users' routes are mounted (a bad setting leaves the server unstarted).
    this.transports.unshift(...this.parts.portTransports());
    // The signal stops the server, now or once it has started.
    signal?.addEventListener('abort', () => void this.stop(), { once: true });
    this.enter('starting');
    if (config.modelControlMode === 'explicit' && !repositoryApiNeedsKey(config)) {
      logger.warn(
        {},
        'explicit model control with the model-repository API open to every client: anyone who can reach the HTTP or gRPC port can load and unload models; restrict it with httpRestrictedApi and grpcRestrictedProtocol (model-repository:<header>=<value>), see docs/security.md',
      );
    }
    const marking = applyMarkingTriggers({ soft: config.incrementalMarkingSoftTrigger, hard: config.incrementalMarkingHardTrigger });
    if (marking.length > 0) logger.debug({ v8Flags: marking }, 'V8 marking triggers set');
    try {
      for (const t of this.transports) {
        const port = await t.start();
        this.ports[t.name] = port;
        logStarted(logger, t.name, this.listenAddress(t.name), port);
      }
      await this.loadAtStart();
    } catch (err) {
      // Said once, with the code the process exits with; then the stop's own line.
      this.exitCode = 1;
      logStartFailed(logger, err, this.exitCode);
      this.enter('running');
      await this.stop();
      throw err;
    }
    this.enter('running');
    this.idleCollection = new IdleCollection(config.idleCollectionMegabytes * MB, () => this.parts.inFlight.size);
    this.idleCollection.start();
    logServing(logger, this.ports, this.parts.repositoryIndex(), this.isReady());
  }

  /**
   * Loads the bound models, then the repositories' (`modelLoadThreadCount` at once), each saying how long it
   * took; then logs the model table. A model that fails stops the start unless `exitOnError` is false (a
   * repository model only when it is true).
   *
   * @throws the first bound model's load error, or one naming every repository model that failed.
   */
  private async loadAtStart(): Promise<void> {
    const { config, logger, repository, repositories } = this.parts;
    const { exitOnError } = config;
    try {
      await eachAtMost(config.modelLoadThreadCount, repository.all(), async (m) => {
        try {
          await loadWithProgress(logger, m.name, [m.version], () => m.load());
        } catch (err) {
          if (exitOnError !== false) throw err;
          logLoadFailed(logger, m.name, (err as Error).message, m.version);
        }
      });
      if (config.modelRepository.length > 0) await repositories.start();
    } finally {
      logModelTable(logger, this.parts.repositoryIndex().filter((e) => e.state !== ''));
    }
    const failed = [...repositories.failedReasons()];
    if (exitOnError === true && failed.length > 0) {
      const reasons = failed.map(([name, reason]) => `'${name}': ${reason}`).join('; ');
      throw new TritonError('INTERNAL', `${failed.length === 1 ? 'a model' : `${failed.length} models`} failed to load, and exit-on-error stops the start: ${reasons}`);
    }
  }

  /** The address a transport listens on, as configured. */
  private listenAddress(transport: string): string | undefined {
    const { config } = this.parts;
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
      this.parts.logger.info({ signal }, 'stopping on signal');
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

  /** A model's callable threw UnrecoverableError: every model turns unavailable and the server stops, exit code 1. */
  unrecoverable(err: UnrecoverableError, model: Model): void {
    this.parts.logger.error({ model: model.name, err: err.message }, 'unrecoverable error: stopping the server');
    this.exitCode = 1;
    for (const m of this.parts.repository.all()) m.state = 'UNAVAILABLE';
    // Let the failing batch answer its clients before the transports close.
    setImmediate(() => void this.stop());
  }

  private async shutdown(): Promise<number> {
    const { config, logger, repository, repositories, inFlight } = this.parts;
    const wasRunning = this.current === 'running' || this.current === 'starting';
    // Not ready first: health probes answer "not ready" and new inference is refused with UNAVAILABLE
    // while the transports stay up for the requests still in flight.
    this.enter('stopping');
    this.idleCollection?.stop();
    repositories.close();
    for (const m of repository.all()) m.state = 'UNAVAILABLE';
    for (const t of this.transports) t.drain?.();
    if (wasRunning) {
      const drained = await inFlight.idle(config.exitTimeoutSeconds * 1000);
      if (!drained) {
        logger.warn({ inFlight: inFlight.size }, 'exit timeout reached: failing the remaining requests');
        for (const m of repository.all()) m.scheduler.rejectAll(new TritonError('UNAVAILABLE', 'Server stopped before the request ran'));
      }
      // Together: a transport waiting for its connections to finish holds no other back.
      await Promise.all(this.transports.map((t) => t.stopAccepting()));
      await Promise.all(this.transports.map((t) => t.forceClose()));
    }
    await Promise.allSettled(repository.all().flatMap((m) => m.instances.map((i) => i.close())));
    await this.parts.release();
    this.enter('stopped');
    // A server that never started (a binding failed before run()) has nothing to report stopping.
    if (wasRunning) logger.info({ exitCode: this.exitCode }, 'stopped');
    this.resolveStopped(this.exitCode);
    return this.exitCode;
  }
}
