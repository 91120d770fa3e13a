import type { ModelView } from '../../model/model-view';
import { modelPath } from '../../protocol/model-path';
import { servedByOneResponse } from '../infer-entry';
import { exampleRequest } from './example-request';
import { INFER_ERRORS, MODEL_LOOKUP_ERRORS } from './error-responses';
import { jsonContent, ref, type JsonSchema, type OpenApiDocument } from './json-schema';
import { INFERENCE_HEADER, inferRequest, inferResponse, KSERVE_SCHEMAS } from './kserve-schemas';
import { emptyAnswer, pathParameter, PathsBuilder } from './operations';
import type { DocumentSecurity } from './security';
import { dataComponents, inputSchema, outputSchema, shapeText } from './tensor-schemas';

/**
 * The OpenAPI 3.1 document of one model (`GET /v2/models/{m}/docs/dataplane.json`), from the same description the
 * metadata and config endpoints answer with (a `ModelView`, the core's or a front-end thread's copy): its metadata,
 * readiness and config routes, and its infer route with the request as a JSON schema of exactly its inputs (names,
 * datatypes, shapes with the batch dimension, typed `data`), its outputs, a ready-made example and the errors it may
 * answer.
 */
export function modelDocument(model: ModelView, security: DocumentSecurity): OpenApiDocument {
  const maxBatchSize = model.config.effectiveMaxBatchSize;
  const base = modelPath(model.name);
  const paths = new PathsBuilder(security);
  const tags = [model.name];
  paths.add(base, 'get', 'modelMetadata', {
    summary: 'Model metadata',
    tags,
    ok: { '200': { description: 'the metadata', content: jsonContent(ref('ModelMetadata'), { example: model.metadata }) } },
    errors: MODEL_LOOKUP_ERRORS,
  });
  paths.add(`${base}/ready`, 'get', 'modelReady', { summary: 'Model readiness', tags, ok: { '200': emptyAnswer('ready') }, errors: ['MODEL_NOT_READY', 'MODEL_NOT_FOUND'] });
  paths.add(`${base}/config`, 'get', 'modelConfig', {
    summary: 'Model configuration',
    tags,
    ok: { '200': { description: 'the model config', content: jsonContent(ref('ModelConfig'), { example: model.configJson }) } },
    errors: MODEL_LOOKUP_ERRORS,
  });
  const schemas: Record<string, JsonSchema> = { ...KSERVE_SCHEMAS, ...dataComponents(model.inputs, model.outputs) };
  if (servedByOneResponse(model)) {
    const example = exampleRequest(model);
    schemas.InferRequest = inferRequestSchema(model);
    schemas.InferResponse = inferResponseSchema(model);
    const infer = {
      summary: `Infer with ${model.name}`,
      description:
        'JSON tensors as `data`, or binary tensors after the JSON (its length in the `Inference-Header-Content-Length` header, ' +
        'each input with `parameters.binary_data_size`).' +
        (example.binaryBytes > 0 ? ` The example's FP16/BF16 inputs are binary: send ${example.binaryBytes} bytes after its JSON.` : ''),
      tags,
      requestBody: {
        required: true,
        content: {
          ...jsonContent(ref('InferRequest'), { example: example.json }),
          'application/octet-stream': { schema: { type: 'string', format: 'binary', description: `the JSON request (its length in ${INFERENCE_HEADER}), then the binary tensors` } },
        },
      },
      ok: {
        '200': {
          description: 'the outputs; with binary outputs, the JSON part (its length in the header) then their bytes',
          headers: { [INFERENCE_HEADER]: { description: 'with binary outputs: the length of the JSON part', schema: { type: 'integer' } } },
          content: { ...jsonContent(ref('InferResponse')), 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
        },
      },
      errors: INFER_ERRORS,
    };
    paths.add(`${base}/infer`, 'post', 'modelInfer', infer);
    paths.add(`${base}/versions/{model_version}/infer`, 'post', 'modelVersionInfer', {
      ...infer,
      summary: `Infer with a version of ${model.name}`,
      parameters: [pathParameter('model_version', 'the version', model.metadata.versions)],
    });
  }
  const schemes = security.schemes();
  return {
    openapi: '3.1.0',
    info: { title: `Model ${model.name}`, version: model.version, description: modelDescription(model) },
    tags: [{ name: model.name, description: `platform ${model.metadata.platform}` }],
    paths: paths.paths,
    components: { schemas, ...(schemes && { securitySchemes: schemes }) },
    'x-triton-model': {
      name: model.name,
      version: model.version,
      versions: model.metadata.versions,
      platform: model.metadata.platform,
      max_batch_size: maxBatchSize,
      decoupled: !servedByOneResponse(model),
      ready: model.ready,
      parameters: model.configJson.parameters ?? {},
    },
  };
}

/** The request of an infer call to this model: its inputs (each required one once), its outputs by name. */
function inferRequestSchema(model: ModelView): JsonSchema {
  const maxBatchSize = model.config.effectiveMaxBatchSize;
  const required = model.inputs.filter((s) => !s.optional);
  const inputs: JsonSchema = {
    type: 'array',
    items: { oneOf: model.inputs.map((s) => inputSchema(s, maxBatchSize)) },
    minItems: required.length,
    maxItems: model.inputs.length,
    ...(required.length > 0 && { allOf: required.map((s) => ({ contains: { required: ['name'], properties: { name: { const: s.name } } } })) }),
  };
  return inferRequest(inputs, { enum: model.outputs.map((s) => s.name) });
}

/** The JSON answer of an infer call to this model, from one of the versions it serves. */
function inferResponseSchema(model: ModelView): JsonSchema {
  const versions = model.metadata.versions.length > 0 ? model.metadata.versions : [model.version];
  return inferResponse({ const: model.name }, { enum: versions }, { oneOf: model.outputs.map((s) => outputSchema(s, model.config.effectiveMaxBatchSize)) });
}

/** The document's description: the model at a glance, in Markdown. */
function modelDescription(model: ModelView): string {
  const maxBatchSize = model.config.effectiveMaxBatchSize;
  const row = (s: ModelView['inputs'][number]) => `| \`${s.name}\`${s.optional ? ' (optional)' : ''} | ${s.dtype} | [${shapeText(s, maxBatchSize)}] |`;
  const parameters = Object.entries((model.configJson.parameters ?? {}) as Record<string, { string_value?: string }>);
  return [
    ...(model.ready ? [] : ['**Not ready**: unloaded, or still loading; its requests are refused until it is loaded.', '']),
    `Platform \`${model.metadata.platform}\`, version ${model.version} (ready versions: ${model.metadata.versions.join(', ') || 'none'}), ` +
      (maxBatchSize > 0 ? `batches up to ${maxBatchSize} (the first dim of every tensor is the batch)` : 'no batching') +
      (!servedByOneResponse(model) ? '; decoupled: infer with `generate_stream` or gRPC streaming, not `/infer`.' : '.'),
    '',
    '| input | datatype | shape |',
    '|---|---|---|',
    ...model.inputs.map(row),
    '',
    '| output | datatype | shape |',
    '|---|---|---|',
    ...model.outputs.map(row),
    ...(parameters.length > 0 ? ['', 'Parameters: ' + parameters.map(([k, v]) => `\`${k}\` = \`${v.string_value ?? ''}\``).join(', ')] : []),
    '',
    '[The server\'s API](/v2/docs)',
  ].join('\n');
}
