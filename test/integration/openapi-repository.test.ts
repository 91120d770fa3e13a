import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Triton } from '../../lib';
import type { OpenApiDocument } from '../../lib/server/openapi/json-schema';
import { componentValidator, validateOpenApi } from '../helpers/openapi-check';
import { track } from '../helpers/resources';
import { loopbackTriton } from '../helpers/loopback-triton';

const IDENTITY = path.join(__dirname, '../fixtures/onnx/identity_fp32.onnx');

// The documents follow the models: a model repository in explicit mode, served by two front-end threads (which
// build the documents from the state the core publishes), gets a new version loaded and a model unloaded.
describe('OpenAPI documents of a model repository, on front-end threads', () => {
  let root: string;
  let triton: Triton | undefined;
  let base: string;

  beforeEach(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'tstriton-openapi-'));
    for (const model of ['ident', 'other']) {
      fs.mkdirSync(path.join(root, model, '1'), { recursive: true });
      fs.copyFileSync(IDENTITY, path.join(root, model, '1', 'model.onnx'));
      fs.writeFileSync(path.join(root, model, 'config.pbtxt'), 'platform: "onnxruntime_onnx"\nmax_batch_size: 4\n');
    }
    triton = track(
      loopbackTriton({
        exitTimeoutSeconds: 5,
        httpThreadCount: 2,
        modelRepository: [root],
        modelControlMode: 'explicit',
        loadModel: ['*'],
      }),
    );
    await triton.run();
    base = `http://127.0.0.1:${triton.ports.http}`;
  });

  afterEach(async () => {
    await triton?.stop();
    triton = undefined;
    fs.rmSync(root, { recursive: true, force: true });
  });

  const document = async (p: string): Promise<OpenApiDocument> => {
    const res = await fetch(`${base}${p}`);
    expect(res.status).toBe(200);
    return (await res.json()) as OpenApiDocument;
  };
  const post = (p: string, body: unknown = {}) => fetch(`${base}${p}`, { method: 'POST', body: JSON.stringify(body) });

  it('a new version and an unload change the documents', async () => {
    const first = await document('/v2/models/ident/docs/dataplane.json');
    await validateOpenApi(first);
    expect([first.info.version, (first['x-triton-model'] as { versions: string[] }).versions]).toEqual(['1', ['1']]);
    const example = (first.paths['/v2/models/ident/infer'] as { post: { requestBody: { content: Record<string, { example: unknown }> } } }).post.requestBody.content['application/json']!.example;
    const answer = await (await post('/v2/models/ident/infer', example)).json();
    expect(componentValidator(first, 'InferResponse')(answer)).toBe(true);

    fs.mkdirSync(path.join(root, 'ident', '2'));
    fs.copyFileSync(IDENTITY, path.join(root, 'ident', '2', 'model.onnx'));
    expect((await post('/v2/repository/models/ident/load')).status).toBe(200);
    const second = await document('/v2/models/ident/docs/dataplane.json');
    expect([second.info.version, (second['x-triton-model'] as { versions: string[] }).versions]).toEqual(['2', ['2']]);
    const versioned = second.paths['/v2/models/ident/versions/{model_version}/infer'] as { post: { parameters: { schema: { enum: string[] } }[] } };
    expect(versioned.post.parameters[0]!.schema.enum).toEqual(['2']);
    // The previous version's answers no longer match: the response schema names the versions served now.
    expect(componentValidator(second, 'InferResponse')(answer)).toBe(false);

    expect(String((await document('/v2/docs/dataplane.json')).info.description)).toContain('- [other](/v2/models/other/docs) (version 1): ');
    expect((await document('/v2/models/other/docs/dataplane.json'))['x-triton-model']).toEqual(expect.objectContaining({ ready: true }));
    // Unloaded, a model is still described, marked not ready, while its metadata endpoint answers Triton's 404.
    expect((await post('/v2/repository/models/other/unload')).status).toBe(200);
    expect((await fetch(`${base}/v2/models/other`)).status).toBe(404);
    expect(String((await document('/v2/docs/dataplane.json')).info.description)).toContain('- [other](/v2/models/other/docs) (version 1, not ready): ');
    const unloaded = await document('/v2/models/other/docs/dataplane.json');
    expect(unloaded['x-triton-model']).toEqual(expect.objectContaining({ ready: false }));
    expect(String(unloaded.info.description)).toContain('Not ready');
  });
});
