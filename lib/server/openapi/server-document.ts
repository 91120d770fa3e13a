import type { ModelView } from '../../model/model-view';
import { modelPath } from '../../protocol/model-path';
import type { ApiGroup } from '../restricted-api';
import type { ServerMetadata } from '../server-core';
import { INFER_ERRORS, MODEL_LOOKUP_ERRORS } from './error-responses';
import { jsonContent, ref, type OpenApiDocument, type OpenApiObject } from './json-schema';
import { INFERENCE_HEADER, KSERVE_SCHEMAS, SERVER_SCHEMAS } from './kserve-schemas';
import { emptyAnswer, pathParameter, PathsBuilder, type OperationSpec } from './operations';
import type { DocumentSecurity } from './security';

/** What the server's document describes beside its fixed routes. */
export interface ServerDocumentSource {
  readonly metadata: ServerMetadata;
  /** The served models, listed with a link to each one's page; none when the server's metadata is restricted. */
  readonly models: readonly ModelView[];
  /** The OpenAI-compatible API is served under `/v1` (`openai`), with `openaiApiKey` when `bearer`. */
  readonly openai: { readonly bearer: boolean } | undefined;
}

/** The path parameter `model_name`. */
const MODEL_NAME = 'model_name';
const MODEL_VERSION = 'model_version';

/**
 * The OpenAPI 3.1 document of the HTTP API as this server serves it (`GET /v2/docs/dataplane.json`): health,
 * metadata, infer in its JSON and binary forms, the generate extension, the repository, statistics, shared-memory,
 * trace and logging extensions, the documents themselves, and the OpenAI-compatible routes when they are on; with
 * the security schemes of the restricted API groups.
 */
