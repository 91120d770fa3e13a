import type * as http from 'node:http';
import express, { type Express, type NextFunction, type Router } from 'express';
import { TritonError, toTritonError, tritonError } from '../../base/errors';
import { versionReady } from '../../model/serving-version';
import type { ServerCore } from '../server-core';
import { readJsonObject } from './body';
import { docsRoutes } from './docs-routes';
import { handleGenerate } from './generate';
import { handleRepository, REPOSITORY_ROUTE } from './repository-routes';
import { decodeSegment } from './request-target';
import { sendError } from './send-error';
import { handleSharedMemory, SHARED_MEMORY_ROUTE } from './shared-memory-routes';

/** `/v2/logging`. */
const LOGGING_ROUTE = /^\/v2\/logging$/;
/** `/v2/trace/setting` and `/v2/models/{m}/trace/setting`. */
const TRACE_ROUTE = /^\/v2(?:\/models\/([^/]+))?\/trace\/setting$/;
/** Model routes: `/v2/models/{m}[/versions/{v}][/{action}]`, matched on the path only, as Triton does. */
export const MODEL_ROUTE = /^\/v2\/models\/([^/]+)(?:\/versions\/([0-9]+))?(?:\/(infer|generate|generate_stream|ready|config|stats))?$/;

/** What answers an error a route let through. */
export type EscapedError = (err: unknown, req: http.IncomingMessage, res: http.ServerResponse) => void;

/**
 * The KServe v2 routes other than POST `/infer` (health, metadata, the model routes, `generate`, trace and logging
 * settings, the repository and shared-memory extensions, statistics, the OpenAPI documents), then users' routes on `router`, then Triton's
 * 404; as an express app, which answers what a route throws in Triton's form through `escaped`.
 */
export function kserveRoutes(core: ServerCore, router: Router, escaped: EscapedError): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  // Triton has no trailing-slash tolerance: `/v2/` and `/v2/health/live/` are 404.
  app.set('strict routing', true);

  const health = (ok: () => boolean) => (req: express.Request, res: express.Response) => {
    if (req.method !== 'GET') return methodNotAllowed(res);
    res.status(ok() ? 200 : 400).end();
  };
  app.all('/v2/health/live', health(() => core.isLive()));
  app.all('/v2/health/ready', health(() => core.isReady()));
  app.all('/v2', (req, res) => {
    if (req.method !== 'GET') return methodNotAllowed(res);
    res.json(core.metadata());
  });

  // MLServer's paths, before the model routes (whose pattern they do not match anyway).
  if (core.config.openapiDocs) app.use(docsRoutes(core));

  serveJson(app, TRACE_ROUTE, async (m, req) => {
    const model = m[1] === undefined ? undefined : decodeSegment(m[1]);
    if (req.method === 'GET') return core.traceSettings(model);
    if (req.method !== 'POST') throw tritonError('methodNotAllowed');
    return core.traceSettings(model, await readJsonObject(req, core.config.jsonMaxDepth, 'the trace settings'));
  });
  serveJson(app, LOGGING_ROUTE, async (_m, req) => {
    if (req.method === 'GET') return core.logSettings();
    if (req.method !== 'POST') throw tritonError('methodNotAllowed');
    return core.logSettings(await readJsonObject(req, core.config.jsonMaxDepth, 'the logging settings'));
  });
  serveJson(app, REPOSITORY_ROUTE, (m, req) => handleRepository(core, m, req));
  serveJson(app, SHARED_MEMORY_ROUTE, (m, req) => handleSharedMemory(core, m, req));

  app.all('/v2/models/stats', (req, res) => {
    if (req.method !== 'GET') return methodNotAllowed(res);
    // Returned, so that express passes a failure of the answer itself to the error handler.
    return answerJson(res, () => core.modelStatistics()).then((stats) => stats && res.json({ model_stats: stats }));
  });

  app.use((req, res, next: NextFunction) => {
    const m = MODEL_ROUTE.exec(req.path);
    if (!m) return next();
    const [, rawName, version, action] = m;
    const wantsPost = action === 'infer' || action === 'generate' || action === 'generate_stream';
    if (req.method !== (wantsPost ? 'POST' : 'GET')) return methodNotAllowed(res);
    try {
      const name = decodeSegment(rawName as string);
      if (action === 'generate' || action === 'generate_stream') {
        // The core finds the model. Returned: express answers a rejection of the error handler itself through `escaped`.
        return handleGenerate(core, name, version, req, res, action === 'generate_stream').catch((err: unknown) => sendError(res, toTritonError(err)));
      }
      if (action === 'ready') {
        // 200, or 400 for a known model whose version is not ready: a readiness answer, not the lookup's 404 or 503.
        if (versionReady(core.repository, name, version)) res.status(200).end();
        else sendError(res, tritonError('versionNotReady'));
        return;
      }
      if (action === 'stats') {
        // The core refuses a model with no ready version in the words of Triton's statistics.
        return answerJson(res, () => core.modelStatistics(name, version)).then((stats) => stats && res.json({ model_stats: stats }));
      }
      const model = core.repository.get(name, version);
      switch (action) {
        case undefined:
          res.json(core.repository.metadataOf(model.name, version));
          return;
        case 'config':
          res.json(model.configJson);
          return;
        default:
          throw new TritonError('UNSUPPORTED', `the '${action}' endpoint is not supported by this server`);
      }
    } catch (err) {
      sendError(res, toTritonError(err));
    }
  });

  app.use(router);
  app.use((_req, res) => sendError(res, tritonError('notFound')));
  // What a route (ours or a user's) throws or rejects with is answered in Triton's form, never as express's
  // HTML page.
  app.use((err: unknown, req: express.Request, res: express.Response, _next: NextFunction) => escaped(err, req, res));
  return app;
}

/**
 * Serves the paths `pattern` matches with `handle`: its value as JSON, or an empty 200 when it returns
 * undefined; a thrown error as Triton's error body.
 */
function serveJson(app: Express, pattern: RegExp, handle: (match: RegExpExecArray, req: express.Request) => unknown): void {
  app.use((req, res, next: NextFunction) => {
    const m = pattern.exec(req.path);
    if (!m) return next();
    // Returned, so that express passes a failure of the answer itself to the error handler.
    return new Promise<unknown>((resolve) => resolve(handle(m, req))).then(
      (body) => (body === undefined ? res.status(200).type('application/json').end() : res.json(body)),
      (err: unknown) => sendError(res, toTritonError(err)),
    );
  });
}

/** What `get` gives, once it has it; undefined after answering what it threw or rejected with in Triton's form. */
function answerJson<T>(res: http.ServerResponse, get: () => T | Promise<T>): Promise<T | undefined> {
  return new Promise<T>((resolve) => resolve(get())).catch((err: unknown) => {
    sendError(res, toTritonError(err));
    return undefined;
  });
}

function methodNotAllowed(res: http.ServerResponse): void {
  sendError(res, tritonError('methodNotAllowed'));
}
