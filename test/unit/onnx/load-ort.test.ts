import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { TritonError } from '../../../lib/base/errors';
import { ORT_MISSING_MESSAGE, isOrtMissing, loadOrt, type OrtModule } from '../../../lib/onnx/load-ort';

/** A load that fails as Node does: an Error with a code. */
const failing = (code: string, message: string) => () => Promise.reject(Object.assign(new Error(message), { code })) as Promise<OrtModule>;

describe('loadOrt', () => {
  it('loads onnxruntime-node when it is installed', async () => {
    const ort = await loadOrt();
    expect(typeof ort.InferenceSession.create).toBe('function');
  });

  it('turns a real failed resolution of the package into an INVALID_CONFIG error that says how to install it', async () => {
    // A require() rooted in an empty folder, outside this project's node_modules, cannot find the package.
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'tstriton-no-ort-'));
    try {
      const requireThere = createRequire(path.join(empty, 'index.js'));
      const err = await loadOrt(async () => requireThere('onnxruntime-node') as OrtModule).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TritonError);
      expect(err).toMatchObject({ code: 'INVALID_CONFIG', message: ORT_MISSING_MESSAGE });
      expect(((err as TritonError).cause as { code?: string }).code).toBe('MODULE_NOT_FOUND');
    } finally {
      fs.rmSync(empty, { recursive: true, force: true });
    }
  });

  it('names the package, the install command and the setting that skips the CUDA download', () => {
    expect(ORT_MISSING_MESSAGE).toBe(
      "serving ONNX models needs the 'onnxruntime-node' package: npm install onnxruntime-node (set ONNXRUNTIME_NODE_INSTALL=skip to skip its CUDA download)",
    );
  });

  it.each([
    ['MODULE_NOT_FOUND', "Cannot find module 'onnxruntime-node'\nRequire stack:\n- /app/node_modules/tstriton/dist/lib/onnx/load-ort.js"],
    ['ERR_MODULE_NOT_FOUND', "Cannot find package 'onnxruntime-node' imported from /app/node_modules/tstriton/dist/lib/onnx/load-ort.js"],
  ])('reports the package missing for %s', async (code, message) => {
    await expect(loadOrt(failing(code, message))).rejects.toMatchObject({ name: 'TritonError', code: 'INVALID_CONFIG', message: ORT_MISSING_MESSAGE });
  });

  it.each([
    ['a dependency of the package', 'MODULE_NOT_FOUND', "Cannot find module 'onnxruntime-common'\nRequire stack:\n- /app/node_modules/onnxruntime-node/dist/index.js"],
    ['its native binary', 'MODULE_NOT_FOUND', "Cannot find module '../bin/napi-v6/linux/x64/onnxruntime_binding.node'"],
    ['a file inside it', 'MODULE_NOT_FOUND', "Cannot find module 'onnxruntime-node/dist/missing.js'"],
    ['a package with a longer name', 'MODULE_NOT_FOUND', "Cannot find module 'onnxruntime-node-gpu'"],
    ['another failure', 'ERR_DLOPEN_FAILED', "Cannot find module 'onnxruntime-node'"],
  ])('passes %s through unchanged', async (_what, code, message) => {
    const err = await loadOrt(failing(code, message)).catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(TritonError);
    expect(err).toMatchObject({ code, message });
  });

  it('recognises only errors with a code and a message', () => {
    expect(isOrtMissing(undefined)).toBe(false);
    expect(isOrtMissing("Cannot find module 'onnxruntime-node'")).toBe(false);
    expect(isOrtMissing(new Error("Cannot find module 'onnxruntime-node'"))).toBe(false);
  });
});
