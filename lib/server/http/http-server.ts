import * as http from 'node:http';
import { RequestMemory } from '../../tensor/buffer-pool';
import * as https from 'node:https';
import type { Socket } from 'node:net';
import { listenOn } from '../../base/listen';
import express, { type Express, type NextFunction, type Router } from 'express';
import { Cancellation } from '../../base/cancellation';
import { TritonError, toTritonError, SERVER_STOPPING_MESSAGE, tritonError } from '../../base/errors';
import type { Logger } from '../../logging/logger';
import type { ServerCore, Transport } from '../server-core';
import { compress, negotiateEncoding, ownMemory, readBody, readJsonObject } from './body';
import { handleSharedMemory, SHARED_MEMORY_ROUTE } from './shared-memory-routes';
import { handleRepository, REPOSITORY_ROUTE } from './repository-routes';
import type { InferCall } from '../infer-entry';
import { handleGenerate } from './generate';
import { decodeHttpInfer, inferHeaderLength, encodeHttpInfer, type DecodedHttpInfer, type EncodedHttpInfer } from './infer-codec';
import { RestrictedApis, httpApiGroup, httpRestrictedError } from '../restricted-api';
import { decodeSegment, requestTarget } from './request-target';
import type { ConnectionDrain } from './connection-drain';
import { createNodeHttpServer } from './node-server';
import { isOpenAiPath, OpenAiFrontend } from '../openai/openai-frontend';
import { sendOpenAiError } from '../openai/openai-error';

/** `/v2/logging`. */
const LOGGING_ROUTE = /^\/v2\/logging$/;
/** `/v2/trace/setting` and `/v2/models/{m}/trace/setting`. */
const TRACE_ROUTE = /^\/v2(?:\/models\/([^/]+))?\/trace\/setting$/;
/** Model routes: `/v2/models/{m}[/versions/{v}][/{action}]`, matched on the path only, as Triton does. */
const MODEL_ROUTE = /^\/v2\/models\/([^/]+)(?:\/versions\/([0-9]+))?(?:\/(infer|generate|generate_stream|ready|config|stats))?$/;

/** The answer to requests that arrive once the server is stopping, as Triton words it. */
const STOPPING = SERVER_STOPPING_MESSAGE;

/** What an `HttpServer` serves. */
export interface HttpServerOptions {
  /**
   * `'all'` (the HTTP port, `httpPort`): KServe v2, users' routes, and the OpenAI-compatible API under `/v1` with
   * `openai`. `'openai'` (the OpenAI port, `openaiPort`): only `/v1`, every error (a path elsewhere is 404) in
   * OpenAI's shape.
   */
  readonly routes?: 'all' | 'openai';
}

/** Writes an error answer in one API's shape. */
type SendError = (res: http.ServerResponse, err: TritonError) => void;

/**
 * The HTTP endpoint (HTTPS with `httpUseSsl`). POST `/infer` is handled on node:http directly (it is the hot
 * path); every other route is served by an express app, which stays open for users' own routes through
 * `router`. With `routes: 'openai'`, the OpenAI-compatible API on a port of its own, as Triton's OpenAI frontend
 * has one: the same endpoints, restrictions, API key and TLS settings as on the HTTP port, and the same orderly stop.
 */
export class HttpServer implements Transport {
  /** `http`, or `openai` for the OpenAI port: the name in `triton.ports`. */
  readonly name: 'http' | 'openai';
  readonly app: Express;
  /** Mount your own routes here; they are tried before the server's 404 (on the HTTP port only). */
  readonly router: Router;
  private readonly server: http.Server | https.Server;
  /** Which request headers become parameters (`httpHeaderForwardPattern`). */
  /** API groups that need a header (`httpRestrictedApi`). */
  private readonly restricted: RestrictedApis;
  /** The open connections, closed one by one between exchanges when the server stops. */
  private readonly connections: ConnectionDrain;
  /** The OpenAI-compatible API under `/v1` (`openai`). */
  private readonly openai: OpenAiFrontend | undefined;
  /** Serves the OpenAI-compatible API alone (`routes: 'openai'`). */
  private readonly openaiOnly: boolean;
  /** How the port answers an error of its own (a stopping server, a fault): Triton's shape, or OpenAI's. */
  private readonly sendPortError: SendError;

