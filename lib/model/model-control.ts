import type { TritonConfig } from '../config/triton-config';
import { TritonError, serverStopping } from '../base/errors';
import type { Logger } from '../logging/logger';
import type { Model } from './model';
import { buildModel, type BindOptions, type BuildContext } from './model-builder';
import type { ModelRepository } from './model-repository';

/** One model in the repository index. */
export interface RepositoryIndexEntry {
  name: string;
  version: string;
  state: string;
  reason?: string;
}

/** What a load request may bring, as Triton's load API: a config (JSON) and files that replace the folder's. */
export interface LoadOverride {
  /** The model config in Triton's JSON form, replacing `config.pbtxt`. */
  config?: string;
  /** File contents by path inside the model folder (`1/model.onnx`), from the `file:<path>` parameters. */
  files?: Readonly<Record<string, Buffer>>;
}

/**
 * The model repository extension over bound models: the index, and, in `explicit` model control mode, unload
 * and load again from the binding (Triton refuses both in its other modes).
 */
export class ModelControl {
  /** How each bound model was bound, to build it again when it is loaded after an unload. */
  private readonly bindings = new Map<Model, BindOptions>();

  constructor(
    private readonly repository: ModelRepository,
    private readonly building: BuildContext,
    private readonly config: TritonConfig,
    private readonly logger: Logger,
  ) {}

  /** Remembers how `model` was bound. */
  bound(model: Model, options: BindOptions): void {
    this.bindings.set(model, options);
  }

  /**
   * The repository index: every bound model with its state (`READY`, `LOADING`, `UNLOADING`, `UNAVAILABLE`)
   * and, when not ready, why; only ready ones with `readyOnly`.
   */
  index(readyOnly: boolean): RepositoryIndexEntry[] {
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
  async load(name: string, running: () => boolean): Promise<void> {
    this.requireExplicit();
    if (!running()) throw serverStopping();
    const models = this.repository.versionsOf(name);
    if (models.length === 0) throw new TritonError('INVALID_ARGUMENT', `failed to load '${name}', failed to poll from model repository`);
    for (const old of models) {
      if (old.state === 'READY' || old.state === 'LOADING') continue;
      if (old.state === 'UNLOADING') throw new TritonError('UNAVAILABLE', `model '${name}' is unloading; load it once it has unloaded`);
      const options = this.bindings.get(old) as BindOptions;
      const fresh = buildModel(options, old.name, Number(old.version), this.building);
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
  async unload(name: string, unloadDependents: boolean, running: () => boolean): Promise<void> {
    this.requireExplicit();
    if (!running()) throw serverStopping();
    const models = this.repository.versionsOf(name);
    if (models.length === 0) throw new TritonError('INVALID_ARGUMENT', `failed to unload '${name}', no version is available`);
    const targets = [...models];
    if (unloadDependents) targets.push(...this.repository.all().filter((m) => ensembleSteps(m).includes(name)));
    this.logger.info({ models: targets.map((m) => m.name) }, 'unloading');
    await Promise.all(targets.map((m) => m.unload(this.config.exitTimeoutSeconds * 1000)));
  }

  /** True if `name` was bound in code (its versions are built again from their bindings on load). */
  isBound(name: string): boolean {
    return this.repository.versionsOf(name).some((m) => this.bindings.has(m));
  }

  /** Load and unload are served only in `explicit` model control mode; Triton refuses them otherwise, in these words. */
  requireExplicit(): void {
    if (this.config.modelControlMode !== 'explicit') {
      throw new TritonError('UNAVAILABLE', 'explicit model load / unload is not allowed if polling is enabled');
    }
  }
}

/** The step models of an ensemble, read from its config; none for other models. */
function ensembleSteps(model: Model): string[] {
  const scheduling = model.configJson.ensemble_scheduling as { step?: { model_name?: string }[] } | undefined;
  return (scheduling?.step ?? []).map((s) => s.model_name ?? '');
}
