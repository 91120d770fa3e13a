import * as http from 'node:http';
import * as https from 'node:https';
import { ClientError, abortedError, timeoutError } from './client-error';
import type { CallSettings } from './client-transport';

/** A finished HTTP exchange. */
export interface HttpAnswer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: Buffer;
}

/** One HTTP request. */
export interface HttpRequestSpec {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly headers?: http.OutgoingHttpHeaders;
  /** Body chunks, written in order without concatenating them. */
  readonly body?: readonly Uint8Array[];
}

/**
 * Sends one request on a keep-alive agent and reads the whole answer. The timeout and the signal
 * destroy the request (the server sees the connection close and cancels the work); a lost connection
 * fails with UNAVAILABLE.
 */
export function httpExchange(agent: http.Agent, base: URL, spec: HttpRequestSpec, settings: CallSettings): Promise<HttpAnswer> {
  const { signal, timeoutMs } = settings;
  if (signal?.aborted) return Promise.reject(abortedError(signal));
  return new Promise<HttpAnswer>((resolve, reject) => {
    let done = false;
    const finish = (err: ClientError | undefined, answer?: HttpAnswer): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (err) {
        req.destroy();
        reject(err);
      } else {
        resolve(answer as HttpAnswer);
      }
    };
    const onAbort = (): void => finish(abortedError(signal as AbortSignal));
    const timer = setTimeout(() => finish(timeoutError(`${spec.method} ${spec.path}`, timeoutMs)), timeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });

    let length = 0;
    for (const chunk of spec.body ?? []) length += chunk.byteLength;
    const headers: http.OutgoingHttpHeaders = { ...settings.headers, ...spec.headers };
    if (spec.method === 'POST') headers['Content-Length'] = length;
    const req = requestFor(base)({
      agent,
      protocol: base.protocol,
      hostname: base.hostname.replace(/^\[|\]$/g, ''),
      port: base.port,
      method: spec.method,
      path: spec.path,
      headers,
    });
    req.on('error', (err) => finish(new ClientError('UNAVAILABLE', `connection to ${base.host} failed: ${err.message}`, undefined, { cause: err })));
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', (err) => finish(new ClientError('UNAVAILABLE', `connection to ${base.host} lost: ${err.message}`, undefined, { cause: err })));
      res.on('aborted', () => finish(new ClientError('UNAVAILABLE', `connection to ${base.host} lost while reading the answer`)));
      res.on('end', () => {
        const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
        finish(undefined, { status: res.statusCode ?? 0, headers: res.headers, body });
      });
    });
    if (spec.body) {
      req.cork();
      for (const chunk of spec.body) req.write(chunk);
      req.uncork();
    }
    req.end();
  });
}

/** The ClientError for a non-200 answer, with the message of Triton's `{"error": ...}` body. */
export function httpError(answer: HttpAnswer): ClientError {
  let message = answer.body.toString('utf8');
  try {
    const parsed = JSON.parse(message) as { error?: unknown };
    if (typeof parsed.error === 'string') message = parsed.error;
  } catch {
    // Not JSON: keep the body as the message.
  }
  return ClientError.fromHttp(answer.status, message || `HTTP ${answer.status}`);
}

/** `https.request` for `https:` URLs, `http.request` otherwise. */
export function requestFor(base: URL): typeof http.request {
  return base.protocol === 'https:' ? https.request : http.request;
}