  constructor(
    private readonly core: ServerCore,
    private readonly logger: Logger,
    options: HttpServerOptions = {},
  ) {
    this.openaiOnly = options.routes === 'openai';
    this.name = this.openaiOnly ? 'openai' : 'http';
    this.sendPortError = this.openaiOnly ? sendOpenAiError : sendError;
    this.restricted = RestrictedApis.parse(core.config.httpRestrictedApi, 'httpRestrictedApi');
    this.openai = core.config.openai || this.openaiOnly ? new OpenAiFrontend(core, this.restricted, logger) : undefined;
    this.router = express.Router();
    this.app = buildApp(core, this.router, (err, req, res) => this.escaped(err, req, res));
    const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => this.handle(req, res);
    ({ server: this.server, connections: this.connections } = createNodeHttpServer(core.config, handler));
  }

  /** Starts listening; resolves with the bound port. With `reusePort`, other threads may listen on it too. */
  listen(port: number, host: string, reusePort = false): Promise<number> {
    return listenOn(this.server, port, host, reusePort);
  }

  /** Starts listening on its port (`httpPort`, or `openaiPort`) and the HTTP address; resolves with the bound port. */
  start(): Promise<number> {
    const { config } = this.core;
    return this.listen(this.openaiOnly ? config.openaiPort : config.httpPort, config.httpAddress);
  }

  /**
   * The server starts stopping: the answer to every request arriving from now on says `Connection: close` and
   * closes its connection once written, so that keep-alive clients send no further request on it. The port
   * stays open.
   */
  drain(): void {
    this.connections.drain();
  }

  /**
   * Closes the port; requests still arriving on open connections are answered 503 (`Connection: close`), and
   * each connection closes once its response is written (an idle one after its linger, the time its client's next
   * request may take to arrive; one that has not sent its first request yet once it has been answered). Resolves
   * when every connection has closed, or after `graceMs`.
   */
  stopAccepting(graceMs = 5000): Promise<void> {
    return this.connections.close(graceMs);
  }

  /** Closes every connection, finished or not. */
  forceClose(): void {
    this.connections.destroyAll();
    // http.Server's own close as well, which stops its timers of idle and slow connections.
    this.server.close();
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    this.connections.track(req, res);
    try {
      if (this.connections.closing) refuseStopping(req, res, this.sendPortError);
      else this.route(req, res);
    } catch (err) {
      this.escaped(err, req, res);
    }
  }

  /**
   * The last resort for an error no route caught (a fault of the server): the client gets 500 if its response
   * has not begun (its connection is cut otherwise), and the process goes on.
   */
  private escaped(err: unknown, req: http.IncomingMessage, res: http.ServerResponse): void {
    const error = toTritonError(err);
    if (!(err instanceof TritonError)) this.logger.error({ err, method: req.method, url: req.url }, 'HTTP request handler failed');
    try {
      this.sendPortError(res, error);
    } catch (cause) {
      this.logger.error({ err: cause, method: req.method, url: req.url }, 'HTTP error answer failed');
      res.destroy();
    }
  }

  private route(req: http.IncomingMessage, res: http.ServerResponse): void {
    const target = req.url ?? '/';
    let path: string;
    try {
      // Before the restriction check and any router: both must see this one path.
      const parsed = requestTarget(target);
      // Absolute form (`POST http://host:8000/v2/... HTTP/1.1`) is routed by its path, for express too.
      req.url = parsed.url;
      path = parsed.path;
    } catch (err) {
      return this.openai && isOpenAiPath(target) ? sendOpenAiError(res, err) : this.sendPortError(res, toTritonError(err));
    }
    // The OpenAI-compatible API applies the same restrictions itself, answering in OpenAI's error shape.
    if (this.openai && isOpenAiPath(path)) return this.openai.handle(req, res, path);
    if (this.openaiOnly) return sendOpenAiError(res, new TritonError('NOT_FOUND', `Invalid URL (${req.method ?? ''} ${path})`));
    // Every route, the infer hot path and users' own included, passes this one check.
    if (this.restricted.any) {
      const missing = this.restricted.missingHeader(httpApiGroup(path), (name) => req.headers[name]);
      if (missing !== undefined) return sendError(res, httpRestrictedError(missing));
    }
    if (req.method === 'POST' && path.endsWith('/infer')) {
      const m = MODEL_ROUTE.exec(path);
      if (m && m[3] === 'infer') {
        this.infer(req, res, decodeSegment(m[1] as string), m[2]).catch((err: unknown) => this.escaped(err, req, res));
        return;
      }
    }
    this.app(req, res);
  }

