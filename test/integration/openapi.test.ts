import type { Triton, TritonConfigInit } from '../../lib';
import type { OpenApiDocument } from '../../lib/server/openapi/json-schema';
import { componentValidator, schemaValidator, validateOpenApi } from '../helpers/openapi-check';
import { bindOpenApiModels } from '../helpers/openapi-models';
import { track } from '../helpers/resources';
import { loopbackTriton } from '../helpers/loopback-triton';

const MODELS = ['add_sub', 'mixed', 'plain'];

async function start(config: TritonConfigInit = {}): Promise<{ triton: Triton; base: string }> {
  const triton = track(loopbackTriton({ exitTimeoutSeconds: 5, ...config }));
  bindOpenApiModels(triton);
  await triton.run();
  return { triton, base: `http://127.0.0.1:${triton.ports.http}` };
}

/** The example of a model's document, as its infer operation carries it. */
function exampleOf(document: OpenApiDocument, model: string): Record<string, unknown> {
  const infer = document.paths[`/v2/models/${model}/infer`] as { post: { requestBody: { content: Record<string, { example: Record<string, unknown> }> } } };
  return infer.post.requestBody.content['application/json']!.example;
}

/** An infer body: the JSON request, then `binary` zero bytes after it when given (its length in Inference-Header-Content-Length). */
function inferBody(json: unknown, binary: number | undefined): { body: Buffer; headers: Record<string, string> } {
  const head = Buffer.from(JSON.stringify(json));
  if (binary === undefined) return { body: head, headers: { 'Content-Type': 'application/json' } };
  return { body: Buffer.concat([head, Buffer.alloc(binary)]), headers: { 'Inference-Header-Content-Length': String(head.length) } };
}

/** The bytes the binary inputs of a request take (FP16: 2 per element); undefined when it has none. */
function binaryBytes(request: { inputs?: { parameters?: { binary_data_size?: number } }[] }): number | undefined {
  const sizes = (request.inputs ?? []).flatMap((i) => (i.parameters?.binary_data_size === undefined ? [] : [i.parameters.binary_data_size]));
  return sizes.length === 0 ? undefined : sizes.reduce((a, b) => a + b, 0);
}

