import type { NamedTensorSpec } from '../../config/tensor-spec';
import type { ModelView } from '../../model/model-view';
import { DTYPES, fromConfigType } from '../../tensor/dtype';

/** A ready-made infer request of a model, and the binary part that goes after its JSON, when it has one. */
export interface ExampleRequest {
  /** The JSON request (or, with `binaryBytes` > 0, its JSON header). */
  readonly json: Record<string, unknown>;
  /** The zero bytes of the FP16/BF16 inputs that follow the JSON (binary tensor extension); 0 when all is JSON. */
  readonly binaryBytes: number;
}

/** A warmup as the model config JSON writes it (`model_warmup`). */
interface WarmupJson {
  readonly batch_size?: number;
  readonly inputs?: Record<string, { readonly data_type?: string; readonly dims?: readonly number[] }>;
}

/**
 * The example infer request of a model: the shapes of its first warmup (`model_warmup`) where it has one, else the
 * smallest valid shape (batch 1, each variable dim 1); every required input filled with zeros (`false` for BOOL,
 * `""` for BYTES). FP16 and BF16 inputs go as binary data, and outputs of those datatypes are asked for binary.
 */
export function exampleRequest(model: ModelView): ExampleRequest {
  const maxBatchSize = model.config.effectiveMaxBatchSize;
  const warmup = ((model.configJson.model_warmup as readonly WarmupJson[] | undefined) ?? [])[0];
  let binaryBytes = 0;
  const inputs = model.inputs
    .filter((spec) => !spec.optional || warmup?.inputs?.[spec.name] !== undefined)
    .map((spec) => {
      const shape = exampleShape(spec, maxBatchSize, warmup);
      const count = shape.reduce((n, d) => n * d, 1);
      const row = DTYPES[spec.dtype];
      const head = { name: spec.name, datatype: spec.dtype, shape };
      if (row.json === 'binary-only') {
        binaryBytes += count * row.size;
        return { ...head, parameters: { binary_data_size: count * row.size } };
      }
      const zero = row.json === 'bool' ? false : row.json === 'string' ? '' : 0;
      return { ...head, data: new Array<unknown>(count).fill(zero) };
    });
  const binaryOutputs = model.outputs.filter((spec) => DTYPES[spec.dtype].json === 'binary-only');
  const outputs = binaryOutputs.length === 0 ? undefined : model.outputs.map((spec) => (DTYPES[spec.dtype].json === 'binary-only' ? { name: spec.name, parameters: { binary_data: true } } : { name: spec.name }));
  return { json: { id: 'example', inputs, ...(outputs && { outputs }) }, binaryBytes };
}

/** The shape of one input of the example: its warmup's dims where the warmup gives them (and fit), else the smallest. */
function exampleShape(spec: NamedTensorSpec, maxBatchSize: number, warmup: WarmupJson | undefined): number[] {
  const given = warmup?.inputs?.[spec.name];
  const fits = given?.dims !== undefined && fromConfigType(given.data_type ?? '') === spec.dtype && given.dims.length === spec.shape.length;
  const dims = fits ? [...(given.dims as readonly number[])] : spec.shape.map((d) => (d < 0 ? 1 : d));
  return maxBatchSize > 0 ? [Math.min(Math.max(warmup?.batch_size ?? 1, 1), maxBatchSize), ...dims] : dims;
}