  private async infer(req: http.IncomingMessage, res: http.ServerResponse, modelName: string, version: string | undefined): Promise<void> {
    const cancellation = new Cancellation();
    const exchanges = exchangesOf(req.socket);
    exchanges.add(cancellation);
    try {
      const { config, requestBuffers, sharedMemory } = this.core;
      const memory = requestBuffers.capacity > 0 ? new RequestMemory(requestBuffers) : undefined;
      const ihcl = req.headers['inference-header-content-length'];
      // Only a body with binary tensors goes into pooled memory: those tensors view it. A JSON body is garbage
      // once parsed, and holding it until the response is written only holds memory longer.
      const body = await readBody(req, config.httpMaxInputSize, ihcl === undefined ? undefined : memory);
      const headerLength = inferHeaderLength(ihcl, body.length);
      let decoded: DecodedHttpInfer | undefined;
      const call: InferCall = {
        modelName,
        modelVersion: version,
        protocol: 'HTTP',
        unaryEndpoint: 'HTTP end point',
        headers: req.headers,
        decode: (model) => (decoded = decodeHttpInfer(body, headerLength, model, config.jsonMaxDepth, cancellation, ownMemory(body), sharedMemory, memory)).request,
      };
      await this.core.inferAsync(call, (response) => {
        const { json, blobs } = encodeHttpInfer(response, decoded as DecodedHttpInfer);
        const encoding = negotiateEncoding(req.headers['accept-encoding'] as string | undefined);
        // The response may view the request's memory: it goes back once the response is handed to the socket.
        if (memory?.holding) res.once('finish', () => memory.release());
        if (encoding) return writeCompressed(res, encoding, json, blobs);
        writeInferResponse(res, json, blobs);
        return undefined;
      });
    } catch (err) {
      // An over-limit body is not read to the end; close the connection rather than drain it, and say so
      // (`Connection: close`) so that keep-alive clients do not send their next request on a dead socket.
      const tooLarge = err instanceof TritonError && err.code === 'PAYLOAD_TOO_LARGE';
      if (tooLarge && !res.headersSent) res.setHeader('Connection', 'close');
      sendError(res, toTritonError(err));
      if (tooLarge) res.once('finish', () => req.destroy());
    } finally {
      // The response is written (handed to the socket): a client leaving now cancels nothing.
      exchanges.delete(cancellation);
    }
  }
}

