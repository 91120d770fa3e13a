import { TritonError, tritonError } from '../base/errors';
import type { ModelMetadata } from '../protocol/model-metadata';
import type { Model } from './model';

/** Bound models by name and version. */
export class ModelRepository {
  private readonly models = new Map<string, Map<string, Model>>();
  /** The highest version of each name, kept as versions come and go (a request naming no version gets it). */
  private readonly latest = new Map<string, Model>();
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

  private changed(name: string): void {
    const versions = this.models.get(name);
    let highest: Model | undefined;
    for (const m of versions?.values() ?? []) if (!highest || Number(m.version) > Number(highest.version)) highest = m;
    if (highest) this.latest.set(name, highest);
    else this.latest.delete(name);
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
    this.changed(model.name);
  }

  /** Puts `model` in the place of the model with its name and version (a model loaded again). */
  replace(model: Model): void {
    const versions = this.models.get(model.name);
    if (!versions?.has(model.version)) throw new TritonError('INTERNAL', `model '${model.name}' version ${model.version} is not bound`);
    versions.set(model.version, model);
    model.onReadinessChange(() => this.readinessChanged());
    this.changed(model.name);
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
    this.changed(model.name);
  }

  /**
   * The metadata of a model version (the highest when none is given), listing every version of the name that
   * is ready, as Triton's model metadata does.
   */
  metadataOf(name: string, version?: string): ModelMetadata {
    const model = this.get(name, version);
    const ready = this.versionsOf(name)
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
   * The model for a name and optional version (the highest version when none is given); throws Triton's
   * "unknown model" error otherwise.
   */
  get(name: string, version?: string): Model {
    if (version === undefined || version === '') {
      const latest = this.latest.get(name);
      if (latest) return latest;
    }
    const model = version ? this.models.get(name)?.get(version) : undefined;
    if (model) return model;
    const which = version ? ` version ${version}` : '';
    throw tritonError('unknownModel', { model: name, version: which });
  }

  /** Every bound model, in binding order. */
  all(): Model[] {
    return [...this.models.values()].flatMap((v) => [...v.values()]);
  }
}
