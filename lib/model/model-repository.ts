import { TritonError } from '../errors';
import type { Model } from './model';

/** Bound models by name and version. */
export class ModelRepository {
  private readonly models = new Map<string, Map<string, Model>>();

  /** Adds a model; a second model with the same name and version is rejected. */
  add(model: Model): void {
    let versions = this.models.get(model.name);
    if (!versions) this.models.set(model.name, (versions = new Map()));
    if (versions.has(model.version)) {
      throw new TritonError('ALREADY_EXISTS', `model '${model.name}' version ${model.version} is already bound`);
    }
    versions.set(model.version, model);
  }

  /** Puts `model` in the place of the model with its name and version (a model loaded again). */
  replace(model: Model): void {
    const versions = this.models.get(model.name);
    if (!versions?.has(model.version)) throw new TritonError('INTERNAL', `model '${model.name}' version ${model.version} is not bound`);
    versions.set(model.version, model);
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
    const versions = this.models.get(name);
    if (versions && (version === undefined || version === '')) {
      const latest = [...versions.keys()].sort((a, b) => Number(b) - Number(a))[0];
      if (latest !== undefined) return versions.get(latest) as Model;
    }
    const model = version ? versions?.get(version) : undefined;
    if (model) return model;
    const which = version ? ` version ${version}` : '';
    throw new TritonError('MODEL_NOT_FOUND', `Request for unknown model: '${name}'${which} is not found`);
  }

  /** Every bound model, in binding order. */
  all(): Model[] {
    return [...this.models.values()].flatMap((v) => [...v.values()]);
  }
}
