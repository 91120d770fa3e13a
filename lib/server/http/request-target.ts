import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { TritonError } from '../../errors';

/**
 * One %-escaped segment of a request path (a model or region name), decoded. A malformed escape (`%ZZ`, a
 * cut-off UTF-8 sequence) is the client's mistake: INVALID_ARGUMENT naming the segment, never a URIError.
 */
export function decodeSegment(raw: string): string {
  if (!raw.includes('%')) return raw;
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new TritonError('INVALID_ARGUMENT', `malformed percent-encoding in the request path: '${raw.length > 200 ? `${raw.slice(0, 200)}...` : raw}'`);
  }
}

/**
 * The origin form (`/path?query`) of an absolute-form request target (`http://host:port/path?query`), as a
 * server must accept it (RFC 9112, 3.2.2); anything else is returned as it is.
 */
export function originForm(target: string): string {
  const m = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i.exec(target);
  if (!m) return target;
  const rest = target.slice(m[0].length);
  return rest === '' ? '/' : rest.startsWith('?') ? `/${rest}` : rest;
}

/**
 * Answers a request node's HTTP parser refused (bad `Content-Length` or `Transfer-Encoding`, a bad chunk size,
 * headers too large) with Triton's JSON error body, when the connection can still take an answer, and closes
 * the connection after it. `clientError` listener of the HTTP server.
 */
export function answerClientError(err: Error & { code?: string }, socket: Duplex & { _httpMessage?: ServerResponse | null }): void {
  const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const body = JSON.stringify({ error: `malformed HTTP request: ${err.message}${err.code ? ` (${err.code})` : ''}` });
  const headers = { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), Connection: 'close' };
  const res = socket._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || res?.headersSent) {
    socket.destroy();
  } else if (res) {
    // The headers were fine and a handler has the request; its body is not. Answer through its response: the
    // handler then sees its request end early and leaves the answered response alone.
    res.shouldKeepAlive = false;
    res.writeHead(status, headers);
    res.end(body);
  } else {
    socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n${body}`);
  }
}
