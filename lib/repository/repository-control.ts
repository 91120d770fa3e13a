import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { parseModelConfigText } from '../config/model-config-text';
import type { TritonConfig } from '../config/triton-config';
import type { ModelConfigJson } from '../config/triton-model-config';
import { TritonError } from '../errors';
import type { Logger } from '../logger';
import type { Model } from '../model/model';
import { buildModel, type BuildContext } from '../model/model-builder';
import type { LoadOverride, RepositoryIndexEntry } from '../model/model-control';
import { readModelFolder, scanRepositories, type ModelFolder } from './model-folder';
import { repositoryModel, type RepositoryModel } from './repository-binding';

/** What was last loaded for a model name, to tell what changed. */
interface LoadedState {
  config: ModelConfigJson | undefined;
  versionDigests: ReadonlyMap<number, string>;
  /** True when the model came from a load request's config or files rather than its folder alone. */
  fromRequest: boolean;
}

/** A model read from disk (or a load request) and turned into bindings. */
interface Plan {
  model: RepositoryModel;
  folder: ModelFolder;
  config: ModelConfigJson | undefined;
  fromRequest: boolean;
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
  private readonly loaded = new Map<string, LoadedState>();
  /** One load or poll at a time: a load runs after the one before it. */
  private queue: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly building: BuildContext,
    private readonly config: TritonConfig,
    private readonly logger: Logger,
  ) {}

  /**
   * Scans the repositories and loads what the model control mode says: every model (`none`, `poll`), or the
   * `loadModel` ones (`explicit`; `*` for all). A model that fails is logged and left out with its reason;
   * the others serve. `poll` then looks again every `repositoryPollSeconds`.
   */
  async start(): Promise<void> {
    this.folders = scanRepositories(this.config.modelRepository);
    const mode = this.config.modelControlMode;
    const wanted = mode === 'explicit' && !this.config.loadModel.includes('*') ? this.config.loadModel : [...this.folders.keys()];
    for (const name of wanted) {
      if (!this.folders.has(name)) {
        this.failures.set(name, 'model not found in any model repository');
        this.logger.error({ model: name }, `failed to load '${name}': model not found in any model repository`);
      }
    }
    await this.loadAll(wanted.filter((n) => this.folders.has(n)));
    if (mode === 'poll') this.schedulePoll();
  }

  /**
   * Scans the repositories again (one was added) and, with `loadNew`, loads the models found for the first
   * time.
   */
  async scan(loadNew: boolean): Promise<void> {
    const found = scanRepositories(this.config.modelRepository);
    const added = [...found.keys()].filter((n) => !this.folders.has(n));
    this.folders = found;
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
    return this.serialized(() => this.loadNow(name, override));
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

  /** Names of models whose last load failed (they keep the server not ready under strict readiness). */
  get failed(): ReadonlySet<string> {
    return new Set(this.failures.keys());
  }

  /** Forgets a model that was unloaded and whose folder is gone. */
  private forget(name: string): void {
    this.loaded.delete(name);
    this.failures.delete(name);
  }

  private serialized<T>(run: () => Promise<T>): Promise<T> {
    const next = this.queue.then(run, run);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Loads several models, ensembles after the models their steps use. */
  private async loadAll(names: readonly string[]): Promise<void> {
    const pending = new Set(names);
    const plans = new Map<string, Plan | Error>();
    for (const name of names) plans.set(name, this.plan(name, {}));
    // Step models first: repeat until nothing more can go (a step that is missing or failed fails its ensemble).
    while (pending.size > 0) {
      const ready = [...pending].filter((n) => {
        const p = plans.get(n);
        return p instanceof Error || p === undefined || p.model.steps.every((s) => !pending.has(s) || s === n);
      });
      const batch = ready.length > 0 ? ready : [...pending];
      await Promise.all(
        batch.map(async (name) => {
          pending.delete(name);
          // A failure is recorded with its reason and logged; the other models go on.
          await this.serialized(() => this.loadNow(name, {}, plans.get(name))).catch(() => undefined);
        }),
      );
    }
  }

  /** Reads a model's folder (or the request's override) and plans its versions; an error is recorded, not thrown. */
  private plan(name: string, override: LoadOverride): Plan | Error {
    try {
      const { folder, configFile, config } = this.read(name, override);
      const model = repositoryModel(folder, config, configFile, this.config.strictModelConfig);
      return { model, folder, config, fromRequest: override.config !== undefined || override.files !== undefined };
    } catch (err) {
      return err instanceof Error ? err : new Error(String(err));
    }
  }

  private read(name: string, override: LoadOverride): { folder: ModelFolder; configFile: string; config: ModelConfigJson | undefined } {
    if (override.files && Object.keys(override.files).length > 0) {
      if (override.config === undefined) {
        throw new TritonError('INVALID_ARGUMENT', `failed to load '${name}': a load with file: parameters needs a config parameter too`);
      }
      const dir = writeOverride(name, override.files);
      const folder = readModelFolder(dir, name);
      return { folder, configFile: 'the config parameter of the load request', config: parseConfigJson(override.config, name) };
    }
    const folder = this.findFolder(name);
    const configFile = path.join(folder.dir, 'config.pbtxt');
    if (override.config !== undefined) return { folder, configFile: 'the config parameter of the load request', config: parseConfigJson(override.config, name) };
    const config = folder.configText === undefined ? undefined : parseModelConfigText(folder.configText, configFile);
    return { folder, configFile, config };
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
      if (fresh.length > 0) this.logger.info({ model: name, versions: fresh.map((m) => m.version) }, 'loading model');
      await Promise.all(fresh.map((m) => m.load()));
    } catch (err) {
      await Promise.allSettled(fresh.map((m) => m.unload(0)));
      return this.fail(name, err as Error);
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
    this.loaded.set(name, { config: plan.config, versionDigests: plan.folder.versionDigests, fromRequest: plan.fromRequest });
    this.failures.delete(name);
    // Old versions leave the index at once and finish the requests they hold, after the load has answered.
    for (const old of retired) if (!served.has(old.version)) repository.remove(old);
    this.retire(retired);
  }

  /** Unloads models that no longer serve: their requests finish (up to `exitTimeoutSeconds`), then they close. */
  private retire(models: readonly Model[]): void {
    for (const model of models) {
      model.unload(this.config.exitTimeoutSeconds * 1000).catch((err: Error) => this.logger.error({ model: model.name, version: model.version, err: err.message }, 'unload failed'));
    }
  }

  private fail(name: string, err: Error): never {
    const reason = err.message;
    this.failures.set(name, reason);
    this.logger.error({ model: name, err: reason }, 'model failed to load');
    throw err instanceof TritonError ? err : new TritonError('INVALID_ARGUMENT', `failed to load '${name}': ${reason}`, { cause: err });
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
    try {
      found = scanRepositories(this.config.modelRepository);
    } catch (err) {
      this.logger.error({ err: (err as Error).message }, 'failed to poll the model repositories');
      return;
    }
    const previous = this.folders;
    this.folders = found;
    const { repository } = this.building;
    for (const [name] of previous) {
      if (found.has(name)) continue;
      this.logger.info({ model: name }, 'model folder removed; unloading');
      const versions = repository.versionsOf(name);
      for (const m of versions) repository.remove(m);
      this.retire(versions);
      this.forget(name);
    }
    const changed = [...found.values()].filter((f) => previous.get(f.name)?.digest !== f.digest || this.failures.has(f.name) || !this.loaded.has(f.name));
    for (const folder of changed) {
      await this.loadNow(folder.name, {}).catch(() => undefined);
    }
  }
}

/** A load request's `config` parameter: Triton's JSON form of ModelConfig. */
function parseConfigJson(text: string, name: string): ModelConfigJson {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new TritonError('INVALID_ARGUMENT', `failed to load '${name}': the config parameter is not valid JSON (${(err as Error).message})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new TritonError('INVALID_ARGUMENT', `failed to load '${name}': the config parameter must be a JSON object`);
  }
  return parsed as ModelConfigJson;
}

/** Writes a load request's files into a fresh folder `<tmp>/<name>/...`; returns the folder holding `<name>`. */
function writeOverride(name: string, files: Readonly<Record<string, Buffer>>): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tstriton-load-'));
  const modelDir = path.join(root, name);
  try {
    for (const [rel, content] of Object.entries(files)) {
      const target = path.resolve(modelDir, rel);
      if (!target.startsWith(modelDir + path.sep)) {
        throw new TritonError('INVALID_ARGUMENT', `failed to load '${name}': file parameter 'file:${rel}' points outside the model folder`);
      }
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.writeFileSync(target, content);
    }
  } catch (err) {
    // A refused or failed write leaves no folder behind.
    fs.rmSync(root, { recursive: true, force: true });
    throw err;
  }
  return root;
}
