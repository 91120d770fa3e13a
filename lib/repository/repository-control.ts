import * as fs from 'node:fs';
import * as path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { TritonConfig } from '../config/triton-config';
import type { ModelConfigJson } from '../config/triton-model-config';
import { TritonError } from '../base/errors';
import type { Logger } from '../logging/logger';
import type { Model } from '../model/model';
import { buildModel, type BuildContext } from '../model/model-builder';
import type { LoadOverride, RepositoryIndexEntry } from '../model/model-control';
import { planLoad, removeUpload, type Plan, type PlanSettings } from './load-plan';
import { readModelFolder, scanRepositories, type ModelFolder } from './model-folder';
import { isModelName, refuseModelName } from './repository-paths';
import { loadWithProgress, logLoadFailed } from './start-report';

/** What was last loaded for a model name, to tell what changed. */
interface LoadedState {
  config: ModelConfigJson | undefined;
  versionDigests: ReadonlyMap<number, string>;
  /** True when the model came from a load request's config or files rather than its folder alone. */
  fromRequest: boolean;
  /** The temporary folder a load request's files were written to, removed once the model no longer uses it. */
  uploadDir: string | undefined;
}

/** What the repositories accept from a load request beyond a model's name. */
export interface LoadPolicy {
  /**
   * Whether a load request may send a script model's code (`file:` parameters of a `backend: "tstriton"`
   * model): only when every port that serves the load API asks for a key (a restricted `model-repository`).
   */
  readonly codeUploads: boolean;
}

/**
 * The models of the model repositories on disk, in Triton's layout: which exist, loading them (all of them,
 * the `loadModel` ones, or on request), loading them again when their files change, and the reasons of those
 * that failed. Loaded versions live in the server's model repository beside the bound models; load, unload
 * and readiness then work on them as on any model.
 */
