/**
 * The input tensors of `tstriton perf`'s requests, from the model's metadata and config, `--shape`, `-b` and
 * `--input-data` (zero, random, perf_analyzer's JSON data file, or its directory of one file per input). Every problem is found here, before any load,
 * and named: an input the model does not have, a shape that does not fit the model's, a data entry of the wrong
 * size.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
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

/** One output of the model: its datatype and the shape of one batch-1 sample (-1 where the model does not fix it). */
export interface OutputSpec {
  readonly name: string;
  readonly datatype: string;
  /** Without the batch dimension. */
  readonly shape: readonly number[];
}

/** How the model batches, the inputs a request sends and the outputs it gets. */
export interface ModelInputs {
  /** 0 when the model does not batch: requests then carry the sample shape as is. */
  readonly maxBatchSize: number;
  /** The model has a sequence batcher: requests need sequence id, start and end. */
  readonly sequence: boolean;
  /** The model is decoupled: any number of responses per request, the last one marked final. */
  readonly decoupled: boolean;
  readonly inputs: readonly InputSpec[];
  readonly outputs: readonly OutputSpec[];
}

/** Length of a random BYTES element, as perf_analyzer's default `--string-length` (128). */
const STRING_LENGTH = 128;

/** The inputs of a model, with `--shape` checked against the metadata: rank and every fixed dimension must match. */
export function modelInputs(metadata: ModelMetadata, config: ModelConfigJson, shapes: Readonly<Record<string, readonly number[]>>): ModelInputs {
  const configJson = config as { max_batch_size?: number; sequence_batching?: unknown; model_transaction_policy?: { decoupled?: boolean }; input?: { name: string; optional?: boolean }[] };
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
  const sequence = configJson.sequence_batching !== undefined && configJson.sequence_batching !== null;
  const outputs = metadata.outputs.map((o): OutputSpec => ({ name: o.name, datatype: o.datatype, shape: maxBatchSize > 0 ? o.shape.slice(1) : o.shape }));
  return { maxBatchSize, sequence, decoupled: configJson.model_transaction_policy?.decoupled === true, inputs, outputs };
}

/** The input data a run sends: `zero`, `random`, or a perf_analyzer JSON data file or data directory. */
export type InputData = 'zero' | 'random' | { readonly file: string };

/**
 * The input tensors of the distinct requests to send, each of batch `batchSize`: one request for zero or random
 * data or a data directory, one per entry of a data file (request `i` takes entries `i` to `i + batchSize - 1`,
 * wrapping).
 */
export function requestInputs(model: ModelInputs, batchSize: number, data: InputData): NamedTensor[][] {
  if (model.maxBatchSize === 0 && batchSize !== 1) throw invalidConfig(`-b ${batchSize}: the model does not batch (its config says max_batch_size 0, or the server gives no config), so the batch size must be 1`);
  if (batchSize > model.maxBatchSize && model.maxBatchSize > 0) throw invalidConfig(`-b ${batchSize} is above the model's max_batch_size ${model.maxBatchSize}`);
  const samples = typeof data === 'string' ? [generatedSample(model, data)] : isDirectory(data.file) ? [directorySample(model, data.file)] : fileSamples(model, data.file);
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
function isDirectory(path: string): boolean {
  return statSync(path, { throwIfNoEntry: false })?.isDirectory() === true;
}

/**
 * perf_analyzer's data directory: one file per input, named as the input, holding one batch-1 sample of it: the
 * raw little-endian elements of a numeric input, or one element per line of a BYTES input.
 */
function directorySample(model: ModelInputs, dir: string): Map<string, Tensor> {
  const sample = new Map<string, Tensor>();
  for (const spec of model.inputs) {
    const where = `--input-data ${dir}: ${spec.name}`;
    const file = join(dir, spec.name);
    let raw: Buffer;
    try {
      raw = readFileSync(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' && spec.optional) continue;
      throw invalidConfig(`${where}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? `no file for input '${spec.name}'` : (err as Error).message}`);
    }
    if (spec.datatype !== 'BYTES') {
      sample.set(spec.name, fromRaw(spec.datatype, spec.shape, raw, where, 'the file'));
      continue;
    }
    const lines = raw.toString('utf8').split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    const n = elementCount(spec.shape);
    if (lines.length !== n) throw invalidConfig(`${where}: the file has ${lines.length} lines; shape [${spec.shape.join(',')}] needs ${n} (one element a line)`);
    sample.set(spec.name, { dtype: 'BYTES', shape: [...spec.shape], data: lines.map((l) => Buffer.from(l, 'utf8')) });
  }
  return sample;
}

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

function fromRaw(dtype: DataType, shape: readonly number[], raw: Buffer, where: string, what = 'b64 content'): Tensor {
  const row = DTYPES[dtype];
  if (row.array === null) throw invalidConfig(`${where}: ${what} is supported for numeric inputs only`);
  const n = elementCount(shape);
  if (raw.byteLength !== n * row.size) throw invalidConfig(`${where}: ${what} has ${raw.byteLength} bytes; shape [${shape.join(',')}] of ${dtype} needs ${n * row.size}`);
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
