/** One step of an ensemble, as Triton's `ensemble_scheduling.step`. */
export interface EnsembleStep {
  modelName: string;
  /** Version of the step model; the latest when absent. */
  modelVersion?: number;
  /** Step model input name → ensemble tensor it reads. */
  inputMap: Readonly<Record<string, string>>;
  /** Step model output name → ensemble tensor it writes. */
  outputMap: Readonly<Record<string, string>>;
}

/** Marks the objects `ensemble()` returns. */
export const ENSEMBLE_MARK: unique symbol = Symbol.for('tstriton.ensemble');

/** An ensemble to bind: `bind({ modelName, inferFunc: ensemble({ steps }), inputs, outputs })`. */
export interface EnsembleSpec {
  readonly [ENSEMBLE_MARK]: true;
  readonly steps: readonly EnsembleStep[];
}

/**
 * Declares an ensemble: a model whose requests run through other bound models, each step reading and writing
 * named tensors, as Triton's ensemble scheduler. Steps run as soon as their inputs exist, through their
 * models' schedulers, so they batch with other traffic; tensors move between steps in memory.
 */
export function ensemble(init: { steps: readonly EnsembleStep[] }): EnsembleSpec {
  return Object.freeze({ [ENSEMBLE_MARK]: true as const, steps: init?.steps ?? [] });
}

/** True if `value` was made by `ensemble()`. */
export function isEnsembleSpec(value: unknown): value is EnsembleSpec {
  return typeof value === 'object' && value !== null && (value as Partial<EnsembleSpec>)[ENSEMBLE_MARK] === true;
}
