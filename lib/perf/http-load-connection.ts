import * as net from 'node:net';
import * as tls from 'node:tls';
import type { ConnectionTarget } from './connection-target';
import type { LoadConnection } from './load-connection';

const CONTENT_LENGTH = /\r\ncontent-length:[ \t]*(\d+)/i;
const CHUNKED = /\r\ntransfer-encoding:[ \t]*chunked/i;
const CLOSE = /\r\nconnection:[ \t]*close/i;
const MAX_ERROR_TEXT = 300;

/**
 * A raw keep-alive HTTP/1.1 connection that writes pre-built request bytes and reads the answer's status line,
 * headers and body (Content-Length, or chunked) without building a response object, so that a request costs the
 * client a few microseconds. Connects lazily, at the first request, and again after the server closes it.
 */
export class HttpLoadConnection implements LoadConnection {
  private socket: net.Socket | undefined;
  private done: ((problem?: string) => void) | undefined;
  private pending: Uint8Array | undefined;
  /** Bytes of a response not yet complete. */
  private buffered: Buffer | undefined;

  constructor(private readonly target: ConnectionTarget) {}

  send(request: Uint8Array, done: (problem?: string) => void): void {
    this.done = done;
    const socket = this.socket ?? this.connect();
    if (socket.connecting || (socket instanceof tls.TLSSocket && !socket.encrypted)) this.pending = request;
    else socket.write(request);
  }

  close(): void {
    this.socket?.destroy();
    this.socket = undefined;
  }

  private connect(): net.Socket {
    const { host, port } = this.target;
    const t = this.target.tls;
    const socket = t
      ? tls.connect({
          host,
          port,
          ca: t.ca,
          cert: t.cert,
          key: t.key,
          rejectUnauthorized: t.verifyPeer,
          ...(!t.verifyHost && { checkServerIdentity: () => undefined }),
          ...(net.isIP(host) === 0 && { servername: host }),
        })
      : net.connect({ host, port });
    socket.setNoDelay(true);
    socket.on(t ? 'secureConnect' : 'connect', () => {
      const request = this.pending;
      this.pending = undefined;
      if (request) socket.write(request);
    });
    // Events of a socket this connection has already dropped are not its business any more.
    socket.on('data', (chunk: Buffer) => this.socket === socket && this.onData(chunk));
    socket.on('error', (err) => this.socket === socket && this.fail(err.message));
    socket.on('close', () => this.socket === socket && this.fail('the server closed the connection'));
    this.socket = socket;
    return socket;
  }

  private fail(problem: string): void {
    this.socket?.destroy();
    this.socket = undefined;
    this.buffered = undefined;
    this.pending = undefined;
    // An idle connection the server closed is opened again at the next request.
    const done = this.done;
    this.done = undefined;
    done?.(problem);
  }

  private onData(chunk: Buffer): void {
    const data = this.buffered ? Buffer.concat([this.buffered, chunk]) : chunk;
    const headerEnd = data.indexOf('\r\n\r\n');
    if (headerEnd < 0) {
      this.buffered = data;
      return;
    }
    const head = data.toString('latin1', 0, headerEnd);
    const bodyStart = headerEnd + 4;
    let end: number;
    const length = CONTENT_LENGTH.exec(head);
    if (length) {
      end = bodyStart + Number(length[1]);
    } else if (CHUNKED.test(head)) {
      end = chunkedEnd(data, bodyStart);
    } else {
      this.fail(`an answer without Content-Length: ${head.slice(0, MAX_ERROR_TEXT)}`);
      return;
    }
    if (end < 0 || data.length < end) {
      this.buffered = data;
      return;
    }
    this.buffered = undefined;
    const ok = head.startsWith('HTTP/1.1 200') || head.startsWith('HTTP/1.0 200');
    const done = this.done;
    this.done = undefined;
    if (CLOSE.test(head)) this.close();
    done?.(ok ? undefined : `${head.slice(0, head.indexOf('\r\n'))}: ${data.toString('utf8', bodyStart, Math.min(end, bodyStart + MAX_ERROR_TEXT))}`);
  }
}

/** Where a chunked body that starts at `start` ends (after its last chunk and trailer), or -1 when it has not all arrived. */
function chunkedEnd(data: Buffer, start: number): number {
  let pos = start;
  for (;;) {
    const lineEnd = data.indexOf('\r\n', pos);
    if (lineEnd < 0) return -1;
    const size = parseInt(data.toString('latin1', pos, lineEnd), 16);
    if (size === 0) {
      const trailerEnd = data.indexOf('\r\n\r\n', lineEnd);
      if (data.length >= lineEnd + 4 && data[lineEnd + 2] === 13 && data[lineEnd + 3] === 10) return lineEnd + 4;
      return trailerEnd < 0 ? -1 : trailerEnd + 4;
    }
    pos = lineEnd + 2 + size + 2;
    if (pos > data.length) return -1;
  }
}