/** The headers of an infer response whose JSON part is `headLength` bytes. */
function inferHeaders(headLength: number, binary: boolean): http.OutgoingHttpHeaders {
  return binary ? { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': headLength } : { 'Content-Type': 'application/json' };
}

/** Writes an infer response compressed with `encoding`. */
async function writeCompressed(res: http.ServerResponse, encoding: 'gzip' | 'deflate', json: EncodedHttpInfer['json'], blobs: Uint8Array[]): Promise<void> {
  const head = typeof json === 'string' ? Buffer.from(json, 'utf8') : Buffer.concat(json.map(bytesOf));
  const body = await compress(blobs.length > 0 ? Buffer.concat([head, ...blobs]) : head, encoding);
  const headers = inferHeaders(head.length, blobs.length > 0);
  headers['Content-Encoding'] = encoding;
  headers['Content-Length'] = body.length;
  res.writeHead(200, headers);
  res.end(body);
}

/** Writes an infer response: its JSON part and, after it, its binary outputs. */
function writeInferResponse(res: http.ServerResponse, json: EncodedHttpInfer['json'], blobs: Uint8Array[]): void {
  if (typeof json !== 'string') {
    // Large JSON data: the header's pieces and the blobs go out as they are, in one corked write.
    const parts = [...json.map(bytesOf), ...blobs];
    let headLength = 0;
    for (let i = 0; i < json.length; i++) headLength += (parts[i] as Uint8Array).byteLength;
    let length = headLength;
    for (const b of blobs) length += b.byteLength;
    const headers = inferHeaders(headLength, blobs.length > 0);
    headers['Content-Length'] = length;
    res.writeHead(200, headers);
    writeParts(res, parts);
    return;
  }
  const headLength = Buffer.byteLength(json, 'utf8');
  const headers = inferHeaders(headLength, blobs.length > 0);
  let length = headLength;
  for (const b of blobs) length += b.byteLength;
  headers['Content-Length'] = length;
  res.writeHead(200, headers);
  if (blobs.length === 0) {
    // A string body goes out in the same write as the headers.
    res.end(json, 'utf8');
    return;
  }
  const head = Buffer.from(json, 'utf8');
  // Small bodies go out as one buffer (one write); large ones as their parts, without copying tensors.
  if (length <= SMALL_BODY) {
    res.end(Buffer.concat([head, ...blobs], length));
    return;
  }
  writeParts(res, [head, ...blobs]);
}

/** Ends a response with `parts`, corked so that they leave in one vectored write. */
function writeParts(res: http.ServerResponse, parts: readonly Uint8Array[]): void {
  res.cork();
  for (let i = 0; i < parts.length - 1; i++) res.write(parts[i]);
  res.end(parts[parts.length - 1]);
}

function bytesOf(piece: string | Uint8Array): Uint8Array {
  return typeof piece === 'string' ? Buffer.from(piece, 'utf8') : piece;
}

const EXCHANGES: unique symbol = Symbol('tstriton.httpExchanges');

/**
 * The cancellations of a connection's infer requests still being answered. One 'close' listener per
 * connection (not per request) cancels them when the client goes away.
 */
function exchangesOf(socket: Socket & { [EXCHANGES]?: Set<Cancellation> }): Set<Cancellation> {
  let exchanges = socket[EXCHANGES];
  if (!exchanges) {
    const created = new Set<Cancellation>();
    socket[EXCHANGES] = created;
    socket.once('close', () => {
      for (const c of created) c.abort();
      created.clear();
    });
    exchanges = created;
  }
  return exchanges;
}

/** Below this size, copying the response into one buffer is cheaper than a vectored write. */
const SMALL_BODY = 16 * 1024;

/** Writes Triton's error body `{"error": "..."}` with the status from the error table. */
export function sendError(res: http.ServerResponse, err: TritonError): void {
  if (res.headersSent) {
    // A response under way cannot change its status: cut it, so that the client sees it incomplete. One
    // already complete stays as it is.
    if (!res.writableEnded) res.destroy(err);
    return;
  }
  // Refused because the server is stopping: the connection closes too, like every refusal of a stopping server,
  // also for a request that reached the core only after the stop began (from a front-end thread, or while its body
  // was read), whose exchange began before the drain.
  if (err.code === 'UNAVAILABLE' && err.message === STOPPING) res.shouldKeepAlive = false;
  const body = JSON.stringify({ error: err.message });
  const headers: http.OutgoingHttpHeaders = { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) };
  if (err.code === 'UNSUPPORTED' && /compression/i.test(err.message)) headers['Accept-Encoding'] = 'gzip, deflate';
  res.writeHead(err.httpStatus, headers);
  res.end(body);
}

/** What answers an error a route let through. */
type EscapedError = (err: unknown, req: http.IncomingMessage, res: http.ServerResponse) => void;

function buildApp(core: ServerCore, router: Router, escaped: EscapedError): Express {
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
    try {
      res.json({ model_stats: core.modelStatistics() });
    } catch (err) {
      sendError(res, toTritonError(err));
    }
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
      const model = core.repository.get(name, version);
      switch (action) {
        case undefined:
          res.json(core.repository.metadataOf(model.name, version));
          return;
        case 'ready':
          if (model.ready) res.status(200).end();
          else sendError(res, tritonError('versionNotReady'));
          return;
        case 'config':
          res.json(model.configJson);
          return;
        case 'stats':
          res.json({ model_stats: core.modelStatistics(model.name, version) });
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

/**
 * Answers a request that arrived once the port closed: 503 (written by `send`), after its body is read so that the
 * connection closes with nothing unread (which would reset it). The drain has marked the response `Connection: close`.
 */
function refuseStopping(req: http.IncomingMessage, res: http.ServerResponse, send: SendError): void {
  req.once('end', () => send(res, new TritonError('UNAVAILABLE', STOPPING)));
  req.resume();
}

function methodNotAllowed(res: http.ServerResponse): void {
  sendError(res, tritonError('methodNotAllowed'));
}
