import { STATUS_CODES, maxHeaderSize } from 'node:http';
import type { Duplex } from 'node:stream';

/** A connection as node:http keeps it: `_httpMessage` is the response in progress on it, if any (undocumented). */
type ServerSocket = Duplex & { _httpMessage?: { headersSent?: boolean } | null };

/** A parser error: `code` is llhttp's (`HPE_*`) or node's; `reason` says what was wrong, without a prefix. */
type ParserError = Error & { code?: string; reason?: string };

/** Connections already answered: the parser reports every chunk that arrives after its error again. */
const answered = new WeakSet<Duplex>();

/**
 * Answers a request node's HTTP parser refused (a bad `Content-Length` or `Transfer-Encoding`, a bad chunk size,
 * a header line without a colon, headers too large, a request that took too long) with Triton's JSON error body
 * and `Connection: close`, then closes the connection. Node's own answer is a bare status line. Nothing is written
 * once a response has begun on the connection: a second one would corrupt it. The `clientError` listener of the
 * HTTP server.
 */
export function answerParserError(err: ParserError, socket: ServerSocket): void {
  if (answered.has(socket)) return;
  answered.add(socket);
  if (err.code === 'ECONNRESET' || !socket.writable || socket._httpMessage?.headersSent) {
    socket.destroy();
    return;
  }
  const [status, message] = describe(err);
  const body = JSON.stringify({ error: message });
  const head = `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n`;
  // Closed once written: a request under way on this connection then sees it close and gives up its body.
  socket.end(head + body, () => socket.destroy());
}

/** The status and message for a parser error. */
function describe(err: ParserError): [number, string] {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return [431, `request header fields too large: the request line and headers exceed ${maxHeaderSize} bytes`];
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return [413, 'malformed HTTP request: chunk extensions too large (HPE_CHUNK_EXTENSIONS_OVERFLOW)'];
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return [408, 'request timeout: the request was not received in full in time'];
    default:
      return [400, `malformed HTTP request: ${err.reason ?? err.message}${err.code ? ` (${err.code})` : ''}`];
  }
}
