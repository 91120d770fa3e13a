import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { OpenApiDocument } from '../../lib/server/openapi/json-schema';
import { validateOpenApi } from '../helpers/openapi-check';
import { exitingWithParent, track } from '../helpers/resources';

// `tstriton openapi` in a process of its own, from the sources with the TypeScript hook, as cli.test.ts runs the
// command line: each run loads the models on a server that opens no port, prints a document and exits. A run takes
// up to 30 s on a busy 2-core machine.
jest.setTimeout(120_000);

const ROOT = join(__dirname, '..', '..');
const CLI = ['--require', join(ROOT, 'lib/instances/worker/register-ts.js'), join(ROOT, 'lib/cli/main.ts')];

function runCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TSTRITON_')));
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [...CLI, 'openapi', ...args], { cwd: ROOT, env: exitingWithParent(env), maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, stdout, stderr });
    });
    track(child);
  });
}

describe('tstriton openapi', () => {
  it("prints a module's model document, valid OpenAPI 3.1, with its inputs' schema", async () => {
    const { code, stdout, stderr } = await runCli(['--module', join(ROOT, 'test/fixtures/cli/models.ts'), '--model', 'double']);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    const document = JSON.parse(stdout) as OpenApiDocument;
    await validateOpenApi(document);
    expect(document.info.title).toBe('Model double');
    const request = document.components.schemas.InferRequest as { properties: { inputs: { items: { oneOf: { properties: { name: unknown; datatype: unknown } }[] } } } };
    expect(request.properties.inputs.items.oneOf.map((s) => [s.properties.name, s.properties.datatype])).toEqual([[{ const: 'INPUT0' }, { const: 'FP32' }]]);
  });

  it("prints the server's document with a repository's models, and with the restricted APIs' schemes", async () => {
    const root = mkdtempSync(join(tmpdir(), 'tstriton-openapi-cli-'));
    try {
      mkdirSync(join(root, 'ident', '1'), { recursive: true });
      copyFileSync(join(ROOT, 'test/fixtures/onnx/identity_fp32.onnx'), join(root, 'ident', '1', 'model.onnx'));
      writeFileSync(join(root, 'ident', 'config.pbtxt'), 'platform: "onnxruntime_onnx"\nmax_batch_size: 4\n');
      const { code, stdout, stderr } = await runCli(['--model-repository', root, '--http-restricted-api', 'inference:infer-key=k']);
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
      const document = JSON.parse(stdout) as OpenApiDocument;
      await validateOpenApi(document);
      expect(String(document.info.description)).toContain('- [ident](/v2/models/ident/docs) (version 1)');
      expect(document.components.securitySchemes).toEqual({ 'header_infer-key': expect.objectContaining({ type: 'apiKey', in: 'header', name: 'infer-key' }) });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('fails with one line for a model it does not have, and with the usage code for a file argument', async () => {
    expect(await runCli(['--module', join(ROOT, 'test/fixtures/cli/models.ts'), '--model', 'nope'])).toEqual({ code: 1, stdout: '', stderr: "tstriton: Request for unknown model: 'nope' is not found\n" });
    const file = await runCli(['model.onnx']);
    expect({ code: file.code, stderr: file.stderr }).toEqual({ code: 2, stderr: expect.stringContaining('openapi takes no file arguments') });
  });
});
