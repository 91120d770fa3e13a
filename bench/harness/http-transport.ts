/**
 * Raw keep-alive HTTP/1.1 connections, one per lane, each sending pre-built request bytes and reading the whole
 * response (status line, headers, Content-Length body) before it sends again. Raw sockets keep the client's
 * cost per request to a few microseconds, so that it is the server that saturates.
 */
import * as net from 'node:net';
import type { Transport } from './load-driver';

const CONTENT_LENGTH = /\r\ncontent-length:[ \t]*(\d+)/i;

/** Connections to 127.0.0.1:`port` sending `requests` (raw HTTP/1.1 requests) in turn. */
export function httpTransport(port: number, requests: readonly Buffer[]): Transport {
  return {
    requests: requests.length,
    close: () => undefined,
    open(events) {
      const socket = net.connect({ host: '127.0.0.1', port });
      socket.setNoDelay(true);
      /** Header bytes received so far, while no blank line has arrived. */
      let head: Buffer | undefined;
      /** Body bytes still to read; -1 while reading a header. */
      let remaining = -1;
      let ok = true;
      let status = '';

      socket.on('connect', () => events.ready());
      socket.on('error', (err) => events.lost(`socket: ${err.message}`));
      socket.on('close', () => events.lost('the server closed the connection'));
      socket.on('data', (chunk: Buffer) => {
        let buf = chunk;
        let off = 0;
        while (off < buf.length) {
          if (remaining < 0) {
            if (head) {
              buf = Buffer.concat([head, buf.subarray(off)]);
              off = 0;
              head = undefined;
            }
            const headerEnd = buf.indexOf('\r\n\r\n', off);
            if (headerEnd < 0) {
              head = buf.subarray(off);
              return;
            }
            const text = buf.toString('latin1', off, headerEnd);
            const m = CONTENT_LENGTH.exec(text);
            if (!m) {
              events.lost(`response without Content-Length: ${text.slice(0, 200)}`);
              return;
            }
            status = text.slice(0, text.indexOf('\r\n'));
            ok = text.startsWith('HTTP/1.1 200');
            remaining = Number(m[1]);
            off = headerEnd + 4;
          }
          const take = Math.min(remaining, buf.length - off);
          const bodyStart = off;
          remaining -= take;
          off += take;
          if (remaining === 0) {
            remaining = -1;
            events.answered(ok ? undefined : `${status}: ${buf.toString('utf8', bodyStart, Math.min(off, bodyStart + 300))}`);
          }
        }
      });
      return {
        send: (index) => void socket.write(requests[index] as Buffer),
        close: () => void socket.destroy(),
      };
    },
  };
}
