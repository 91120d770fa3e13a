import { invalidConfig } from '../base/errors';
import type { ModelConfigInit } from '../config/model-config';
import { parseDevice } from '../instances/instance';
import { isWorkerSpec } from '../instances/worker-spec';
import type { BindOptions } from '../model/bind-options';
import { isEnsembleSpec } from '../model/ensemble-spec';
import { isOnnxModelSpec } from '../onnx/onnx-model';

/** What a candidate changes in a model's `bind()` options; a field left out keeps the model's own. */
export interface BindOverrides {
  readonly maxBatchSize?: number;
  readonly maxQueueDelayMicroseconds?: number;
  readonly instanceCount?: number;
  /** `cpu` or `gpu:N`: where the instances run. */
  readonly kind?: string;
}

/**
 * A model's `bind()` options with a candidate's batching and instances in place of its own: `maxBatchSize` and the
 * dynamic batcher's `maxQueueDelayMicroseconds` in its config (a model bound without a batcher gets one), and
 * `instanceCount` instances on `kind`. Instances are set where the callable says how to make more of them: the
 * devices of a `workers()` spec or an `onnxModel()`, or a single in-process callable repeated (a class makes one
 * object per instance, an object or a function is shared by them).
 *
 * @throws TritonError `INVALID_CONFIG` when the instances cannot be set (an ensemble, a GPU for an in-process callable).
 */
export function applyBindOverrides(options: BindOptions, overrides: BindOverrides): BindOptions {
  const config = { ...(options.config ?? {}) } as ModelConfigInit & Record<string, unknown>;
  const batching = config.batching !== false && !(isOnnxModelSpec(options.inferFunc) && !options.inferFunc.batching);
  if (batching && overrides.maxBatchSize !== undefined && overrides.maxBatchSize > 0) config.maxBatchSize = overrides.maxBatchSize;
  if (batching && overrides.maxQueueDelayMicroseconds !== undefined && config.sequenceBatching == null) {
    config.batcher = { ...(config.batcher ?? {}), maxQueueDelayMicroseconds: overrides.maxQueueDelayMicroseconds };
  }
  const inferFunc = overrides.instanceCount === undefined ? options.inferFunc : withInstances(options, overrides.instanceCount, overrides.kind ?? 'cpu');
  return { ...options, inferFunc, config };
}

/** The model's callable with `count` instances on `kind`. */
function withInstances(options: BindOptions, count: number, kind: string): BindOptions['inferFunc'] {
  const device = parseDevice(kind);
  const devices = Array.from({ length: count }, () => device);
  const entry = options.inferFunc;
  if (isOnnxModelSpec(entry)) return { ...entry, init: { ...entry.init, devices } };
  if (isEnsembleSpec(entry)) throw invalidConfig(`model '${options.modelName}' is an ensemble: its instances are its steps' (analyze the step models)`);
  const entries: readonly unknown[] = Array.isArray(entry) ? entry : [entry];
  const spec = entries.find(isWorkerSpec);
  if (spec) return { ...spec, devices };
  if (device.kind !== 'cpu') throw invalidConfig(`model '${options.modelName}' runs in-process: its instances run on the CPU, not ${kind} (bind it with workers() to place it on a GPU)`);
  return Array.from({ length: count }, () => entries[0] as object);
}
