import type * as http from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import { toTritonError, tritonError } from '../../base/errors';
import { docsPage, PAGE_CSP, PageAssets } from '../openapi/docs-page';
import { OpenApiDocuments } from '../openapi/openapi-documents';
import { modelPath } from '../../protocol/model-path';
import type { ServerCore } from '../server-core';
import { negotiateEncoding } from './body';
import { decodeSegment } from './request-target';
import { sendError } from './send-error';

/**
 * The documents' routes, at MLServer's paths: `/v2/docs` and `/v2/models/{m}/docs` (the reference page),
 * `.../docs/dataplane.json` (the OpenAPI document), `/v2/docs/assets/{file}` (the page's files).
 */
const DOCS_ROUTE = /^\/v2(?:\/models\/([^/]+))?\/docs(?:\/(dataplane\.json)|\/assets\/([^/]+))?$/;

/**
 * Serves the OpenAPI documents and their page (`openapiDocs`), from the models as the core (or this front-end
 * thread's published copy) has them at each request; every answer carries the page's content security policy.
 */
export function docsRoutes(core: ServerCore): (req: Request, res: Response, next: NextFunction) => void {
  const documents = new OpenApiDocuments(core);
  const assets = new PageAssets();
  return (req, res, next) => {
    const m = DOCS_ROUTE.exec(req.path);
    if (!m) return next();
    const [, rawModel, dataplane, asset] = m;
    if (rawModel !== undefined && asset !== undefined) return next();
    if (req.method !== 'GET') return sendError(res, tritonError('methodNotAllowed'));
    res.setHeader('Content-Security-Policy', PAGE_CSP);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    try {
      if (asset !== undefined) return sendAsset(req, res, assets, asset);
      const model = rawModel === undefined ? undefined : decodeSegment(rawModel);
      const document = model === undefined ? documents.serverDocument() : documents.modelDocument(model);
      if (dataplane !== undefined) {
        res.json(document);
        return;
      }
      const base = model === undefined ? '/v2' : modelPath(model);
      res.type('text/html; charset=utf-8').send(docsPage(String(document.info.title), `${base}/docs/dataplane.json`));
    } catch (err) {
      sendError(res, toTritonError(err));
    }
  };
}

/** Answers one of the page's files, gzip-compressed when the client accepts it; a name it does not have is 404. */
function sendAsset(req: http.IncomingMessage, res: http.ServerResponse, assets: PageAssets, name: string): void {
  const file = assets.get(name);
  if (file === undefined) return sendError(res, tritonError('notFound'));
  const gzip = negotiateEncoding(req.headers['accept-encoding']) === 'gzip';
  const body = gzip ? file.gzip : file.body;
  res.writeHead(200, {
    'Content-Type': file.contentType,
    'Content-Length': body.length,
    'Cache-Control': 'public, max-age=3600',
    Vary: 'Accept-Encoding',
    ...(gzip && { 'Content-Encoding': 'gzip' }),
  });
  res.end(body);
}
