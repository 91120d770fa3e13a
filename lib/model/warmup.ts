import { randomBytes } from 'node:crypto';
import type { Request } from '../callable/callable';
import { NEVER_ABORTED } from '../callable/callable-marks';
import type { WarmupSetting } from '../config/model-config';
import type { NamedTensorSpec } from '../config/tensor-spec';
import { TritonError } from '../base/errors';
import { DTYPES, type DataType, type TensorData } from '../tensor/dtype';
import { elementCount, type Tensor } from '../tensor/tensor';

/** Builds the request(s) of one warmup run: `batchSize` rows of zero or random data for every input. */
export function warmupRequests(setting: WarmupSetting, specs: readonly NamedTensorSpec[], batching: boolean, outputs: readonly string[]): Request[] {
  const inputs: Record<string, Tensor> = {};
  for (const spec of specs) {
    const given = setting.inputs[spec.name];
    if (!given) {
      if (spec.optional) continue;
      throw new TritonError('INVALID_CONFIG', `warmup '${setting.name}' does not give input '${spec.name}'`);
    }
    if (given.dtype !== spec.dtype) {
      throw new TritonError('INVALID_CONFIG', `warmup '${setting.name}': input '${spec.name}' is ${given.dtype}, but the model expects ${spec.dtype}`);
    }
    const shape = batching ? [setting.batchSize, ...given.dims] : [...given.dims];
    inputs[spec.name] = { dtype: spec.dtype, shape, data: fill(spec.dtype, elementCount(shape), given.data ?? 'zero') };
  }
  return [{ inputs, parameters: {}, requestedOutputs: outputs, id: `warmup:${setting.name}`, signal: NEVER_ABORTED }];
}

function fill(dtype: DataType, n: number, kind: 'zero' | 'random'): TensorData {
  if (dtype === 'BYTES') return Array.from({ length: n }, () => (kind === 'zero' ? new Uint8Array(0) : new Uint8Array(randomBytes(8))));
  const Ctor = DTYPES[dtype].array as unknown as new (buffer: ArrayBuffer) => TensorData;
  const size = DTYPES[dtype].size;
  const bytes = kind === 'zero' ? new Uint8Array(n * size) : new Uint8Array(randomBytes(n * size));
  if (kind === 'random' && dtype === 'BOOL') for (let i = 0; i < n; i++) bytes[i] = (bytes[i] as number) & 1;
  return new Ctor(bytes.buffer);
}
