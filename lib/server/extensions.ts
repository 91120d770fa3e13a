/** Parameters of the classification and model repository extensions, read the same way by both transports. */
import { TritonError, invalidArgument } from '../base/errors';
import type { ModelView } from '../model/model-view';
import type { LoadOverride } from '../model/model-control';
import type { Classification } from '../tensor/classification';
import { describeValue } from '../tensor/wire-value';

/** The `classification` parameter of output `name`: a class count (0 or absent: none). */
export function classificationOf(value: unknown, model: ModelView, name: string): Classification | undefined {
  if (value === undefined) return undefined;
  const count = typeof value === 'bigint' ? Number(value) : value;
  if (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 0) {
    throw invalidArgument(`output '${name}': 'classification' must be a non-negative integer (the number of classes), got ${describeValue(value)}`);
  }
  if (count === 0) return undefined;
  const labels = model.outputs.find((o) => o.name === name)?.labels;
  return { count, batched: model.config.effectiveMaxBatchSize > 0, labels };
}

/**
 * The config and files a load request brings (Triton's `config` and `file:<path>` parameters), from the
 * parameters as each transport decodes them: text, or bytes (a `file:` given as text is base64, as over HTTP).
 */
export function loadOverride(parameters: Readonly<Record<string, string | Buffer | boolean | number | undefined>>, model: string): LoadOverride {
  const override: { config?: string; files?: Record<string, Buffer> } = {};
  for (const [key, value] of Object.entries(parameters)) {
    if (key === 'config') {
      if (typeof value !== 'string') throw new TritonError('INVALID_ARGUMENT', `failed to load '${model}': the 'config' parameter must be a string holding the config as JSON`);
      override.config = value;
    } else if (key.startsWith('file:')) {
      const path = key.slice('file:'.length);
      if (path === '') throw new TritonError('INVALID_ARGUMENT', `failed to load '${model}': a file parameter needs a path after 'file:'`);
      if (typeof value === 'string') (override.files ??= {})[path] = base64Content(value, key, model);
      else if (Buffer.isBuffer(value)) (override.files ??= {})[path] = value;
      else throw new TritonError('INVALID_ARGUMENT', `failed to load '${model}': parameter '${key}' must hold the file's content`);
    }
  }
  return override;
}

/** The standard base64 (with padding) that tritonclient sends for a file over HTTP; anything else is refused. */
function base64Content(value: string, key: string, model: string): Buffer {
  if (value.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(value)) {
    throw new TritonError('INVALID_ARGUMENT', `failed to load '${model}': parameter '${key}' is not valid base64 (expected the file's bytes in standard base64 with '=' padding)`);
  }
  return Buffer.from(value, 'base64');
}
