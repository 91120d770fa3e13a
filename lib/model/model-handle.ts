import type { BoundModel } from './bound-model';
import type { Model } from './model';
import type { ModelRepository } from './model-repository';

/** The handle `bind()` returns for `model`, reading the version the repository serves now. */
export function boundModel(model: Model, repository: ModelRepository): BoundModel {
  const { name, version } = model;
  const current = (): Model => repository.versionsOf(name).find((m) => m.version === version) ?? model;
  return Object.freeze({
    name,
    version,
    get state() {
      return current().state;
    },
    get ready() {
      return current().ready;
    },
    get configJson() {
      return structuredClone(current().configJson);
    },
  });
}
