import { ClientError } from './client-error';
import type { ClientTransport } from './client-transport';
import { GrpcClientTransport } from './grpc-client-transport';
import { HttpClientTransport } from './http-client-transport';

/**
 * The transport for a URL: `grpc://host[:port]` (port 8001 by default) speaks gRPC, `http://host[:port]`
 * or a bare `host:port` (port 8000 by default) speaks HTTP, as Triton's defaults.
 */
export function createTransport(url: string): ClientTransport {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(url) ? url : `http://${url}`;
  let parsed: URL;
  try {
    parsed = new URL(withScheme);
  } catch {
    throw new ClientError('INVALID_ARGUMENT', `invalid server URL ${JSON.stringify(url)}: expected http://host:port or grpc://host:port`);
  }
  const scheme = parsed.protocol.replace(/:$/, '').toLowerCase();
  if (scheme === 'grpc') {
    return new GrpcClientTransport(url, `${parsed.hostname}:${parsed.port || '8001'}`);
  }
  if (scheme === 'http') {
    if (!parsed.port) parsed.port = '8000';
    return new HttpClientTransport(url, parsed);
  }
  throw new ClientError('INVALID_ARGUMENT', `unsupported URL scheme '${scheme}' in ${JSON.stringify(url)}: use http:// or grpc://`);
}