describe('OpenAPI documents', () => {
  let triton: Triton;
  let base: string;

  beforeAll(async () => {
    ({ triton, base } = await start({ openai: true, httpRestrictedApi: 'model-repository:admin-key=secret' }));
  });
  afterAll(async () => {
    await triton?.stop();
  });

  const getJson = async <T>(path: string): Promise<T> => {
    const res = await fetch(`${base}${path}`);
    expect(res.status).toBe(200);
    return (await res.json()) as T;
  };

  it("the server's document is valid OpenAPI 3.1, lists every model, and shows the restricted group's scheme", async () => {
    const document = await getJson<OpenApiDocument>('/v2/docs/dataplane.json');
    await validateOpenApi(document);
    expect(document.openapi).toBe('3.1.0');
    for (const path of ['/v2/health/ready', '/v2/models/{model_name}/infer', '/v2/models/{model_name}/generate_stream', '/v2/repository/index', '/v2/systemsharedmemory/status', '/v2/logging', '/v2/trace/setting', '/v2/models/stats', '/v1/chat/completions']) {
      expect(Object.keys(document.paths)).toContain(path);
    }
    for (const model of MODELS) expect(String(document.info.description)).toContain(`(/v2/models/${model}/docs)`);
    expect(document.components.securitySchemes).toEqual({ 'header_admin-key': expect.objectContaining({ type: 'apiKey', in: 'header', name: 'admin-key' }) });
    const index = document.paths['/v2/repository/index'] as { post: { security: unknown; responses: Record<string, unknown> } };
    expect(index.post.security).toEqual([{ 'header_admin-key': [] }]);
    expect(Object.keys(index.post.responses)).toContain('403');
    expect((document.paths['/v2/models/{model_name}/infer'] as { post: { security?: unknown } }).post.security).toBeUndefined();
    // The OpenAI model list is in the same group (model-repository); its completions are not restricted here.
    expect((document.paths['/v1/models'] as { get: { security?: unknown } }).get.security).toEqual([{ 'header_admin-key': [] }]);
    expect((document.paths['/v1/chat/completions'] as { post: { security?: unknown } }).post.security).toBeUndefined();
    // The key's value is never in the document.
    expect(JSON.stringify(document)).not.toContain('secret');
  });

  it("the server's answers to every GET of its document (and the repository index) match the documented schemas", async () => {
    const document = await getJson<OpenApiDocument>('/v2/docs/dataplane.json');
    type Operation = { responses: Record<string, { content?: Record<string, { schema: object }> }> };
    const checked: string[] = [];
    for (const [template, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item as Record<string, Operation>)) {
        const schema = operation.responses['200']?.content?.['application/json']?.schema;
        const repositoryIndex = template === '/v2/repository/index';
        if (schema === undefined || (method !== 'get' && !repositoryIndex) || template.includes('{region_name}') || template.startsWith('/v1/models/')) continue;
        const path = template.replace('{model_name}', 'add_sub').replace('{model_version}', '1');
        // The key of the restricted group (the repository, and OpenAI's model list) goes with every request.
        const headers = { 'admin-key': 'secret' };
        const res = await fetch(`${base}${path}`, repositoryIndex ? { method: 'POST', body: '{}', headers } : { headers });
        expect({ path, status: res.status }).toEqual({ path, status: 200 });
        const validate = schemaValidator(document, schema);
        const answer: unknown = await res.json();
        expect({ path, valid: validate(answer), errors: validate.errors ?? null }).toEqual({ path, valid: true, errors: null });
        checked.push(path);
      }
    }
    expect(checked).toEqual(expect.arrayContaining(['/v2', '/v2/models/add_sub', '/v2/models/add_sub/versions/1/config', '/v2/models/stats', '/v2/logging', '/v2/trace/setting', '/v2/systemsharedmemory/status', '/v2/repository/index', '/v1/models']));
  });

  it.each(MODELS)('%s: its document is valid OpenAPI 3.1 and its example is answered 200 as documented', async (model) => {
    const document = await getJson<OpenApiDocument>(`/v2/models/${model}/docs/dataplane.json`);
    await validateOpenApi(document);
    const example = exampleOf(document, model);
    const validRequest = componentValidator(document, 'InferRequest');
    expect(validRequest(example)).toBe(true);
    const { body, headers } = inferBody(example, binaryBytes(example));
    const res = await fetch(`${base}/v2/models/${model}/infer`, { method: 'POST', body, headers });
    const text = await res.text();
    expect({ status: res.status, text }).toEqual({ status: 200, text: expect.any(String) });
    const answer = JSON.parse(text) as { outputs: { name: string }[] };
    const validResponse = componentValidator(document, 'InferResponse');
    expect({ valid: validResponse(answer), errors: validResponse.errors ?? null }).toEqual({ valid: true, errors: null });
    const metadata = await getJson<{ outputs: { name: string }[] }>(`/v2/models/${model}`);
    expect(answer.outputs.map((o) => o.name).sort()).toEqual(metadata.outputs.map((o) => o.name).sort());
  });

  it('builds the example from the warmup where the model has one, and the smallest valid shape otherwise', async () => {
    const addSub = exampleOf(await getJson<OpenApiDocument>('/v2/models/add_sub/docs/dataplane.json'), 'add_sub');
    expect(addSub.inputs).toEqual([
      { name: 'a', datatype: 'FP32', shape: [2, 3], data: [0, 0, 0, 0, 0, 0] },
      { name: 'b', datatype: 'FP32', shape: [2, 3], data: [0, 0, 0, 0, 0, 0] },
    ]);
    const plain = exampleOf(await getJson<OpenApiDocument>('/v2/models/plain/docs/dataplane.json'), 'plain');
    expect(plain.inputs).toEqual([{ name: 'x', datatype: 'INT32', shape: [2, 1], data: [0, 0] }]);
    const doc = await getJson<OpenApiDocument>('/v2/models/add_sub/docs/dataplane.json');
    expect(doc['x-triton-model']).toEqual(expect.objectContaining({ max_batch_size: 8, parameters: { units: { string_value: 'metres' } } }));
  });

  describe('the mixed model (FP16, BYTES, BOOL, INT64; a variable and a batch dim)', () => {
    const half = (rows: number, n: number) => ({ name: 'half', datatype: 'FP16', shape: [rows, n], parameters: { binary_data_size: rows * n * 2 } });
    const text = (rows: number) => ({ name: 'text', datatype: 'BYTES', shape: [rows, 2], data: Array.from({ length: rows * 2 }, (_, i) => `t${i}`) });
    const flags = (rows: number, n: number) => ({ name: 'flags', datatype: 'BOOL', shape: [rows, n], data: Array.from({ length: rows * n }, (_, i) => i % 2 === 0) });
    const ids = (rows: number) => ({ name: 'ids', datatype: 'INT64', shape: [rows, 2], data: Array.from({ length: rows * 2 }, (_, i) => i) });
    const valid = (rows: number, n: number) => [half(rows, n), text(rows), flags(rows, n), ids(rows)];
    const cases: [string, boolean, { inputs: Record<string, unknown>[] }][] = [
      ['one row', true, { inputs: valid(1, 3) }],
      ['a full batch of 4, variable dims of 5', true, { inputs: valid(4, 5) }],
      ['an empty variable dim', true, { inputs: valid(2, 0) }],
      ['nested data', true, { inputs: [half(1, 2), { ...text(1), data: [['a', 'b']] }, flags(1, 2), ids(1)] }],
      ['INT64 input sent as INT32', false, { inputs: [half(1, 1), text(1), flags(1, 1), { ...ids(1), datatype: 'INT32' }] }],
      ['BYTES input with 3 elements a row', false, { inputs: [half(1, 1), { ...text(1), shape: [1, 3], data: ['a', 'b', 'c'] }, flags(1, 1), ids(1)] }],
      ['no batch dim', false, { inputs: [half(1, 1), text(1), flags(1, 1), { ...ids(1), shape: [2] }] }],
      ['a batch over max_batch_size', false, { inputs: valid(5, 1) }],
      ['FP16 as JSON data', false, { inputs: [{ name: 'half', datatype: 'FP16', shape: [1, 1], data: [0] }, text(1), flags(1, 1), ids(1)] }],
      ['BOOL data as numbers', false, { inputs: [half(1, 2), text(1), { ...flags(1, 2), data: [1, 0] }, ids(1)] }],
      ['BYTES data as numbers', false, { inputs: [half(1, 1), { ...text(1), data: [1, 2] }, flags(1, 1), ids(1)] }],
      ['INT64 data with a fraction', false, { inputs: [half(1, 1), text(1), flags(1, 1), { ...ids(1), data: [1.5, 2] }] }],
      ['an input missing', false, { inputs: [half(1, 1), text(1), flags(1, 1)] }],
      ['an input the model does not have', false, { inputs: [...valid(1, 1), { name: 'extra', datatype: 'INT64', shape: [1, 2], data: [1, 2] }] }],
    ];

    it.each(cases)('%s: the schema says %s, and so does the server', async (_what, expected, request) => {
      const document = await getJson<OpenApiDocument>('/v2/models/mixed/docs/dataplane.json');
      const schemaAccepts = componentValidator(document, 'InferRequest')(request);
      const { body, headers } = inferBody(request, binaryBytes(request));
      const res = await fetch(`${base}/v2/models/mixed/infer`, { method: 'POST', body, headers });
      const answer = await res.text();
      expect({ schema: schemaAccepts, server: res.status === 200, answer: expected ? answer : '' }).toEqual({ schema: expected, server: expected, answer: expected ? expect.stringContaining('"outputs"') : '' });
      if (!expected) expect(res.status).toBe(400);
    });
  });

  it('serves the page and its files with a content security policy of its own files only', async () => {
    for (const path of ['/v2/docs', '/v2/models/add_sub/docs']) {
      const res = await fetch(`${base}${path}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      const csp = res.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
      const html = await res.text();
      expect(html).toContain(`data-document="${path}/dataplane.json"`);
      expect(html).not.toMatch(/https?:\/\//);
    }
    for (const file of ['swagger-ui-bundle.js', 'swagger-ui.css', 'docs-page.js']) {
      const res = await fetch(`${base}/v2/docs/assets/${file}`);
      expect(res.status).toBe(200);
      expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(1000);
    }
    expect((await fetch(`${base}/v2/docs/assets/index.html`)).status).toBe(404);
    expect((await fetch(`${base}/v2/docs/dataplane.json`, { method: 'POST' })).status).toBe(405);
    const unknown = await fetch(`${base}/v2/models/nope/docs/dataplane.json`);
    expect({ status: unknown.status, body: await unknown.json() }).toEqual({ status: 400, body: { error: "Request for unknown model: 'nope' is not found" } });
  });
});

describe('OpenAPI documents with the metadata group restricted', () => {
  it('serves the pages, restricts a model\'s document as its metadata, and leaves the models out of the server\'s', async () => {
    const { triton, base } = await start({ httpRestrictedApi: 'metadata:meta-key=s3cret' });
    try {
      triton.bind({ modelName: 'docs', inferFunc: async (requests) => requests.map((r) => ({ y: r.inputs.x! })), inputs: [{ name: 'x', dtype: 'INT32', shape: [1] }], outputs: [{ name: 'y', dtype: 'INT32', shape: [1] }] });
      expect((await fetch(`${base}/v2/models/add_sub/docs`)).status).toBe(200);
      const without = await fetch(`${base}/v2/models/add_sub/docs/dataplane.json`);
      expect({ status: without.status, body: await without.json() }).toEqual({ status: 403, body: { error: "This API is restricted, expecting header 'meta-key'" } });
      const withKey = await fetch(`${base}/v2/models/add_sub/docs/dataplane.json`, { headers: { 'meta-key': 's3cret' } });
      expect(withKey.status).toBe(200);
      const model = (await withKey.json()) as OpenApiDocument;
      expect((model.paths['/v2/models/add_sub'] as { get: { security: unknown } }).get.security).toEqual([{ 'header_meta-key': [] }]);
      const server = (await (await fetch(`${base}/v2/docs/dataplane.json`)).json()) as OpenApiDocument;
      expect(String(server.info.description)).not.toContain('/v2/models/add_sub');
      expect((server.paths['/v2/models/{model_name}'] as { get: { parameters: { schema: object }[] } }).get.parameters[0]!.schema).toEqual({ type: 'string' });
      // A model named "docs": its metadata is still restricted, only the pages are open.
      expect((await fetch(`${base}/v2/models/docs`)).status).toBe(403);
      expect((await fetch(`${base}/v2/models/docs/docs`)).status).toBe(200);
    } finally {
      await triton.stop();
    }
  });
});

describe('OpenAPI documents turned off', () => {
  it('answers 404 on every docs path with openapiDocs false', async () => {
    const { triton, base } = await start({ openapiDocs: false });
    try {
      for (const path of ['/v2/docs', '/v2/docs/dataplane.json', '/v2/docs/assets/swagger-ui-bundle.js', '/v2/docs/assets/docs-page.js', '/v2/models/add_sub/docs', '/v2/models/add_sub/docs/dataplane.json']) {
        const res = await fetch(`${base}${path}`);
        expect({ path, status: res.status, body: await res.json() }).toEqual({ path, status: 404, body: { error: 'Not Found' } });
      }
      // The rest of the API is still there.
      expect((await fetch(`${base}/v2/models/add_sub`)).status).toBe(200);
    } finally {
      await triton.stop();
    }
  });
});
