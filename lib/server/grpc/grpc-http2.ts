import * as http2 from 'node:http2';
import type { TLSSocket } from 'node:tls';
import { TritonError } from '../../base/errors';
import type { ServerTlsMaterial } from '../tls';

/** The largest window HTTP/2 allows (RFC 9113, 6.9.1). */
const MAX_WINDOW = 2 ** 31 - 1;

/** What the gRPC port is served with. */
export interface GrpcHttp2Options {
  /** TLS (client certificates required with `mutual`), or plaintext HTTP/2 without it. */
  readonly tls?: ServerTlsMaterial;
  /** Flow-control window of each call, in bytes; the connection's is four times it (`grpcFlowControlWindow`). */
  readonly window: number;
}

/**
 * The gRPC port: a node:http2 server, plaintext or over TLS (ALPN `h2`), that hands each new stream to `onStream`.
 *
 * **Flow control.** The server announces `window` bytes for each call (SETTINGS_INITIAL_WINDOW_SIZE) and widens
 * each connection's window to four times that. HTTP/2 starts both at 64 KiB: a client would then send a 4 MB
 * tensor in 64 KiB steps, each waiting for a WINDOW_UPDATE from the server's event loop, and measured throughput on
 * 4 MB tensors doubled with 8 MiB windows. The window bounds what a client may send ahead, not what the server
 * buffers (a message is read whole either way).
 *
 * Pings are answered by node:http2 itself. Closing sends every connection a GOAWAY, lets the calls on it finish,
 * and cuts what is left after a grace time.
 */
export class GrpcHttp2Port {
  private readonly server: http2.Http2Server | http2.Http2SecureServer;
  private readonly sessions = new Set<http2.ServerHttp2Session>();

  constructor(options: GrpcHttp2Options, onStream: (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => void) {
    const common: http2.ServerOptions = {
      settings: { initialWindowSize: options.window },
      // As grpc-js sets them: node's default session memory limit (10 MB) would refuse a connection whose client
      // sends a few large messages at once, and the limit on sent header blocks would cut a long status message.
      maxSessionMemory: Number.MAX_SAFE_INTEGER,
      maxSendHeaderBlockLength: Number.MAX_SAFE_INTEGER,
    };
    const tls = options.tls;
    if (tls) {
      const server = http2.createSecureServer({
        ...common,
        cert: tls.cert,
        key: tls.key,
        ...(tls.ca ? { ca: tls.ca } : {}),
        requestCert: tls.mutual,
        rejectUnauthorized: tls.mutual,
      });
      // A handshake that fails (a plaintext client, an untrusted certificate) is the client's problem; node asks
      // the server to handle errors on its TLS sockets.
      server.on('secureConnection', (socket: TLSSocket) => socket.on('error', () => undefined));
      this.server = server;
    } else {
      this.server = http2.createServer(common);
    }
    this.server.setTimeout(0);
    const connectionWindow = Math.min(4 * options.window, MAX_WINDOW);
    this.server.on('session', (session: http2.ServerHttp2Session) => {
      this.sessions.add(session);
      session.once('close', () => this.sessions.delete(session));
      // Sent at once as a WINDOW_UPDATE on the connection; a session closed before this has nothing to widen.
      if (!session.destroyed) session.setLocalWindowSize(connectionWindow);
    });
    this.server.on('stream', onStream);
  }

  /** Listens on `address:port` (0 picks a free port); resolves with the bound port. `reusePort`: as `listenOn`. */
  listen(address: string, port: number, reusePort = false): Promise<number> {
    const server = this.server;
    return new Promise((resolve, reject) => {
      const failed = (err: Error): void => {
        const host = address.includes(':') ? `[${address}]` : address;
        reject(new TritonError('INTERNAL', `gRPC server could not listen on ${host}:${port}: ${err.message}`, { cause: err }));
      };
      server.once('error', failed);
      server.listen({ port, host: address, ...(reusePort ? { reusePort } : {}) }, () => {
        server.off('error', failed);
        const bound = server.address();
        resolve(typeof bound === 'object' && bound !== null ? bound.port : port);
      });
    });
  }

  /**
   * Stops listening and closes every connection gracefully (GOAWAY; the calls on it finish), cutting those left
   * after `graceMs`. Resolves once every connection is closed.
   */
  close(graceMs: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        for (const session of this.sessions) session.destroy(new Error('the gRPC server closed'), http2.constants.NGHTTP2_CANCEL);
      }, graceMs);
      // The server's callback waits for its connections to end.
      this.server.close(() => {
        clearTimeout(timer);
        resolve();
      });
      for (const session of this.sessions) if (!session.closed) session.close();
    });
  }
}
