import type * as http2 from 'node:http2';
import type * as grpc from '@grpc/grpc-js';

/** The largest window HTTP/2 allows (RFC 9113, 6.9.1). */
const MAX_WINDOW = 2 ** 31 - 1;

/** The parts of grpc-js's server this reaches: the options of the HTTP/2 servers it creates, and their creation. */
interface Http2Hooks {
  commonServerOptions?: http2.ServerOptions;
  createHttp2Server?: (credentials: grpc.ServerCredentials) => http2.Http2Server;
}

/**
 * Widens the HTTP/2 flow-control windows of the gRPC endpoint: `window` bytes for each call (the
 * SETTINGS_INITIAL_WINDOW_SIZE the server announces) and four times that for the connection.
 *
 * HTTP/2 starts both at 64 KiB, and grpc-js keeps that. A client then sends a 4 MB tensor in 64 KiB steps,
 * each waiting for a WINDOW_UPDATE from the server's event loop: under load, most of a large request's time is
 * spent waiting, and measured throughput on 4 MB tensors doubled with 8 MiB windows. The window bounds what a
 * client may send ahead, not what the server buffers (grpc-js reads every message whole either way).
 *
 * grpc-js has no option for either window, so this sets them on the HTTP/2 servers it creates; call it before
 * `bindAsync`. Returns false, changing nothing, if this grpc-js does not create its servers as expected (the
 * tests check that the windows are in effect).
 */
export function widenFlowControl(server: grpc.Server, window: number): boolean {
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
    return h2;
  };
  return true;
}