export class RepositoryControl {
  /** Model folders found by the last scan, by name. */
  private folders = new Map<string, ModelFolder>();
  /** Why a model failed to load, by name, until it loads. */
  private readonly failures = new Map<string, string>();
  /**
   * The versions a model's load failed to build, its config being valid (code or a file that did not load), by
   * name, until it loads or is forgotten: what Triton's model life cycle keeps of it, unavailable.
   */
  private readonly builtAndFailed = new Map<string, readonly string[]>();
  private readonly loaded = new Map<string, LoadedState>();
  /** One load or poll at a time: a load runs after the one before it. */
  private queue: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly building: BuildContext,
    private readonly config: TritonConfig,
    private readonly logger: Logger,
    private readonly policy: LoadPolicy = { codeUploads: false },
  ) {}

  /**
   * Scans the repositories and loads what the model control mode says: every model (`none`, `poll`), or the
   * `loadModel` ones (`explicit`; `*` for all). A model that fails is logged and left out with its reason;
   * the others serve. `poll` then looks again every `repositoryPollSeconds`.
   */
  async start(): Promise<void> {
    const { folders, unreadable } = scanRepositories(this.config.modelRepository);
    this.folders = folders;
    const mode = this.config.modelControlMode;
    const wanted = mode === 'explicit' && !this.config.loadModel.includes('*') ? this.config.loadModel : [...folders.keys(), ...unreadable.keys()];
    for (const name of wanted) {
      if (this.folders.has(name)) continue;
      this.recordFailure(name, !isModelName(name) ? refuseModelName(name).message : (unreadable.get(name) ?? 'model not found in any model repository'));
    }
    await this.loadAll(wanted.filter((n) => this.folders.has(n)));
    if (mode === 'poll') this.schedulePoll();
  }

  /**
   * Scans the repositories again (one was added) and, with `loadNew`, loads the models found for the first
   * time.
   */
  async scan(loadNew: boolean): Promise<void> {
    const { folders: found, unreadable } = scanRepositories(this.config.modelRepository);
    const added = [...found.keys()].filter((n) => !this.folders.has(n));
    this.folders = found;
    for (const [name, reason] of unreadable) this.recordFailure(name, reason);
    if (loadNew) await this.loadAll(added);
    if (this.config.modelControlMode === 'poll' && this.timer === undefined) this.schedulePoll();
  }

  /** Stops polling; the models are stopped with the server's others. */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
  }

  /**
   * Loads a model from its folder (read again from disk), or from a request's config and files: new and
   * changed versions are built and loaded, then take over from the old ones, which drain and close;
   * versions the policy no longer serves are unloaded. A failure leaves what was serving as it was.
   */
  load(name: string, override: LoadOverride = {}): Promise<void> {
    // Refused before anything is read, written or recorded: the name would lead out of the repository.
    if (!isModelName(name)) return Promise.reject(refuseModelName(name));
    return this.serialized(() => this.loadNow(name, override));
  }

  /** Why the last load of `name` failed while an earlier load of it still serves; undefined otherwise. */
  staleReason(name: string): string | undefined {
    return this.loaded.has(name) ? this.failures.get(name) : undefined;
  }

  /** Removes the folders that load requests' files were written to (at stop, once the models have closed). */
  removeUploads(): void {
    for (const state of this.loaded.values()) removeUpload(state.uploadDir);
  }

  /** Index entries for repository models that have no loaded version: never loaded, or failed before building. */
  entries(loadedNames: ReadonlySet<string>): RepositoryIndexEntry[] {
    const names = new Set([...this.folders.keys(), ...this.failures.keys()]);
    return [...names]
      .filter((n) => !loadedNames.has(n))
      .sort()
      .map((name) => {
        const reason = this.failures.get(name);
        return reason !== undefined ? { name, version: '', state: 'UNAVAILABLE', reason } : { name, version: '', state: '' };
      });
  }

  /**
   * Names of models whose last load failed and that serve no earlier load: they keep the server not ready under
   * strict readiness; those whose versions failed to build are known to lookups (`failuresChanged`).
   */
  get failed(): ReadonlySet<string> {
    return new Set([...this.failures.keys()].filter((n) => !this.loaded.has(n)));
  }

  /** The models of `failed`, each with why its load failed. */
  failedReasons(): Map<string, string> {
    return new Map([...this.failed].map((n) => [n, this.failures.get(n) as string]));
  }

  /** Forgets a model that was unloaded and whose folder is gone. */
  private forget(name: string): void {
    this.loaded.delete(name);
    this.failures.delete(name);
    this.builtAndFailed.delete(name);
    this.failuresChanged();
  }

  /**
   * Whether the index lists `name`: a folder of it is in a repository (as last read), it is or was loaded, or it
   * already failed for a reason the index shows (a `loadModel` name or a folder that could not be read, at start).
   */
  private listed(name: string): boolean {
    return this.folders.has(name) || this.loaded.has(name) || this.failures.has(name);
  }

  private recordFailure(name: string, reason: string): void {
    this.failures.set(name, reason);
    this.failuresChanged();
    logLoadFailed(this.logger, name, reason);
  }

  /**
   * Tells the server's models which of the names that failed to load and serve nothing (`failed`) got as far as
   * building versions: as in Triton, whose model life cycle holds only models with a valid config, lookups of those
   * answer as for a known model whose versions are unavailable, and of the others (a config that is not valid, a
   * folder that cannot be read) as for a name not known. Called where `failures` or `loaded` change, before the
   * load that changed them answers, so that no thread answers from the state before it.
   */
  private failuresChanged(): void {
    const loads = new Map<string, readonly string[]>();
    for (const name of this.failed) {
      const versions = this.builtAndFailed.get(name);
      if (versions !== undefined) loads.set(name, versions);
    }
    this.building.repository.setFailedLoads(loads);
  }

  private serialized<T>(run: () => Promise<T>): Promise<T> {
    const next = this.queue.then(run, run);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /**
   * Loads several models, up to `modelLoadThreadCount` at once, each ensemble once the models its steps use have
   * loaded (or failed, which fails it). Other loads wait until these are done.
   */
  private loadAll(names: readonly string[]): Promise<void> {
    const plans = new Map<string, Plan | Error>();
    for (const name of names) plans.set(name, this.plan(name, {}));
    const pending = new Set(names);
    const running = new Set<string>();
    const waits = (name: string) => {
      const p = plans.get(name);
      return p !== undefined && !(p instanceof Error) && p.model.steps.some((s) => s !== name && (pending.has(s) || running.has(s)));
    };
    return this.serialized(
      () =>
        new Promise<void>((resolve) => {
          const next = (): void => {
            while (running.size < this.config.modelLoadThreadCount && pending.size > 0) {
              // A model whose steps are all done; with none, and nothing running, steps that wait on each other: one goes.
              const name = [...pending].find((n) => !waits(n)) ?? (running.size === 0 ? ([...pending][0] as string) : undefined);
              if (name === undefined) break;
              pending.delete(name);
              running.add(name);
              // A failure is recorded with its reason and logged; the other models go on.
              void this.loadNow(name, {}, plans.get(name))
                .catch(() => undefined)
                .finally(() => {
                  running.delete(name);
                  next();
                });
            }
            if (pending.size === 0 && running.size === 0) resolve();
          };
          next();
        }),
    );
  }

  /** Reads a model's folder (or the request's override) and plans its versions; an error is recorded, not thrown. */
  private plan(name: string, override: LoadOverride): Plan | Error {
    const settings: PlanSettings = {
      strict: this.config.disableAutoCompleteConfig || this.config.strictModelConfig,
      defaultMaxBatchSize: this.building.defaultMaxBatchSize,
      codeUploads: this.policy.codeUploads,
    };
    return planLoad(name, override, settings, () => this.findFolder(name));
  }

  /** The model's folder, read again from the repositories (a new model appears here). */
  private findFolder(name: string): ModelFolder {
    for (const repository of this.config.modelRepository) {
      const dir = path.join(path.resolve(repository), name);
      if (fs.existsSync(dir) && fs.statSync(dir).isDirectory()) {
        const folder = readModelFolder(path.resolve(repository), name);
        this.folders.set(name, folder);
        return folder;
      }
    }
    this.folders.delete(name);
    throw new TritonError('INVALID_ARGUMENT', `failed to load '${name}', failed to poll from model repository`);
  }

  private async loadNow(name: string, override: LoadOverride, planned?: Plan | Error): Promise<void> {
    if (this.closed) throw new TritonError('UNAVAILABLE', 'the server is stopping');
    const plan = planned ?? this.plan(name, override);
    if (plan instanceof Error) return this.fail(name, plan);
    const versions = plan.model.bindings.map((b) => String(b.modelVersion));
    const { repository } = this.building;
    const before = this.loaded.get(name);
    // The same config and the same files: a version already serving is kept as it is.
    const sameConfig = before !== undefined && !before.fromRequest && !plan.fromRequest && isDeepStrictEqual(before.config, plan.config);
    const fresh: Model[] = [];
    try {
      for (const binding of plan.model.bindings) {
        const version = binding.modelVersion as number;
        const current = repository.versionsOf(name).find((m) => m.version === String(version));
        if (sameConfig && current?.ready && before.versionDigests.get(version) === plan.folder.versionDigests.get(version)) continue;
        fresh.push(buildModel(binding, name, version, this.building));
      }
      if (fresh.length > 0) {
        await loadWithProgress(this.logger, name, fresh.map((m) => m.version), () => Promise.all(fresh.map((m) => m.load())).then(() => undefined));
      }
    } catch (err) {
      await Promise.allSettled(fresh.map((m) => m.unload(0)));
      removeUpload(plan.uploadDir);
      // What the folder or the request holds did not load (code that does not compile, a session that fails):
      // the load request's fault, as Triton answers it, not the server's.
      const failed = err instanceof TritonError && err.code === 'INTERNAL' ? new TritonError('INVALID_ARGUMENT', err.message, { cause: err }) : (err as Error);
      return this.fail(name, failed, versions);
    }
    const served = new Set(plan.model.bindings.map((b) => String(b.modelVersion)));
    const retired: Model[] = [];
    for (const model of fresh) {
      const old = repository.versionsOf(name).find((m) => m.version === model.version);
      if (old) {
        repository.replace(model);
        retired.push(old);
      } else {
        repository.add(model);
      }
    }
    for (const old of repository.versionsOf(name)) {
      if (!served.has(old.version)) retired.push(old);
    }
    // A version is kept only when neither load came from a request, so an earlier upload goes with the old versions.
    this.loaded.set(name, { config: plan.config, versionDigests: plan.folder.versionDigests, fromRequest: plan.fromRequest, uploadDir: plan.uploadDir });
    this.failures.delete(name);
    this.builtAndFailed.delete(name);
    this.failuresChanged();
    // Old versions leave the index at once and finish the requests they hold, after the load has answered.
    for (const old of retired) if (!served.has(old.version)) repository.remove(old);
    this.retire(retired, before?.uploadDir);
  }

  /**
   * Unloads models that no longer serve: their requests finish (up to `exitTimeoutSeconds`), then they close;
   * then the folder of a load request's files that only they used is removed.
   */
  private retire(models: readonly Model[], uploadDir?: string): void {
    const unloads = models.map((model) =>
      model.unload(this.config.exitTimeoutSeconds * 1000).catch((err: Error) => this.logger.error({ model: model.name, version: model.version, err: err.message }, 'unload failed')),
    );
    if (uploadDir !== undefined) void Promise.allSettled(unloads).then(() => removeUpload(uploadDir));
  }

  /** Records and throws a failed load; `versions`, the versions it failed to build, when its config was valid. */
  private fail(name: string, err: Error, versions?: readonly string[]): never {
    // The index lists what the repositories hold and what is or was loaded, as Triton's does. A failed load of any
    // other name (in no repository, or a request's files that did not load) answers its error and leaves nothing
    // behind: recorded, it would list the name for good, one entry per request, and hold the server not ready.
    if (this.listed(name)) {
      if (versions !== undefined) this.builtAndFailed.set(name, versions);
      this.recordFailure(name, err.message);
    } else {
      logLoadFailed(this.logger, name, err.message);
    }
    throw err instanceof TritonError ? err : new TritonError('INVALID_ARGUMENT', `failed to load '${name}': ${err.message}`, { cause: err });
  }

  private schedulePoll(): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      void this.serialized(() => this.poll()).finally(() => this.schedulePoll());
    }, this.config.repositoryPollSeconds * 1000);
    this.timer.unref();
  }

  /** `poll` mode: loads new and changed models, and unloads those whose folder is gone. */
  private async poll(): Promise<void> {
    let found: Map<string, ModelFolder>;
    let unreadable: Map<string, string>;
    try {
      ({ folders: found, unreadable } = scanRepositories(this.config.modelRepository));
    } catch (err) {
      this.logger.error({ err: (err as Error).message }, 'failed to poll the model repositories');
      return;
    }
    const previous = this.folders;
    this.folders = found;
    const { repository } = this.building;
    // A folder that cannot be read now keeps what it served, with the reason.
    for (const [name, reason] of unreadable) {
      if (this.failures.get(name) !== reason) this.recordFailure(name, reason);
      const before = previous.get(name);
      if (before) this.folders.set(name, before);
    }
    for (const [name] of previous) {
      if (found.has(name) || unreadable.has(name)) continue;
      this.logger.info({ model: name }, 'model folder removed; unloading');
      const versions = repository.versionsOf(name);
      for (const m of versions) repository.remove(m);
      this.retire(versions, this.loaded.get(name)?.uploadDir);
      this.forget(name);
    }
    const changed = [...found.values()].filter((f) => previous.get(f.name)?.digest !== f.digest || this.failures.has(f.name) || !this.loaded.has(f.name));
    for (const folder of changed) {
      await this.loadNow(folder.name, {}).catch(() => undefined);
    }
  }
}
