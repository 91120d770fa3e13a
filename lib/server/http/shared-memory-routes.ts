import type * as http from 'node:http';
import { TritonError, tritonError } from '../../base/errors';
import { decodeSegment } from './request-target';
import type { ServerCore } from '../server-core';
import { readJsonObject } from './body';

/** `/v2/{system,cuda}sharedmemory[/region/{r}]/{status,register,unregister}`. */
export const SHARED_MEMORY_ROUTE = /^\/v2\/(system|cuda)sharedmemory(?:\/region\/([^/]+))?\/(status|register|unregister)$/;

/** Largest register body read (it holds a key, an offset and a size). */
const REGISTER_BODY_LIMIT = 64 * 1024;

/**
 * Serves the shared-memory extension. System regions are registered, listed and unregistered through the
 * server's SharedMemoryManager. CUDA regions cannot be registered here (no CUDA IPC): status lists none
 * and unregister succeeds, so that clients which clear both kinds at start and exit (perf_analyzer) work.
 */
export async function handleSharedMemory(core: ServerCore, match: RegExpExecArray, req: http.IncomingMessage): Promise<unknown> {
  const [, kind, rawRegion, action] = match;
  const region = rawRegion === undefined ? undefined : decodeSegment(rawRegion);
  const wantsPost = action !== 'status';
  if (req.method !== (wantsPost ? 'POST' : 'GET')) throw tritonError('methodNotAllowed');
  if (action === 'register' && region === undefined) throw tritonError('notFound');
  if (kind === 'cuda') {
    if (action === 'status') {
      if (region !== undefined) throw new TritonError('NOT_FOUND', `Unable to find cuda shared memory region: '${region}'`);
      return [];
    }
    if (action === 'register') throw tritonError('cudaSharedMemory');
    return undefined;
  }
  const shm = core.sharedMemory;
  switch (action) {
    case 'status':
      return shm.status(region);
    case 'unregister':
      await shm.unregister(region);
      return undefined;
    default: {
      const { key, offset = 0, byte_size: byteSize } = await readJsonObject(req, core.config.jsonMaxDepth, 'the register request', REGISTER_BODY_LIMIT);
      if (typeof key !== 'string') throw new TritonError('INVALID_ARGUMENT', "the register request needs a string 'key'");
      if (byteSize === undefined) throw new TritonError('INVALID_ARGUMENT', "the register request needs 'byte_size'");
      await shm.register(region as string, key, Number(offset), Number(byteSize));
      return undefined;
    }
  }
}
