import type * as http from 'node:http';
import { TritonError, tritonError } from '../../base/errors';
import { decodeSegment } from './request-target';
import type { ServerCore } from '../server-core';
import { readJsonObject } from './body';
import { loadOverride } from '../extensions';

/** `/v2/repository[/{repository}]/index` and `/v2/repository[/{repository}]/models/{m}/{load,unload}`. */
export const REPOSITORY_ROUTE = /^\/v2\/repository(?:\/([^/]+))?\/(?:(index)|models\/([^/]+)\/(load|unload))$/;

const BODY_LIMIT = 1024 * 1024;

/**
 * Serves the model repository extension: the index, unload, and load (with Triton's `config` and
 * `file:<path>` parameters; file contents are base64 over HTTP).
 */
export async function handleRepository(core: ServerCore, match: RegExpExecArray, req: http.IncomingMessage): Promise<unknown> {
  const [, repositoryName, index, rawModel, action] = match;
  if (req.method !== 'POST') throw tritonError('methodNotAllowed');
  if (repositoryName !== undefined) throw new TritonError('UNSUPPORTED', "'repository_name' specification is not supported");
  const request = await readJsonObject(req, core.config.jsonMaxDepth, 'the request body', BODY_LIMIT);
  if (index) {
    const ready = request.ready ?? false;
    if (typeof ready !== 'boolean') throw new TritonError('INVALID_ARGUMENT', "'ready' must be a boolean");
    return core.repositoryIndex(ready);
  }
  const model = decodeSegment(rawModel as string);
  const parameters = request.parameters ?? {};
  if (typeof parameters !== 'object' || parameters === null || Array.isArray(parameters)) throw new TritonError('INVALID_ARGUMENT', "'parameters' must be an object");
  const params = parameters as Record<string, unknown>;
  if (action === 'load') {
    await core.loadModel(model, loadOverride(params as Record<string, string | boolean | number>, model));
    return undefined;
  }
  const dependents = params.unload_dependents ?? false;
  if (typeof dependents !== 'boolean') throw new TritonError('INVALID_ARGUMENT', "'unload_dependents' must be a boolean");
  await core.unloadModel(model, dependents);
  return undefined;
}
