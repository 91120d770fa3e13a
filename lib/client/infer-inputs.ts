import type { DataType, TensorData } from '../tensor/dtype';
import type { NamedTensor } from '../tensor/named-tensor';
import type { ModelMetadata } from '../protocol/model-metadata';
import { tensor, type Tensor } from '../tensor/tensor';
import { ClientError } from './client-error';

/** Element data: a typed array (an array of bytes or strings for BYTES). */
export type InputData = TensorData | readonly string[];

/**
 * One input: a `Tensor`, `{ shape, data }` (dtype from the model's metadata), or bare data (shape
 * `[data.length]`).
 */
export type InferInput = Tensor | { readonly dtype?: DataType; readonly shape: readonly number[]; readonly data: InputData } | InputData;

/** Inputs by name, or by position in the model's metadata order. */
export type InferInputs = Readonly<Record<string, InferInput>> | readonly InferInput[];

/**
 * Turns inputs as the user gives them into named tensors, checking each against its datatype's
 * container. With `addBatchDim`, each shape gets a leading batch dimension of 1 (no data is copied).
 */
export function toNamedTensors(inputs: InferInputs, metadata: ModelMetadata, addBatchDim: boolean): NamedTensor[] {
  const entries: [string, InferInput][] = Array.isArray(inputs)
    ? (inputs as readonly InferInput[]).map((value, i) => {
        const spec = metadata.inputs[i];
        if (!spec) throw invalid(`model '${metadata.name}' has ${metadata.inputs.length} inputs, ${inputs.length} were given by position`);
        return [spec.name, value];
      })
    : Object.entries(inputs as Readonly<Record<string, InferInput>>);
  return entries.map(([name, value]) => {
    const t = toTensor(name, value, metadata);
    return { name, tensor: addBatchDim ? { dtype: t.dtype, shape: [1, ...t.shape], data: t.data } : t };
  });
}

function toTensor(name: string, value: InferInput, metadata: ModelMetadata): Tensor {
  const bare = ArrayBuffer.isView(value) || Array.isArray(value);
  const data = (bare ? value : (value as { data: InputData }).data) as InputData;
  const shape = bare ? [(value as InputData).length] : (value as { shape: readonly number[] }).shape;
  const dtype = (bare ? undefined : (value as { dtype?: DataType }).dtype) ?? (metadata.inputs.find((s) => s.name === name)?.datatype as DataType | undefined);
  if (dtype === undefined) {
    throw invalid(`input '${name}': model '${metadata.name}' declares no such input (it has ${metadata.inputs.map((s) => `'${s.name}'`).join(', ')})`);
  }
  try {
    return tensor(dtype, shape, data as TensorData);
  } catch (err) {
    throw invalid(`input '${name}': ${(err as Error).message}`);
  }
}

function invalid(message: string): ClientError {
  return new ClientError('INVALID_ARGUMENT', message);
}
