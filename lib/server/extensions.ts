/** Parameters of the classification and model repository extensions, read the same way by both transports. */
import { TritonError, invalidArgument } from '../errors';
import type { Model } from '../model/model';
import type { Classification } from '../tensor/classification';
import { describeValue } from '../tensor/wire-value';

/** The `classification` parameter of output `name`: a class count (0 or absent: none). */
export function classificationOf(value: unknown, model: Model, name: string): Classification | undefined {
  if (value === undefined) return undefined;
  const count = typeof value === 'bigint' ? Number(value) : value;
  if (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 0) {
    throw invalidArgument(`output '${name}': 'classification' must be a non-negative integer (the number of classes), got ${describeValue(value)}`);
  }
  if (count === 0) return undefined;
  const labels = model.outputs.find((o) => o.name === name)?.labels;
  return { count, batched: model.config.effectiveMaxBatchSize > 0, labels };
}

/** A load that brings a config or files: this server's models are bound in code. */
export function refuseOverrides(keys: readonly string[], model: string): void {
  const override = keys.find((k) => k === 'config' || k.startsWith('file:'));
  if (override) {
    throw new TritonError('UNSUPPORTED', `failed to load '${model}': '${override}' is not supported; models are bound in code, so a load can only bring a bound model back`);
  }
}
