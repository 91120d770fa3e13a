/** TLS settings of a client: PEM text (a string or its bytes), as Node's `tls` options take them. */
export interface ClientTlsOptions {
  /** CA certificate(s) the server's certificate must chain to; the system's roots when omitted. */
  ca?: string | Buffer;
  /** Client certificate (chain), for servers that require one (mutual TLS); needs `key`. */
  cert?: string | Buffer;
  /** Private key of `cert`. */
  key?: string | Buffer;
  /** HTTPS: false accepts a server certificate that does not chain to `ca` (for tests against self-signed servers). */
  rejectUnauthorized?: boolean;
}