export function serverDocument(source: ServerDocumentSource, security: DocumentSecurity): OpenApiDocument {
  const paths = new PathsBuilder(security);
  const names = [...new Set(source.models.map((m) => m.name))];
  const modelName = pathParameter(MODEL_NAME, 'the model', names);
  const version = pathParameter(MODEL_VERSION, 'the version');
  /** A model route at `/v2/models/{model_name}` and `/v2/models/{model_name}/versions/{model_version}`. */
  const modelRoute = (suffix: string, method: 'get' | 'post', id: string, spec: OperationSpec): void => {
    paths.add(`/v2/models/{${MODEL_NAME}}${suffix}`, method, id, { ...spec, parameters: [modelName, ...(spec.parameters ?? [])] });
    paths.add(`/v2/models/{${MODEL_NAME}}/versions/{${MODEL_VERSION}}${suffix}`, method, `${id}Version`, { ...spec, parameters: [modelName, version, ...(spec.parameters ?? [])] });
  };
  const json = (name: string, description = 'the answer'): Record<string, OpenApiObject> => ({ '200': { description, content: jsonContent(ref(name)) } });
  const body = (name: string): OpenApiObject => ({ required: true, content: jsonContent(ref(name)) });
  const empty = { '200': emptyAnswer('done') };

  paths.add('/v2/health/live', 'get', 'serverLive', { summary: 'Server liveness', tags: ['health'], ok: { '200': emptyAnswer('live') }, errors: [] });
  paths.add('/v2/health/ready', 'get', 'serverReady', { summary: 'Server readiness (400 when not ready)', tags: ['health'], ok: { '200': emptyAnswer('ready') }, errors: [] });
  paths.add('/v2', 'get', 'serverMetadata', { summary: 'Server metadata', tags: ['metadata'], ok: json('ServerMetadata') });
  modelRoute('', 'get', 'modelMetadata', { summary: 'Model metadata', tags: ['metadata'], ok: json('ModelMetadata'), errors: MODEL_LOOKUP_ERRORS });
  modelRoute('/ready', 'get', 'modelReady', { summary: 'Model readiness', tags: ['health'], ok: { '200': emptyAnswer('ready') }, errors: ['MODEL_NOT_READY', 'MODEL_NOT_FOUND'] });
  modelRoute('/config', 'get', 'modelConfig', { summary: 'Model configuration', tags: ['metadata'], ok: json('ModelConfig'), errors: MODEL_LOOKUP_ERRORS });
  modelRoute('/infer', 'post', 'modelInfer', {
    summary: 'Inference (each model\'s own request schema is in its document: /v2/models/{model_name}/docs/dataplane.json)',
    tags: ['inference'],
    requestBody: {
      required: true,
      content: {
        ...jsonContent(ref('InferRequest')),
        'application/octet-stream': { schema: { type: 'string', format: 'binary', description: `binary tensor extension: the JSON request (its length in ${INFERENCE_HEADER}), then the tensors` } },
      },
    },
    ok: { '200': { description: 'the outputs', content: { ...jsonContent(ref('InferResponse')), 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } } },
    errors: INFER_ERRORS,
  });
  modelRoute('/generate', 'post', 'modelGenerate', { summary: 'Generate extension: one response', tags: ['inference'], requestBody: body('GenerateRequest'), ok: json('GenerateResponse'), errors: INFER_ERRORS });
  modelRoute('/generate_stream', 'post', 'modelGenerateStream', {
    summary: 'Generate extension: Server-Sent Events, `data: {...}` per response',
    tags: ['inference'],
    requestBody: body('GenerateRequest'),
    ok: { '200': { description: 'one event per response', content: { 'text/event-stream': { schema: { type: 'string' } } } } },
    errors: INFER_ERRORS,
  });
  modelRoute('/stats', 'get', 'modelStatistics', { summary: 'Model statistics', tags: ['statistics'], ok: json('ModelStatistics'), errors: ['MODEL_NOT_FOUND'] });
  paths.add('/v2/models/stats', 'get', 'statistics', { summary: 'Statistics of every ready model', tags: ['statistics'], ok: json('ModelStatistics') });
  for (const [path, id, params] of [['/v2/trace/setting', 'traceSetting', []], [`/v2/models/{${MODEL_NAME}}/trace/setting`, 'modelTraceSetting', [modelName]]] as const) {
    paths.add(path, 'get', id, { summary: 'Trace settings', tags: ['trace'], parameters: params, ok: json('TraceSettings'), errors: ['MODEL_NOT_FOUND', 'MODEL_VERSION_NOT_FOUND'] });
    paths.add(path, 'post', `${id}Update`, { summary: 'Change trace settings', tags: ['trace'], parameters: params, requestBody: body('TraceSettings'), ok: json('TraceSettings'), errors: ['INVALID_ARGUMENT', 'MODEL_NOT_FOUND', 'MODEL_VERSION_NOT_FOUND'] });
  }
  paths.add('/v2/logging', 'get', 'logSettings', { summary: 'Log settings', tags: ['logging'], ok: json('LogSettings') });
  paths.add('/v2/logging', 'post', 'logSettingsUpdate', { summary: 'Change log settings', tags: ['logging'], requestBody: body('LogSettings'), ok: json('LogSettings'), errors: ['INVALID_ARGUMENT'] });
  paths.add('/v2/repository/index', 'post', 'repositoryIndex', { summary: 'Repository index', tags: ['repository'], requestBody: body('RepositoryIndexRequest'), ok: json('RepositoryIndex'), errors: ['INVALID_ARGUMENT'] });
  const controlErrors = ['INVALID_ARGUMENT', 'MODEL_NOT_FOUND', 'UNSUPPORTED'] as const;
  paths.add(`/v2/repository/models/{${MODEL_NAME}}/load`, 'post', 'repositoryModelLoad', {
    summary: 'Load a model (model control mode explicit)',
    tags: ['repository'],
    parameters: [pathParameter(MODEL_NAME, 'the model')],
    requestBody: body('RepositoryLoadRequest'),
    ok: empty,
    errors: controlErrors,
  });
  paths.add(`/v2/repository/models/{${MODEL_NAME}}/unload`, 'post', 'repositoryModelUnload', {
    summary: 'Unload a model (model control mode explicit)',
    tags: ['repository'],
    parameters: [modelName],
    requestBody: body('RepositoryUnloadRequest'),
    ok: empty,
    errors: controlErrors,
  });
  for (const kind of ['system', 'cuda'] as const) {
    const base = `/v2/${kind}sharedmemory`;
    const region = pathParameter('region_name', 'the region');
    const tags = ['shared memory'];
    paths.add(`${base}/status`, 'get', `${kind}SharedMemoryStatus`, { summary: `${kind} shared-memory regions`, tags, ok: json('SharedMemoryStatus') });
    paths.add(`${base}/region/{region_name}/status`, 'get', `${kind}SharedMemoryRegionStatus`, { summary: `One ${kind} shared-memory region`, tags, parameters: [region], ok: json('SharedMemoryStatus'), errors: ['NOT_FOUND'] });
    paths.add(`${base}/region/{region_name}/register`, 'post', `${kind}SharedMemoryRegister`, {
      summary: `Register a ${kind} shared-memory region${kind === 'cuda' ? ' (refused: no CUDA IPC)' : ' (allowSharedMemory)'}`,
      tags,
      parameters: [region],
      requestBody: body('SharedMemoryRegister'),
      ok: empty,
      errors: ['INVALID_ARGUMENT', 'UNSUPPORTED', 'ALREADY_EXISTS'],
    });
    paths.add(`${base}/unregister`, 'post', `${kind}SharedMemoryUnregisterAll`, { summary: `Unregister every ${kind} shared-memory region`, tags, ok: empty });
    paths.add(`${base}/region/{region_name}/unregister`, 'post', `${kind}SharedMemoryUnregister`, { summary: `Unregister a ${kind} shared-memory region`, tags, parameters: [region], ok: empty });
  }
  const html = { '200': { description: 'the API reference page', content: { 'text/html': { schema: { type: 'string' } } } } };
  const document = { '200': { description: 'the OpenAPI 3.1 document', content: jsonContent({ type: 'object' }) } };
  paths.add('/v2/docs', 'get', 'serverDocs', { summary: "The server API's reference page", tags: ['docs'], ok: html });
  paths.add('/v2/docs/dataplane.json', 'get', 'serverDocument', { summary: "The server API's OpenAPI document (this one)", tags: ['docs'], ok: document });
  paths.add(`/v2/models/{${MODEL_NAME}}/docs`, 'get', 'modelDocs', { summary: "A model's reference page", tags: ['docs'], parameters: [modelName], ok: html, errors: ['MODEL_NOT_FOUND'] });
  paths.add(`/v2/models/{${MODEL_NAME}}/docs/dataplane.json`, 'get', 'modelDocument', { summary: "A model's OpenAPI document", tags: ['docs'], parameters: [modelName], ok: document, errors: ['MODEL_NOT_FOUND'] });
  if (source.openai) addOpenAi(paths, source.openai.bearer, security);

  const schemes: Record<string, OpenApiObject> = { ...security.schemes(), ...(source.openai?.bearer && { openai_api_key: { type: 'http', scheme: 'bearer', description: 'openaiApiKey' } }) };
  return {
    openapi: '3.1.0',
    info: { title: `${source.metadata.name} HTTP API`, version: source.metadata.version, description: serverDescription(source) },
    paths: paths.paths,
    components: { schemas: { ...KSERVE_SCHEMAS, ...SERVER_SCHEMAS }, ...(Object.keys(schemes).length > 0 && { securitySchemes: schemes }) },
  };
}

