import { TritonError } from '../base/errors';
import type { ModelMetadata } from '../protocol/model-metadata';
import type { Model } from './model';
import { describedVersion, servingVersion } from './serving-version';

/** A model whose versions failed to build and that serves nothing: what Triton's model life cycle keeps of it. */
export interface FailedLoad {
  readonly name: string;
  /** The versions the load tried, unavailable. */
  readonly versions: readonly string[];
}

/** Bound models by name and version. */
export class ModelRepository {
  private readonly models = new Map<string, Map<string, Model>>();
  /** Models the server knows with no version here, each with the versions its load failed to build (`setFailedLoads`). */
  private failed: ReadonlyMap<string, readonly string[]> = new Map();
  private readonly listeners: (() => void)[] = [];
  private readonly readinessListeners: (() => void)[] = [];

  /** Calls `listener` whenever a model is added, replaced or removed (front-end threads drop their copies). */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  /**
   * Calls `listener` whenever readiness may have changed: a model's state or an instance's health, or the
   * server's own (`readinessChanged()`), so that what front-end threads publish of it follows at once.
   */
  onReadinessChange(listener: () => void): void {
    this.readinessListeners.push(listener);
  }

  /** Tells the readiness listeners that the server's or a model's readiness may have changed. */
  readinessChanged(): void {
    for (const l of this.readinessListeners) l();
  }

  private changed(): void {
    for (const l of this.listeners) l();
  }

  /** Adds a model; a second model with the same name and version is rejected. */
  add(model: Model): void {
    let versions = this.models.get(model.name);
    if (!versions) this.models.set(model.name, (versions = new Map()));
    if (versions.has(model.version)) {
      throw new TritonError('ALREADY_EXISTS', `model '${model.name}' version ${model.version} is already bound`);
    }
    versions.set(model.version, model);
    model.onReadinessChange(() => this.readinessChanged());
    this.changed();
  }

  /** Puts `model` in the place of the model with its name and version (a model loaded again). */
  replace(model: Model): void {
    const versions = this.models.get(model.name);
    if (!versions?.has(model.version)) throw new TritonError('INTERNAL', `model '${model.name}' version ${model.version} is not bound`);
    versions.set(model.version, model);
    model.onReadinessChange(() => this.readinessChanged());
    this.changed();
  }

  /**
   * Takes `model` out: requests name it no longer (the ones it holds still finish). The name goes when its
   * last version does.
   */
  remove(model: Model): void {
    const versions = this.models.get(model.name);
    if (versions?.get(model.version) !== model) return;
    versions.delete(model.version);
    if (versions.size === 0) this.models.delete(model.name);
    this.changed();
  }

  /**
   * Sets the models whose versions failed to build (a valid config; code or a file that did not load) and that serve
   * no earlier load, each with those versions. The server knows them, as Triton's model life cycle keeps such
   * versions (unavailable, with the load's reason): a request for one is answered "has no available versions", or
   * "version N is not at ready state" when it names one of them, not "is not found". A model whose config was not
   * valid never reaches the life cycle and stays unknown. The change listeners hear of it (front-end threads too).
   */
  setFailedLoads(loads: ReadonlyMap<string, readonly string[]>): void {
    if (JSON.stringify(failedLoadsOf(loads)) === JSON.stringify(this.failedLoads())) return;
    this.failed = new Map(loads);
    this.changed();
  }

  /** The models `setFailedLoads` set last, by name. */
  failedLoads(): FailedLoad[] {
    return failedLoadsOf(this.failed);
  }

  /**
   * The metadata of the model version `get` finds, listing every version of the name that is ready, as Triton's
   * model metadata does.
   */
  metadataOf(name: string, version?: string): ModelMetadata {
    return this.describe(this.get(name, version));
  }

  /**
   * The metadata of `model` whatever its state, listing the ready versions of its name (its own when none is:
   * what the front-end threads are given of a version that is not ready).
   */
  describe(model: Model): ModelMetadata {
    const ready = this.versionsOf(model.name)
      .filter((m) => m.state === 'READY')
      .map((m) => m.version)
      .sort((a, b) => Number(a) - Number(b));
    return { ...model.metadata, versions: ready.length > 0 ? ready : [model.version] };
  }

  /** Every version of `name`, in binding order (none when it is not bound). */
  versionsOf(name: string): Model[] {
    return [...(this.models.get(name)?.values() ?? [])];
  }

  /** True if a model of that name is bound (any version). */
  has(name: string): boolean {
    return this.models.has(name);
  }

  /**
   * The model version that serves a request for a name and optional version: the one named, or the highest ready
   * one; Triton's errors otherwise (`servingVersion`), a failed load's name answered as a known one.
   */
  get(name: string, version?: string): Model {
    return servingVersion(name, version, this.models.get(name)?.values() ?? [], this.failed.get(name));
  }

  /**
   * The model version that describes a name and optional version whatever its state (the highest when none is
   * given): an ensemble's step, a model's reference page (`describedVersion`, which says what it throws).
   */
  find(name: string, version?: string): Model {
    return describedVersion(name, version, this.models.get(name)?.values() ?? [], this.failed.get(name));
  }

  /** Every bound model, in binding order. */
  all(): Model[] {
    return [...this.models.values()].flatMap((v) => [...v.values()]);
  }
}

/** The loads as published, by name (names are unique). */
function failedLoadsOf(loads: ReadonlyMap<string, readonly string[]>): FailedLoad[] {
  return [...loads].map(([name, versions]) => ({ name, versions: [...versions] })).sort((a, b) => (a.name < b.name ? -1 : 1));
}
