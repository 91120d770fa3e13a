import * as http from 'node:http';
import { RequestMemory } from '../../tensor/buffer-pool';
import type * as https from 'node:https';
import type { Socket } from 'node:net';
import { listenOn } from '../../base/listen';
import express, { type Express, type Router } from 'express';
import { Cancellation } from '../../base/cancellation';
import { TritonError, toTritonError, SERVER_STOPPING_MESSAGE } from '../../base/errors';
import type { Logger } from '../../logging/logger';
import type { ServerCore, Transport } from '../server-core';
import { compress, negotiateEncoding, ownMemory, readBody } from './body';
import type { InferCall } from '../infer-entry';
import { decodeHttpInfer, inferHeaderLength, encodeHttpInfer, type DecodedHttpInfer, type EncodedHttpInfer } from './infer-codec';
import { RestrictedApis, httpApiGroup, httpRestrictedError } from '../restricted-api';
import { decodeSegment, requestTarget } from './request-target';
import type { ConnectionDrain } from './connection-drain';
import { createNodeHttpServer } from './node-server';
import { kserveRoutes, MODEL_ROUTE } from './kserve-routes';
import type { MountApi, MountedApi } from './mounted-api';
import { sendError } from './send-error';

/** A port of its own for a mounted API (the OpenAI port, `openaiPort`). */
export interface OwnPort {
  /** Its name in `triton.ports` (`openai`). */
  readonly name: string;
  readonly port: number;
}

/**
 * What an `HttpServer` serves. Without `alone` (the HTTP port, `httpPort`): KServe v2, users' routes, and the
 * mounted API on its paths (the OpenAI-compatible API under `/v1` with `openai`). With `alone`: only the mounted
 * API, on a port of its own, every error (a path elsewhere is 404) in its shape.
 */
export type HttpServerOptions = { readonly mount?: MountApi; readonly alone?: undefined } | { readonly mount: MountApi; readonly alone: OwnPort };

/** Writes an error answer in one API's shape. */
type SendError = (res: http.ServerResponse, err: TritonError) => void;

/**
 * The HTTP endpoint (HTTPS with `httpUseSsl`). POST `/infer` is handled on node:http directly (it is the hot
 * path); every other KServe v2 route is served by an express app (`kserveRoutes`), which stays open for users' own
 * routes through `router`. A mounted API (the OpenAI-compatible one) gets the requests on its paths; `alone`, on a
 * port of its own, as Triton's OpenAI frontend has one: with the same restrictions, TLS settings and orderly stop as
 * the HTTP port.
 */
export class HttpServer implements Transport {
  /** `http`, or the name of the mounted API's own port (`openai`): the name in `triton.ports`. */
  readonly name: string;
  readonly app: Express;
  /** Mount your own routes here; they are tried before the server's 404 (on the HTTP port only). */
  readonly router: Router;
  private readonly server: http.Server | https.Server;
  /** API groups that need a header (`httpRestrictedApi`). */
  private readonly restricted: RestrictedApis;
  /** The open connections, closed one by one between exchanges when the server stops. */
  private readonly connections: ConnectionDrain;
  /** The API mounted on its own paths (the OpenAI-compatible API under `/v1`). */
  private readonly mounted: MountedApi | undefined;
  /** The mounted API, when the port serves it alone. */
  private readonly alone: MountedApi | undefined;
  /** Where the port listens: `httpPort`, or the mounted API's own. */
  private readonly port: () => number;
  /** How the port answers an error of its own (a stopping server, a fault): Triton's shape, or the mounted API's. */
  private readonly sendPortError: SendError;

  constructor(
    private readonly core: ServerCore,
    private readonly logger: Logger,
    options: HttpServerOptions = {},
  ) {
    this.restricted = RestrictedApis.parse(core.config.httpRestrictedApi, 'httpRestrictedApi');
    this.mounted = options.mount?.(this.restricted);
    if (options.alone) {
      const { name, port } = options.alone;
      this.alone = this.mounted;
      this.name = name;
      this.port = () => port;
    } else {
      this.name = 'http';
      this.port = () => core.config.httpPort;
    }
    const alone = this.alone;
    this.sendPortError = alone ? (res, err) => alone.sendError(res, err) : sendError;
    this.router = express.Router();
    this.app = kserveRoutes(core, this.router, (err, req, res) => this.escaped(err, req, res));
    const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => this.handle(req, res);
    ({ server: this.server, connections: this.connections } = createNodeHttpServer(core.config, handler));
  }

  /** Starts listening; resolves with the bound port. With `reusePort`, other threads may listen on it too. */
  listen(port: number, host: string, reusePort = false): Promise<number> {
    return listenOn(this.server, port, host, reusePort);
  }

  /** Starts listening on its port (`httpPort`, or the mounted API's own) and the HTTP address; resolves with the bound port. */
  start(): Promise<number> {
    return this.listen(this.port(), this.core.config.httpAddress);
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
   * Closes the port once no client is about to open a connection there (a close would reset it in the accept
   * queue); requests still arriving are answered 503 (`Connection: close`) once the port has closed, and each
   * connection closes once its response is written (an idle one after its linger, the time its client's next
   * request may take to arrive; one that has not sent its first request yet once it has been answered), its client
   * closing its side before the socket closes. Resolves when every connection has closed, or after `graceMs`.
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
    // A request behind the answer that closed its connection (pipelined) cannot be answered: the drain reads it.
    if (!this.connections.track(req, res)) return;
    try {
      if (this.connections.closing) this.refuseStopping(req, res);
      else this.route(req, res);
    } catch (err) {
      this.escaped(err, req, res);
    }
  }

  /**
   * Answers a request that arrived once the port began to close: 503 in the port's shape, after its body is read so
   * that the connection closes with nothing unread (which would reset it), and only once the port has closed, so
   * that the new connection its client opens on `Connection: close` (the drain has marked the response so) is
   * refused rather than queued on a closing port.
   */
  private refuseStopping(req: http.IncomingMessage, res: http.ServerResponse): void {
    req.once('end', () => this.connections.afterPortClosed(res, () => this.sendPortError(res, new TritonError('UNAVAILABLE', SERVER_STOPPING_MESSAGE))));
    req.resume();
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
      return this.mounted?.owns(target) ? this.mounted.sendError(res, err) : this.sendPortError(res, toTritonError(err));
    }
    // The mounted API applies the same restrictions itself, answering in its own error shape.
    if (this.mounted?.owns(path)) return this.mounted.handle(req, res, path);
    if (this.alone) return this.alone.sendError(res, this.alone.unknownPath(req.method, path));
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