/**
 * The OpenAI-compatible routes (docs/openai.md); their bodies are OpenAI's. Each needs the bearer key with
 * `openaiApiKey`, and its restricted group's header (openAiApiGroup: the POST routes are `inference`, the model list
 * `model-repository`).
 */
function addOpenAi(paths: PathsBuilder, bearer: boolean, restricted: DocumentSecurity): void {
  const securityOf = (group: ApiGroup) => {
    const requirement = { ...(bearer && { openai_api_key: [] }), ...restricted.groupRequirement(group)?.[0] };
    return Object.keys(requirement).length > 0 ? { security: [requirement] } : {};
  };
  const any = { type: 'object', additionalProperties: true };
  const ok = { '200': { description: "OpenAI's answer (Server-Sent Events with `stream: true`)", content: { ...jsonContent(any), 'text/event-stream': { schema: { type: 'string' } } } } };
  const error = { default: { description: "OpenAI's error shape", content: jsonContent(any) } };
  const tags = ['openai'];
  const list = securityOf('model-repository');
  paths.paths['/v1/models'] = { get: { operationId: 'openaiModels', summary: 'The models', tags, responses: { '200': { description: 'the list', content: jsonContent(any) }, ...error }, ...list } };
  paths.paths['/v1/models/{model}'] = {
    get: { operationId: 'openaiModel', summary: 'One model', tags, parameters: [pathParameter('model', 'the model')], responses: { '200': { description: 'the model', content: jsonContent(any) }, ...error }, ...list },
  };
  for (const [path, id] of [['/v1/completions', 'openaiCompletions'], ['/v1/chat/completions', 'openaiChatCompletions'], ['/v1/embeddings', 'openaiEmbeddings']] as const) {
    paths.paths[path] = { post: { operationId: id, summary: path, tags, requestBody: { required: true, content: jsonContent(any) }, responses: { ...ok, ...error }, ...securityOf('inference') } };
  }
}

/** The document's description: what the server serves, with a link to each model's page. */
function serverDescription(source: ServerDocumentSource): string {
  const models = [...new Map(source.models.map((m) => [m.name, m])).values()];
  return [
    `KServe v2 HTTP API with Triton's extensions: ${source.metadata.extensions.join(', ')}.`,
    '',
    models.length > 0 ? '## Models' : '',
    ...models.map((m) => `- [${m.name}](${modelPath(m.name)}/docs) (version ${m.version}${m.ready ? '' : ', not ready'}): [document](${modelPath(m.name)}/docs/dataplane.json)`),
  ].join('\n');
}
