import type * as http from 'node:http';
import type { TritonError } from '../../base/errors';
import type { RestrictedApis } from '../restricted-api';

/**
 * An API the HTTP port serves beside KServe v2, on paths of its own and answering in a shape of its own. The
 * OpenAI-compatible API (`lib/server/openai`) mounts itself so; the port hands it every request on its paths
 * before its own routes see them, and knows nothing else of it.
 */
export interface MountedApi {
  /** True for the paths it answers. */
  owns(path: string): boolean;
  /** Answers one request on a path it owns; never throws, never rejects. */
  handle(req: http.IncomingMessage, res: http.ServerResponse, path: string): void;
  /** Answers an error in its shape; a response already under way is cut instead. */
  sendError(res: http.ServerResponse, err: unknown): void;
  /** The error for a path it does not own, on a port that serves it alone. */
  unknownPath(method: string | undefined, path: string): TritonError;
}

/** Makes the API for one port, with that port's restricted API groups (`httpRestrictedApi`). */
export type MountApi = (restricted: RestrictedApis) => MountedApi;
