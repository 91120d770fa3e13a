/**
 * The input tensors of `tstriton perf`'s requests, from the model's metadata and config, `--shape`, `-b` and
 * `--input-data` (zero, random, or perf_analyzer's JSON data file). Every problem is found here, before any load,
 * and named: an input the model does not have, a shape that does not fit the model's, a data entry of the wrong
 * size.
 */
import { readFileSync } from 'node:fs';
import { invalidConfig } from '../base/errors';
import type { ModelConfigJson } from '../config/triton-model-config';
import type { ModelMetadata } from '../protocol/model-metadata';
import { DTYPES, isDataType, type DataType } from '../tensor/dtype';
import type { NamedTensor } from '../tensor/named-tensor';
import { concatBatch, elementCount, tensor, type Tensor } from '../tensor/tensor';

/** One input of the model, as a request sends it: its datatype and the shape of one batch-1 sample. */
export interface InputSpec {
  readonly name: string;
  readonly datatype: DataType;
  /** Without the batch dimension; variable dims resolved (from `--shape`, else 1). */
  readonly shape: readonly number[];
  readonly optional: boolean;
}

/** How the model batches, and the inputs a request sends. */
export interface ModelInputs {
  /** 0 when the model does not batch: requests then carry the sample shape as is. */
  readonly maxBatchSize: number;
  /** The model has a sequence batcher: requests need sequence id, start and end. */
  readonly sequence: boolean;
  readonly inputs: readonly InputSpec[];
}

/** Length of a random BYTES element, as perf_analyzer's default `--string-length` (128). */
const STRING_LENGTH = 128;

/** The inputs of a model, with `--shape` checked against the metadata: rank and every fixed dimension must match. */
export function modelInputs(metadata: ModelMetadata, config: ModelConfigJson, shapes: Readonly<Record<string, readonly number[]>>): ModelInputs {
  const configJson = config as { max_batch_size?: number; sequence_batching?: unknown; input?: { name: string; optional?: boolean }[] };
  const maxBatchSize = Number(configJson.max_batch_size ?? 0);
  for (const name of Object.keys(shapes)) {
    if (!metadata.inputs.some((i) => i.name === name)) {
      throw invalidConfig(`--shape ${name}: model '${metadata.name}' has no input '${name}' (its inputs: ${metadata.inputs.map((i) => i.name).join(', ')})`);
    }
  }
  const inputs = metadata.inputs.map((input): InputSpec => {
    if (!isDataType(input.datatype)) throw invalidConfig(`input '${input.name}' of model '${metadata.name}' has datatype ${input.datatype}, which tstriton perf does not know`);
    const declared = maxBatchSize > 0 ? input.shape.slice(1) : input.shape;
    const given = shapes[input.name];
    if (given && given.length !== declared.length) {
      throw invalidConfig(`--shape ${input.name}:${given.join(',')} has ${given.length} dimensions; input '${input.name}' has ${declared.length}: [${declared.join(',')}] (without the batch dimension)`);
    }
    const shape = declared.map((d, i) => {
      const g = given?.[i];
      if (g !== undefined && d >= 0 && g !== d) {
        throw invalidConfig(`--shape ${input.name}:${given?.join(',')} does not fit input '${input.name}' of shape [${declared.join(',')}]: dimension ${i} is fixed at ${d}`);
      }
      return g ?? (d >= 0 ? d : 1);
    });
    const optional = configJson.input?.find((c) => c.name === input.name)?.optional === true;
    return { name: input.name, datatype: input.datatype, shape, optional };
  });
  return { maxBatchSize, sequence: configJson.sequence_batching !== undefined && configJson.sequence_batching !== null, inputs };
}

/** The input data a run sends: `zero`, `random`, or a perf_analyzer JSON data file. */
export type InputData = 'zero' | 'random' | { readonly file: string };

/**
 * The input tensors of the distinct requests to send, each of batch `batchSize`: one request for zero or random
 * data, one per entry of a data file (request `i` takes entries `i` to `i + batchSize - 1`, wrapping).
 */
export function requestInputs(model: ModelInputs, batchSize: number, data: InputData): NamedTensor[][] {
  if (model.maxBatchSize === 0 && batchSize !== 1) throw invalidConfig(`-b ${batchSize}: the model does not batch (max_batch_size 0), so the batch size must be 1`);
  if (batchSize > model.maxBatchSize && model.maxBatchSize > 0) throw invalidConfig(`-b ${batchSize} is above the model's max_batch_size ${model.maxBatchSize}`);
  const samples = typeof data === 'string' ? [generatedSample(model, data)] : fileSamples(model, data.file);
  return samples.map((_, i) =>
    model.inputs.flatMap((spec): NamedTensor[] => {
      const parts = Array.from({ length: batchSize }, (_, k) => samples[(i + k) % samples.length]?.get(spec.name)).filter((t) => t !== undefined);
      if (parts.length === 0) return [];
      return [{ name: spec.name, tensor: batched(parts, model.maxBatchSize > 0) }];
    }),
  );
}

/** A batch-1 sample of every input, zeros or random values. */
function generatedSample(model: ModelInputs, kind: 'zero' | 'random'): Map<string, Tensor> {
  return new Map(model.inputs.map((spec) => [spec.name, generated(spec.datatype, spec.shape, kind)]));
}

