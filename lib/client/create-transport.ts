import * as grpc from '@grpc/grpc-js';
import { ClientError } from './client-error';
import type { ClientTransport } from './client-transport';
import { GrpcClientTransport } from './grpc-client-transport';
import { HttpClientTransport } from './http-client-transport';
import type { ClientTlsOptions } from './client-tls';

/** Settings of the transport that `createTransport` makes. */
export interface TransportOptions {
  /** TLS settings for `https://` and `grpcs://` URLs. */
  tls?: ClientTlsOptions;
}

/**
 * The transport for a URL: `grpc://host[:port]` (port 8001 by default) speaks gRPC, `grpcs://host[:port]` gRPC
 * over TLS (with `options.tls`), `http://host[:port]` or a bare `host:port` (port 8000 by default) speaks HTTP,
 * `https://host[:port]` HTTP over TLS,
 * as Triton's defaults.
 */
export function createTransport(url: string, options: TransportOptions = {}): ClientTransport {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(url) ? url : `http://${url}`;
  let parsed: URL;
  try {
    parsed = new URL(withScheme);
  } catch {
    throw new ClientError('INVALID_ARGUMENT', `invalid server URL ${JSON.stringify(url)}: expected http://host:port, grpc://host:port or grpcs://host:port`);
  }
  const scheme = parsed.protocol.replace(/:$/, '').toLowerCase();
  if (scheme === 'grpc' || scheme === 'grpcs') {
    const credentials = scheme === 'grpcs' ? grpcTlsCredentials(options.tls ?? {}) : grpc.credentials.createInsecure();
    return new GrpcClientTransport(url, `${parsed.hostname}:${parsed.port || '8001'}`, credentials);
  }
  if (scheme === 'http' || scheme === 'https') {
    // The URL parser drops a port that is the scheme's default (80, 443): only a URL without one means Triton's 8000.
    if (!parsed.port && !hasPort(withScheme)) parsed.port = '8000';
    if (scheme === 'https') checkClientCertificate(options.tls ?? {});
    return new HttpClientTransport(url, parsed, options.tls);
  }
  throw new ClientError('INVALID_ARGUMENT', `unsupported URL scheme '${scheme}' in ${JSON.stringify(url)}: use http://, https://, grpc:// or grpcs://`);
}

/** True when the URL's authority names a port. */
function hasPort(url: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\/(?:[^@/?#]*@)?(?:\[[^\]]*\]|[^:/?#]*):\d/i.test(url);
}

/** A client certificate comes with its key: either without the other is refused here, by name. */
function checkClientCertificate(tls: ClientTlsOptions): void {
  if ((tls.cert === undefined) !== (tls.key === undefined)) {
    throw new ClientError('INVALID_ARGUMENT', `tls.${tls.cert === undefined ? 'cert' : 'key'} is missing: a client certificate needs both tls.cert and tls.key`);
  }
}

/** gRPC channel credentials for TLS; a certificate without its key (or the reverse) is refused here, by name. */
function grpcTlsCredentials(tls: ClientTlsOptions): grpc.ChannelCredentials {
  checkClientCertificate(tls);
  const pem = (v: string | Buffer | undefined): Buffer | null => (v === undefined ? null : Buffer.from(v));
  return grpc.credentials.createSsl(pem(tls.ca), pem(tls.key), pem(tls.cert));
}
