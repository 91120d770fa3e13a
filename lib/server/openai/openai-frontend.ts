import type * as http from 'node:http';
import { timingSafeEqual } from 'node:crypto';
import { Cancellation } from '../../base/cancellation';
import { TritonError } from '../../base/errors';
import type { Logger } from '../../logging/logger';
import type { ModelView } from '../../model/model-view';
import { readBody } from '../http/body';
import type { MountApi, MountedApi } from '../http/mounted-api';
import { decodeSegment } from '../http/request-target';
import { httpRestrictedError, type ApiGroup, type RestrictedApis } from '../restricted-api';
import type { ServerCore } from '../server-core';
import { handleCompletion } from './completions';
import { handleEmbeddings } from './embeddings';
import { sendOpenAiError } from './openai-error';
import { modelOf, parseBody } from './openai-request';

/** The POST endpoints, by path. */
const POST_ROUTES = new Set(['/v1/completions', '/v1/chat/completions', '/v1/embeddings']);
/** `GET /v1/models/{id}`. */
const MODEL_ROUTE = /^\/v1\/models\/([^/]+)$/;

/** True for the paths the OpenAI-compatible API answers (all of `/v1`). */
function isOpenAiPath(path: string): boolean {
  return path === '/v1' || path.startsWith('/v1/');
}

/**
 * The API group of an OpenAI request, as Triton's OpenAI frontend groups them for `--openai-restricted-api`: the
 * POST endpoints are `inference`, the model list is `model-repository`.
 */
export function openAiApiGroup(method: string | undefined, path: string): ApiGroup | undefined {
  if (method === 'POST' && POST_ROUTES.has(path)) return 'inference';
  if (method === 'GET' && (path === '/v1/models' || MODEL_ROUTE.test(path))) return 'model-repository';
  return undefined;
}

/**
 * The OpenAI-compatible API over the bound models: `GET /v1/models`, `POST /v1/completions`,
 * `POST /v1/chat/completions` (streaming as Server-Sent Events) and `POST /v1/embeddings`, every error in OpenAI's
 * shape. Mounted on the HTTP port with `openai`, and served alone on a port of its own with `openaiPort`
 * (docs/openai.md).
 */
export class OpenAiFrontend implements MountedApi {
  /** `created` of every model in the list: when the frontend started (models carry no creation time). */
  private readonly created = Math.floor(Date.now() / 1000);
  /** `Authorization` header value every request needs (`openaiApiKey`). */
  private readonly authorization: Buffer | undefined;

  constructor(
    private readonly core: ServerCore,
    private readonly restricted: RestrictedApis,
    private readonly logger: Logger,
  ) {
    const key = core.config.openaiApiKey;
    this.authorization = key === undefined || key === '' ? undefined : Buffer.from(`Bearer ${key}`, 'utf8');
  }

  /** All of `/v1`. */
  owns(path: string): boolean {
    return isOpenAiPath(path);
  }

  sendError(res: http.ServerResponse, err: unknown): void {
    sendOpenAiError(res, err);
  }

  unknownPath(method: string | undefined, path: string): TritonError {
    return invalidUrl(method, path);
  }

  /** Answers one request on a path it `owns`; never throws, never rejects. */
  handle(req: http.IncomingMessage, res: http.ServerResponse, path: string): void {
    this.serve(req, res, path).catch((err: unknown) => {
      if (!(err instanceof TritonError)) this.logger.error({ err, method: req.method, url: req.url }, 'OpenAI request handler failed');
      try {
        sendOpenAiError(res, err);
      } catch {
        res.destroy();
      }
    });
  }

  private async serve(req: http.IncomingMessage, res: http.ServerResponse, path: string): Promise<void> {
    this.authorize(req, path);
    const method = req.method;
    if (path === '/v1/models') {
      if (method !== 'GET') throw methodNotAllowed(method, path);
      return sendJson(res, { object: 'list', data: this.models().map((m) => this.modelEntry(m.name)) });
    }
    const one = MODEL_ROUTE.exec(path);
    if (one) {
      if (method !== 'GET') throw methodNotAllowed(method, path);
      return sendJson(res, this.modelEntry(this.model(decodeSegment(one[1] as string)).name));
    }
    if (!POST_ROUTES.has(path)) throw invalidUrl(method, path);
    if (method !== 'POST') throw methodNotAllowed(method, path);
    const cancellation = new Cancellation();
    // A client that goes away cancels the request: its model's signal fires and a generator is closed.
    res.once('close', () => {
      if (!res.writableFinished) cancellation.abort();
    });
    const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
    if (encoding !== 'identity') throw new TritonError('INVALID_ARGUMENT', "Unsupported content-encoding, only 'identity' is supported.");
    const body = parseBody(await readBody(req, this.core.config.httpMaxInputSize), this.core.config.jsonMaxDepth);
    const name = modelOf(body);
    try {
      if (path === '/v1/embeddings') await handleEmbeddings(this.core, body, res, cancellation);
      else await handleCompletion(this.core, body, res, cancellation, path === '/v1/chat/completions');
    } catch (err) {
      // OpenAI's words for a model it does not know.
      if (err instanceof TritonError && err.code === 'MODEL_NOT_FOUND' && !this.core.repository.has(name)) throw unknownModel(name);
      throw err;
    }
  }

  /** Refuses a request without the restricted group's header, or without the API key. */
  private authorize(req: http.IncomingMessage, path: string): void {
    if (this.restricted.any) {
      const missing = this.restricted.missingHeader(openAiApiGroup(req.method, path), (name) => req.headers[name]);
      if (missing !== undefined) throw httpRestrictedError(missing);
    }
    if (!this.authorization) return;
    const sent = req.headers.authorization;
    if (sent === undefined) throw new TritonError('RESTRICTED', "You didn't provide an API key. Send it in the Authorization header: 'Authorization: Bearer <key>'.");
    const bytes = Buffer.from(sent, 'utf8');
    if (bytes.length !== this.authorization.length || !timingSafeEqual(bytes, this.authorization)) throw new TritonError('RESTRICTED', 'Incorrect API key provided.');
  }

  /** The ready models, one entry per name. */
  private models(): ModelView[] {
    const byName = new Map<string, ModelView>();
    for (const m of this.core.repository.all()) if (m.ready && !byName.has(m.name)) byName.set(m.name, m);
    return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  /** The model a request names (its latest version); OpenAI's 404 when there is none. */
  private model(name: string): ModelView {
    if (!this.core.repository.has(name)) throw unknownModel(name);
    return this.core.repository.get(name);
  }

  private modelEntry(name: string): Record<string, unknown> {
    return { id: name, object: 'model', created: this.created, owned_by: 'tstriton' };
  }
}

/** The OpenAI-compatible API, for `HttpServer`'s `mount`: made per port, with that port's restrictions. */
export function mountOpenAi(core: ServerCore, logger: Logger): MountApi {
  return (restricted) => new OpenAiFrontend(core, restricted, logger);
}

function sendJson(res: http.ServerResponse, value: unknown): void {
  const text = JSON.stringify(value);
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/** OpenAI's 404 for a path it has no endpoint on. */
function invalidUrl(method: string | undefined, path: string): TritonError {
  return new TritonError('NOT_FOUND', `Invalid URL (${method ?? ''} ${path})`);
}

function unknownModel(name: string): TritonError {
  return new TritonError('MODEL_NOT_FOUND', `The model '${name}' does not exist.`);
}

function methodNotAllowed(method: string | undefined, path: string): TritonError {
  return new TritonError('METHOD_NOT_ALLOWED', `Method ${method ?? ''} is not allowed on ${path}`);
}
