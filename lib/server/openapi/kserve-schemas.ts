import { DATA_TYPES } from '../../tensor/dtype';
import type { JsonSchema } from './json-schema';

/**
 * The schemas of the KServe v2 HTTP API that do not depend on a model (errors, metadata, settings, the repository
 * and shared-memory bodies, and the infer request and response of any model), as the server writes and reads them.
 */

/** Triton's error body. */
const ERROR_SCHEMA: JsonSchema = { type: 'object', required: ['error'], properties: { error: { type: 'string' } } };

/** One tensor of a model's metadata: `-1` for the batch dimension and each variable dim. */
const TENSOR_METADATA: JsonSchema = {
  type: 'object',
  required: ['name', 'datatype', 'shape'],
  properties: { name: { type: 'string' }, datatype: { enum: DATA_TYPES }, shape: { type: 'array', items: { type: 'integer', minimum: -1 } } },
};

/** The request `parameters` the server acts on, beside custom ones (strings, integers, booleans, doubles) for the model. */
const REQUEST_PARAMETERS: JsonSchema = {
  type: 'object',
  properties: {
    priority: { type: 'integer', minimum: 0, description: 'the priority level (dynamic batching with priority levels); 0 is the default level' },
    timeout: { type: 'integer', minimum: 0, description: 'the timeout in microseconds' },
    binary_data_output: { type: 'boolean', description: 'every output not listed in `outputs` comes back as binary data' },
    sequence_id: { type: ['integer', 'string'], description: 'the correlation id of a sequence (sequence batching)' },
    sequence_start: { type: 'boolean' },
    sequence_end: { type: 'boolean' },
  },
  propertyNames: { not: { pattern: '^triton_' } },
  additionalProperties: { type: ['string', 'integer', 'number', 'boolean'] },
};

/** The `parameters` of a requested output. */
const OUTPUT_PARAMETERS: JsonSchema = {
  type: 'object',
  properties: {
    binary_data: { type: 'boolean', description: 'this output comes back as binary data' },
    classification: { type: 'integer', minimum: 0, description: 'the top N classes as BYTES "value:index[:label]"' },
    shared_memory_region: { type: 'string' },
    shared_memory_byte_size: { type: 'integer', minimum: 0 },
    shared_memory_offset: { type: 'integer', minimum: 0 },
  },
};

/** The header of an infer request or response with binary tensors: the length of its JSON part. */
export const INFERENCE_HEADER = 'Inference-Header-Content-Length';

/** The schemas every document carries, by their name in `components.schemas`. */
export const KSERVE_SCHEMAS: Record<string, JsonSchema> = {
  Error: ERROR_SCHEMA,
  ServerMetadata: {
    type: 'object',
    required: ['name', 'version', 'extensions'],
    properties: { name: { type: 'string' }, version: { type: 'string' }, extensions: { type: 'array', items: { type: 'string' } } },
  },
  ModelMetadata: {
    type: 'object',
    required: ['name', 'versions', 'platform', 'inputs', 'outputs'],
    properties: {
      name: { type: 'string' },
      versions: { type: 'array', items: { type: 'string' } },
      platform: { type: 'string' },
      inputs: { type: 'array', items: TENSOR_METADATA },
      outputs: { type: 'array', items: TENSOR_METADATA },
    },
  },
  ModelConfig: { type: 'object', description: "Triton's model config in its JSON form (snake_case fields, TYPE_* enums)", required: ['name', 'max_batch_size', 'input', 'output'] },
};

/** An infer request whose `inputs` are `inputs` and whose requested outputs are named as `outputName` says. */
export function inferRequest(inputs: JsonSchema, outputName: JsonSchema): JsonSchema {
  return {
    type: 'object',
    required: ['inputs'],
    properties: {
      id: { type: 'string' },
      parameters: REQUEST_PARAMETERS,
      inputs,
      outputs: { type: 'array', items: { type: 'object', required: ['name'], properties: { name: outputName, parameters: OUTPUT_PARAMETERS } } },
    },
  };
}

/** An infer response from the model `modelName` (in `version`), each of its outputs an `output`. */
export function inferResponse(modelName: JsonSchema, version: JsonSchema, output: JsonSchema): JsonSchema {
  return {
    type: 'object',
    required: ['model_name', 'model_version', 'outputs'],
    properties: { model_name: modelName, model_version: version, id: { type: 'string' }, parameters: { type: 'object' }, outputs: { type: 'array', items: output } },
  };
}

/** The schemas of the server's document only: any model's infer request and response, and the extensions' bodies. */
export const SERVER_SCHEMAS: Record<string, JsonSchema> = {
  InferRequest: inferRequest(
    {
      type: 'array',
      items: {
        type: 'object',
        required: ['name', 'datatype', 'shape'],
        properties: {
          name: { type: 'string' },
          datatype: { enum: DATA_TYPES },
          shape: { type: 'array', items: { type: 'integer', minimum: 0 } },
          data: { type: 'array', description: 'the elements, row-major, flat or nested (not for FP16 and BF16)' },
          parameters: { type: 'object', properties: { binary_data_size: { type: 'integer', minimum: 0 }, shared_memory_region: { type: 'string' } } },
        },
      },
    },
    { type: 'string' },
  ),
  InferResponse: inferResponse({ type: 'string' }, { type: 'string' }, {
    type: 'object',
    required: ['name', 'datatype', 'shape'],
    properties: { name: { type: 'string' }, datatype: { enum: DATA_TYPES }, shape: { type: 'array', items: { type: 'integer', minimum: 0 } }, data: { type: 'array' }, parameters: { type: 'object' } },
  }),
  GenerateRequest: {
    type: 'object',
    description: "the model's inputs by name (a value or an array of them), and `parameters`",
    properties: { id: { type: 'string' }, parameters: REQUEST_PARAMETERS },
    additionalProperties: true,
  },
  GenerateResponse: {
    type: 'object',
    required: ['model_name', 'model_version'],
    properties: { model_name: { type: 'string' }, model_version: { type: 'string' }, id: { type: 'string' } },
    additionalProperties: true,
    description: "the model's outputs by name, each a value (one element) or an array",
  },
  ModelStatistics: { type: 'object', required: ['model_stats'], properties: { model_stats: { type: 'array', items: { type: 'object' } } } },
  TraceSettings: { type: 'object', additionalProperties: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }, { type: 'null' }] } },
  LogSettings: { type: 'object', additionalProperties: { type: ['string', 'integer', 'boolean'] } },
  RepositoryIndex: {
    type: 'array',
    items: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, version: { type: 'string' }, state: { type: 'string' }, reason: { type: 'string' } } },
  },
  RepositoryIndexRequest: { type: 'object', properties: { ready: { type: 'boolean' } } },
  RepositoryLoadRequest: {
    type: 'object',
    properties: { parameters: { type: 'object', description: '`config` (a model config JSON string) and `file:<path>` (base64 file contents)', additionalProperties: true } },
  },
  RepositoryUnloadRequest: { type: 'object', properties: { parameters: { type: 'object', properties: { unload_dependents: { type: 'boolean' } } } } },
  SharedMemoryStatus: {
    type: 'array',
    items: { type: 'object', properties: { name: { type: 'string' }, key: { type: 'string' }, offset: { type: 'integer' }, byte_size: { type: 'integer' } } },
  },
  SharedMemoryRegister: {
    type: 'object',
    required: ['key', 'byte_size'],
    properties: { key: { type: 'string' }, offset: { type: 'integer', minimum: 0 }, byte_size: { type: 'integer', minimum: 0 } },
  },
};
