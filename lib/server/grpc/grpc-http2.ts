import type * as http2 from 'node:http2';
import type * as grpc from '@grpc/grpc-js';

/** The largest window HTTP/2 allows (RFC 9113, 6.9.1). */
const MAX_WINDOW = 2 ** 31 - 1;

/** The parts of grpc-js's server this reaches: the options of the HTTP/2 servers it creates, and their creation. */
interface Http2Hooks {
  commonServerOptions?: http2.ServerOptions;
  createHttp2Server?: (credentials: grpc.ServerCredentials) => http2.Http2Server;
}

/** Takes a new stream before grpc-js sees it; true when it did. */
export type StreamRoute = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => boolean;

/**
 * Shapes the HTTP/2 servers grpc-js creates for `server` (call it before `bindAsync`):
 *
 * - **Flow control.** `window` bytes for each call (the SETTINGS_INITIAL_WINDOW_SIZE the server announces) and
 *   four times that for the connection. HTTP/2 starts both at 64 KiB, and grpc-js keeps that: a client then sends
 *   a 4 MB tensor in 64 KiB steps, each waiting for a WINDOW_UPDATE from the server's event loop, and measured
 *   throughput on 4 MB tensors doubled with 8 MiB windows. The window bounds what a client may send ahead, not
 *   what the server buffers (a message is read whole either way).
 * - **Routing.** Each new stream goes to `route` first; grpc-js serves those it leaves. The connection, TLS,
 *   sessions, keepalive and shutdown stay grpc-js's, for every stream.
 *
 * grpc-js has no option for either, so this wraps the creation of its HTTP/2 servers. Returns false, changing
 * nothing, if this grpc-js does not create them as expected (the tests check that windows and routes are in
 * effect).
 */
export function shapeHttp2Servers(server: grpc.Server, window: number, route?: StreamRoute): boolean {
  const hooks = server as unknown as Http2Hooks;
  const create = hooks.createHttp2Server;
  if (typeof create !== 'function' || typeof hooks.commonServerOptions !== 'object') return false;
  const options = hooks.commonServerOptions;
  options.settings = { ...options.settings, initialWindowSize: window };
  const connectionWindow = Math.min(4 * window, MAX_WINDOW);
  hooks.createHttp2Server = (credentials) => {
    const h2 = create.call(server, credentials);
    h2.on('session', (session: http2.ServerHttp2Session) => {
      // Sent at once as a WINDOW_UPDATE on the connection; a session closed before this has nothing to widen.
      if (!session.destroyed) session.setLocalWindowSize(connectionWindow);
    });
    if (route) {
      // grpc-js listens for 'stream' on the server; a routed stream never reaches that listener.
      const emit = h2.emit;
      h2.emit = function (this: http2.Http2Server, event: string | symbol, ...args: unknown[]): boolean {
        if (event === 'stream' && route(args[0] as http2.ServerHttp2Stream, args[1] as http2.IncomingHttpHeaders)) return true;
        return emit.call(this, event, ...args);
      } as typeof h2.emit;
    }
    return h2;
  };
  return true;
}