function generated(dtype: DataType, shape: readonly number[], kind: 'zero' | 'random'): Tensor {
  const n = elementCount(shape);
  const row = DTYPES[dtype];
  if (row.array === null) {
    const element = (): Uint8Array => (kind === 'zero' ? new Uint8Array(1) : Buffer.from(Array.from({ length: STRING_LENGTH }, () => 97 + Math.floor(Math.random() * 26))));
    return { dtype, shape: [...shape], data: Array.from({ length: n }, element) };
  }
  const data = new row.array(n);
  if (kind === 'random') {
    for (let i = 0; i < n; i++) {
      if (data instanceof BigInt64Array || data instanceof BigUint64Array) data[i] = BigInt(Math.floor(Math.random() * 100));
      else data[i] = randomValue(dtype);
    }
  }
  return { dtype, shape: [...shape], data } as Tensor;
}

/** A random element that is a valid, finite value of `dtype`. */
function randomValue(dtype: DataType): number {
  switch (dtype) {
    case 'FP32':
    case 'FP64':
      return Math.random();
    case 'BOOL':
      return Math.random() < 0.5 ? 0 : 1;
    case 'FP16':
      return Math.floor(Math.random() * 0x3c00); // [0, 1) as half floats
    case 'BF16':
      return Math.floor(Math.random() * 0x3f80); // [0, 1) as bfloat16
    default:
      return Math.floor(Math.random() * 100);
  }
}

/** The samples of a perf_analyzer JSON data file: `{"data": [{"INPUT0": [...] | {"content": [...], "shape": [...]} | {"b64": "..."}}, ...]}`. */
function fileSamples(model: ModelInputs, file: string): Map<string, Tensor>[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw invalidConfig(`--input-data ${file}: ${(err as Error).message}`);
  }
  const entries = (parsed as { data?: unknown }).data;
  if (!Array.isArray(entries) || entries.length === 0) throw invalidConfig(`--input-data ${file}: expected {"data": [{...}, ...]} with at least one entry`);
  return entries.map((entry, index) => {
    const where = `--input-data ${file}: data[${index}]`;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) throw invalidConfig(`${where} is not an object of inputs`);
    const sample = new Map<string, Tensor>();
    for (const spec of model.inputs) {
      const value = (entry as Record<string, unknown>)[spec.name];
      if (value === undefined) {
        if (!spec.optional) throw invalidConfig(`${where} has no input '${spec.name}'`);
        continue;
      }
      sample.set(spec.name, entryTensor(spec, value, `${where}.${spec.name}`));
    }
    for (const name of Object.keys(entry)) {
      if (!model.inputs.some((i) => i.name === name)) throw invalidConfig(`${where}: the model has no input '${name}'`);
    }
    return sample;
  });
}

function entryTensor(spec: InputSpec, value: unknown, where: string): Tensor {
  let content = value;
  let shape = spec.shape;
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const v = value as { content?: unknown; shape?: unknown; b64?: unknown };
    if (v.shape !== undefined) {
      if (!Array.isArray(v.shape) || !v.shape.every((d) => Number.isInteger(d) && d >= 0)) throw invalidConfig(`${where}.shape must be a list of dimensions`);
      shape = v.shape as number[];
    }
    if (typeof v.b64 === 'string') return fromRaw(spec.datatype, shape, Buffer.from(v.b64, 'base64'), where);
    content = v.content;
  }
  if (!Array.isArray(content)) throw invalidConfig(`${where}: expected a list of values, {"content": [...]} or {"b64": "..."}`);
  const flat = (content as unknown[]).flat(Infinity);
  const n = elementCount(shape);
  if (flat.length !== n) throw invalidConfig(`${where} has ${flat.length} values; shape [${shape.join(',')}] needs ${n}`);
  try {
    const row = DTYPES[spec.datatype];
    if (row.array === null) return tensor('BYTES', shape, flat.map((e) => String(e)));
    const data = new row.array(n);
    flat.forEach((e, i) => {
      if (data instanceof BigInt64Array || data instanceof BigUint64Array) data[i] = BigInt(e as number);
      else data[i] = typeof e === 'boolean' ? Number(e) : Number(e);
    });
    return { dtype: spec.datatype, shape: [...shape], data } as Tensor;
  } catch (err) {
    throw invalidConfig(`${where}: ${(err as Error).message}`);
  }
}

function fromRaw(dtype: DataType, shape: readonly number[], raw: Buffer, where: string): Tensor {
  const row = DTYPES[dtype];
  if (row.array === null) throw invalidConfig(`${where}: b64 content is supported for numeric inputs only`);
  const n = elementCount(shape);
  if (raw.byteLength !== n * row.size) throw invalidConfig(`${where}: b64 content has ${raw.byteLength} bytes; shape [${shape.join(',')}] of ${dtype} needs ${n * row.size}`);
  const copy = new Uint8Array(raw);
  return { dtype, shape: [...shape], data: new row.array(copy.buffer, 0, n) } as Tensor;
}

/** The samples of one input stacked into a batch (a new leading dimension), or the one sample of a model that does not batch. */
function batched(parts: readonly Tensor[], batching: boolean): Tensor {
  const first = parts[0] as Tensor;
  if (!batching) return first;
  try {
    return concatBatch(parts.map((p) => ({ ...p, shape: [1, ...p.shape] })));
  } catch (err) {
    throw invalidConfig(`input data: ${(err as Error).message}`);
  }
}
