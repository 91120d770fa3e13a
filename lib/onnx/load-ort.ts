// The one place that loads onnxruntime-node: an optional peer dependency, needed only to serve ONNX models.
import { TritonError } from '../base/errors';

/** The onnxruntime-node module (types only: this file's declarations are not part of the public API). */
export type OrtModule = typeof import('onnxruntime-node');

/** Message of the error an ONNX model fails with when onnxruntime-node is not installed. */
export const ORT_MISSING_MESSAGE =
  "serving ONNX models needs the 'onnxruntime-node' package: npm install onnxruntime-node (set ONNXRUNTIME_NODE_INSTALL=skip to skip its CUDA download)";

/**
 * True when `err` says that onnxruntime-node itself cannot be found (`MODULE_NOT_FOUND` from `require`,
 * `ERR_MODULE_NOT_FOUND` from `import()`), not a file or a dependency inside it.
 */
export function isOrtMissing(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const { code, message } = err as { code?: unknown; message?: unknown };
  if (code !== 'MODULE_NOT_FOUND' && code !== 'ERR_MODULE_NOT_FOUND') return false;
  const firstLine = String(message).split('\n')[0] as string;
  return /^Cannot find (module|package) 'onnxruntime-node'(?= |$)/.test(firstLine);
}

const importOrt = (): Promise<OrtModule> => import('onnxruntime-node');

/**
 * Loads onnxruntime-node (`load` replaces the import in tests).
 *
 * @throws TritonError `INVALID_CONFIG` with {@link ORT_MISSING_MESSAGE} when the package is not installed; any
 *   other load failure (a missing native binary, a missing dependency of the package) as it is.
 */
export async function loadOrt(load: () => Promise<OrtModule> = importOrt): Promise<OrtModule> {
  try {
    return await load();
  } catch (err) {
    if (isOrtMissing(err)) throw new TritonError('INVALID_CONFIG', ORT_MISSING_MESSAGE, { cause: err });
    throw err;
  }
}
