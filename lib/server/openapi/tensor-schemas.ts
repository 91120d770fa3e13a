import type { NamedTensorSpec } from '../../config/tensor-spec';
import { DTYPES, type DataType } from '../../tensor/dtype';
import { INT_RANGES } from '../../tensor/json-codec';
import { ref, type JsonSchema } from './json-schema';

/**
 * The JSON schemas of one model's tensors: the exact shape (with the batch dimension where the model batches) and
 * the JSON `data` its datatype takes, as the HTTP infer decoder (infer-codec.ts, json-codec.ts) checks them.
 */

/** The name of the schema of the `data` arrays of one datatype (of an input, or of an output), in `components.schemas`. */
function dataSchemaName(dtype: DataType, output: boolean): string {
  return `Data${dtype}${output ? 'Output' : ''}`;
}

/**
 * One element of `data` of `dtype`: integers within the datatype's range, numbers for FP32/FP64 (and `null`, how the
 * server writes a non-finite output), booleans for BOOL, strings for BYTES. FP16 and BF16 have no JSON form.
 */
function elementSchema(dtype: DataType, output: boolean): JsonSchema {
  const row = DTYPES[dtype];
  switch (row.json) {
    case 'bool':
      return { type: 'boolean' };
    case 'string':
      return { type: 'string' };
    case 'float':
      return output ? { type: ['number', 'null'] } : { type: 'number' };
    case 'binary-only':
      return false;
    default: {
      const [min, max] = INT_RANGES[dtype] as readonly [bigint, bigint];
      // 64-bit bounds are not exact as JSON numbers; the server reads the digits exactly and checks them itself.
      const bounded = dtype !== 'INT64' && dtype !== 'UINT64';
      return bounded ? { type: 'integer', minimum: Number(min), maximum: Number(max) } : { type: 'integer', ...(dtype === 'UINT64' && { minimum: 0 }) };
    }
  }
}

/**
 * The `data` arrays of `dtype` as a component: flat or nested to any depth, row-major; undefined for FP16 and BF16,
 * which travel as binary data only.
 */
function dataSchema(dtype: DataType, output: boolean): JsonSchema | undefined {
  const element = elementSchema(dtype, output);
  if (element === false) return undefined;
  return { type: 'array', items: { anyOf: [element, ref(dataSchemaName(dtype, output))] }, description: `${dtype} elements, row-major, flat or nested` };
}

/**
 * The `shape` of a tensor of `spec`: the batch dimension first (1 to `maxBatchSize`) when the model batches, then each
 * dim as the model declares it (`-1`: any size).
 */
function shapeSchema(spec: NamedTensorSpec, maxBatchSize: number): JsonSchema {
  const dims: JsonSchema[] = spec.shape.map((d) => (d < 0 ? { type: 'integer', minimum: 0 } : { const: d }));
  if (maxBatchSize > 0) dims.unshift({ type: 'integer', minimum: 1, maximum: maxBatchSize, description: 'the batch size' });
  return { type: 'array', prefixItems: dims, items: false, minItems: dims.length, maxItems: dims.length, description: `[${shapeText(spec, maxBatchSize)}]` };
}

/** A tensor's shape as the metadata endpoint prints it: `-1` for the batch dimension and for each variable dim. */
export function shapeText(spec: NamedTensorSpec, maxBatchSize: number): string {
  return (maxBatchSize > 0 ? [-1, ...spec.shape] : spec.shape).join(',');
}

/** The `parameters` of an input: where its data comes from when it is not `data`. */
const INPUT_PARAMETERS: JsonSchema = {
  type: 'object',
  properties: {
    binary_data_size: { type: 'integer', minimum: 0, description: 'the bytes of this tensor in the binary part of the body (binary tensor extension)' },
    shared_memory_region: { type: 'string', description: 'a registered shared-memory region that holds the tensor' },
    shared_memory_byte_size: { type: 'integer', minimum: 0 },
    shared_memory_offset: { type: 'integer', minimum: 0 },
  },
};

/**
 * One input of a model's infer request: its name, datatype and shape fixed, and exactly one source of its data:
 * `data` (not for FP16 and BF16), `binary_data_size` or `shared_memory_region`.
 */
export function inputSchema(spec: NamedTensorSpec, maxBatchSize: number): JsonSchema {
  const data = DTYPES[spec.dtype].json === 'binary-only' ? undefined : ref(dataSchemaName(spec.dtype, false));
  const fromParameter = (key: string): JsonSchema => ({ required: ['parameters'], properties: { parameters: { required: [key] } } });
  const withoutParameter = (key: string): JsonSchema => ({ not: fromParameter(key) });
  const sources: JsonSchema[] = [
    ...(data ? [{ required: ['data'], allOf: [withoutParameter('binary_data_size'), withoutParameter('shared_memory_region')] }] : []),
    { allOf: [fromParameter('binary_data_size'), withoutParameter('shared_memory_region'), { not: { required: ['data'] } }] },
    { allOf: [fromParameter('shared_memory_region'), withoutParameter('binary_data_size'), { not: { required: ['data'] } }] },
  ];
  return {
    type: 'object',
    title: spec.name,
    description: `${spec.dtype} [${shapeText(spec, maxBatchSize)}]${spec.optional ? ', optional' : ''}${data ? '' : `; ${spec.dtype} has no JSON form: send it as binary data`}`,
    required: ['name', 'datatype', 'shape'],
    properties: {
      name: { const: spec.name },
      datatype: { const: spec.dtype },
      shape: shapeSchema(spec, maxBatchSize),
      ...(data ? { data } : { data: false }),
      parameters: INPUT_PARAMETERS,
    },
    oneOf: sources,
  };
}

/** One output of a model's infer response: JSON `data`, or `binary_data_size` when it came back binary. */
export function outputSchema(spec: NamedTensorSpec, maxBatchSize: number): JsonSchema {
  const json = DTYPES[spec.dtype].json !== 'binary-only';
  return {
    type: 'object',
    title: spec.name,
    description: `${spec.dtype} [${shapeText(spec, maxBatchSize)}]`,
    required: ['name', 'datatype', 'shape'],
    properties: {
      name: { const: spec.name },
      datatype: { const: spec.dtype },
      shape: shapeSchema(spec, maxBatchSize),
      ...(json && { data: ref(dataSchemaName(spec.dtype, true)) }),
      parameters: { type: 'object', properties: { binary_data_size: { type: 'integer', minimum: 0 } } },
    },
  };
}

/** The `data` components the tensors of `inputs` and `outputs` refer to. */
export function dataComponents(inputs: readonly NamedTensorSpec[], outputs: readonly NamedTensorSpec[]): Record<string, JsonSchema> {
  const components: Record<string, JsonSchema> = {};
  const add = (specs: readonly NamedTensorSpec[], output: boolean): void => {
    for (const spec of specs) {
      const schema = dataSchema(spec.dtype, output);
      if (schema) components[dataSchemaName(spec.dtype, output)] = schema;
    }
  };
  add(inputs, false);
  add(outputs, true);
  return components;
}
