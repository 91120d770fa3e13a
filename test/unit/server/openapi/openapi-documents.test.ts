import { Triton, type TritonConfigInit } from '../../../../lib';
import type { OpenApiDocument } from '../../../../lib/server/openapi/json-schema';
import { OpenApiDocuments } from '../../../../lib/server/openapi/openapi-documents';
import { exampleRequest } from '../../../../lib/server/openapi/example-request';
import { DATA_TYPES, type DataType } from '../../../../lib/tensor/dtype';
import { componentValidator, validateOpenApi } from '../../../helpers/openapi-check';

// The documents built from bound models, without a server: a model's description is what bind() derives, and
// documents are made from it as the HTTP routes make them.

const echo = async (requests: readonly { inputs: Readonly<Record<string, unknown>> }[]) => requests.map(() => ({}));
let triton: Triton;

function server(config: TritonConfigInit = {}): Triton {
  triton = new Triton({ allowHttp: false, allowGrpc: false, allowMetrics: false, logLevel: 'silent', ...config });
  return triton;
}

afterEach(async () => {
  await triton?.stop();
});

const inputsOf = (document: OpenApiDocument) =>
  (document.paths['/v2/models/all/infer'] as { post: { requestBody: { content: Record<string, { example: { inputs: { name: string }[] } }> } } }).post.requestBody.content['application/json']!.example;

describe('a model with an input of every datatype', () => {
  const dtypes = DATA_TYPES;
  let document: OpenApiDocument;

  beforeEach(async () => {
    server().bind({
      modelName: 'all',
      inferFunc: echo as never,
      inputs: dtypes.map((dtype) => ({ name: `in_${dtype}`, dtype, shape: [2] })),
      outputs: dtypes.map((dtype) => ({ name: `out_${dtype}`, dtype, shape: [2] })),
      config: { maxBatchSize: 2 },
    });
    document = new OpenApiDocuments(triton).modelDocument('all');
    await validateOpenApi(document);
  });

  it('has an example the schema accepts: JSON zeros, and FP16/BF16 as binary; it asks for FP16/BF16 outputs as binary', () => {
    const example = inputsOf(document) as unknown as { inputs: Record<string, unknown>[]; outputs: Record<string, unknown>[] };
    expect(componentValidator(document, 'InferRequest')(example)).toBe(true);
    const byName = new Map(example.inputs.map((i) => [i.name, i]));
    expect(byName.get('in_BOOL')).toEqual({ name: 'in_BOOL', datatype: 'BOOL', shape: [1, 2], data: [false, false] });
    expect(byName.get('in_BYTES')).toEqual({ name: 'in_BYTES', datatype: 'BYTES', shape: [1, 2], data: ['', ''] });
    expect(byName.get('in_FP16')).toEqual({ name: 'in_FP16', datatype: 'FP16', shape: [1, 2], parameters: { binary_data_size: 4 } });
    expect(byName.get('in_BF16')).toEqual({ name: 'in_BF16', datatype: 'BF16', shape: [1, 2], parameters: { binary_data_size: 4 } });
    expect(example.outputs.filter((o) => o.parameters !== undefined).map((o) => o.name)).toEqual(['out_FP16', 'out_BF16']);
    expect(exampleRequest(triton.repository.find('all')).binaryBytes).toBe(8);
  });

  it.each<[DataType, unknown, boolean]>([
    ['UINT8', 255, true],
    ['UINT8', 256, false],
    ['UINT8', -1, false],
    ['INT8', -128, true],
    ['INT8', -129, false],
    ['INT32', 2 ** 31, false],
    ['UINT64', -1, false],
    ['INT64', 2 ** 60, true],
    ['FP32', 1.5, true],
    ['FP32', '1.5', false],
    ['FP64', null, false],
    ['BOOL', true, true],
    ['BOOL', 1, false],
    ['BYTES', 'x', true],
  ])('%s data [%p, <zero>]: the schema says %s', (dtype, value, valid) => {
    const example = structuredClone(inputsOf(document)) as unknown as { inputs: { name: string; data?: unknown[] }[] };
    const input = example.inputs.find((i) => i.name === `in_${dtype}`)!;
    input.data = [value, (input.data as unknown[])[1]];
    expect(componentValidator(document, 'InferRequest')(example)).toBe(valid);
  });
});

describe('documents of other kinds of model and server', () => {
  it('a decoupled model has no infer route (it answers /infer with 501)', async () => {
    server().bind({
      modelName: 'stream',
      inferFunc: (async function* () {}) as never,
      inputs: [{ name: 'TEXT', dtype: 'BYTES', shape: [1] }],
      outputs: [{ name: 'WORD', dtype: 'BYTES', shape: [1] }],
      config: { batching: false, decoupled: true },
    });
    const document = new OpenApiDocuments(triton).modelDocument('stream');
    await validateOpenApi(document);
    expect(Object.keys(document.paths)).toEqual(['/v2/models/stream', '/v2/models/stream/ready', '/v2/models/stream/config']);
    expect(document['x-triton-model']).toEqual(expect.objectContaining({ decoupled: true, max_batch_size: 0 }));
    expect(String(document.info.description)).toContain('generate_stream');
  });

  it('one scheme per header, naming every group it guards; the bearer key of the OpenAI routes', async () => {
    server({ httpRestrictedApi: 'model-repository,logging:admin-key=a;inference:infer-key=b', openai: true, openaiApiKey: 'k' });
    const document = new OpenApiDocuments(triton).serverDocument();
    await validateOpenApi(document);
    expect(document.components.securitySchemes).toEqual({
      'header_admin-key': expect.objectContaining({ name: 'admin-key', 'x-api-groups': ['model-repository', 'logging'] }),
      'header_infer-key': expect.objectContaining({ name: 'infer-key', 'x-api-groups': ['inference'] }),
      openai_api_key: { type: 'http', scheme: 'bearer', description: 'openaiApiKey' },
    });
    const security = (path: string, method: string) => (document.paths[path] as Record<string, { security?: unknown }>)[method]!.security;
    expect(security('/v2/logging', 'post')).toEqual([{ 'header_admin-key': [] }]);
    expect(security('/v2/models/{model_name}/versions/{model_version}/infer', 'post')).toEqual([{ 'header_infer-key': [] }]);
    expect(security('/v1/chat/completions', 'post')).toEqual([{ openai_api_key: [], 'header_infer-key': [] }]);
    expect(security('/v2/health/ready', 'get')).toBeUndefined();
    expect(JSON.stringify(document)).not.toMatch(/"(a|b|k)"/);
  });
});
