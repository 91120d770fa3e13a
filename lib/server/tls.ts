import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import type { TritonConfig } from '../config/triton-config';
import { TritonError } from '../base/errors';

/** The PEM material an endpoint serves TLS with, read and checked at `new Triton()`. */
export interface ServerTlsMaterial {
  readonly cert: Buffer;
  readonly key: Buffer;
  /** The CA client certificates must chain to (mutual TLS), or null. */
  readonly ca: Buffer | null;
  /** Client certificates are required. */
  readonly mutual: boolean;
}

/**
 * The TLS material of the `http` or `gRPC` endpoint from its `<endpoint>UseSsl`, `<endpoint>UseSslMutual`,
 * `<endpoint>ServerCert`, `<endpoint>ServerKey` and `<endpoint>RootCert` options; undefined when TLS is off.
 * Mutual TLS turns TLS on by itself, as Triton's `--grpc-use-ssl-mutual` does. The files are read and the
 * certificate, key and CA checked together now, so that a bad setting fails `new Triton()` with
 * INVALID_CONFIG naming the option and its file, not the first connection.
 */
export function serverTlsMaterial(endpoint: 'http' | 'grpc', config: TritonConfig): ServerTlsMaterial | undefined {
  const o = OPTIONS[endpoint];
  const mutual = config[o.mutual];
  if (!config[o.useSsl] && !mutual) return undefined;
  const turnedOn = mutual ? o.mutual : o.useSsl;
  const certFile = config[o.cert];
  const keyFile = config[o.key];
  const rootFile = config[o.root];
  const cert = readPem(o.cert, certFile, `${turnedOn} needs ${o.cert}, the PEM file of the server certificate`);
  const key = readPem(o.key, keyFile, `${turnedOn} needs ${o.key}, the PEM file of the server private key`);
  const ca = rootFile !== undefined || mutual ? readPem(o.root, rootFile, `${o.mutual} needs ${o.root}, the PEM file of the CA that signs client certificates`) : null;
  try {
    createSecureContext({ cert, key, ...(ca ? { ca } : {}) });
  } catch (err) {
    const files = [`${o.cert} '${certFile}'`, `${o.key} '${keyFile}'`];
    if (ca) files.push(`${o.root} '${rootFile}'`);
    throw new TritonError('INVALID_CONFIG', `invalid ${o.label} TLS setting: ${(err as Error).message} (${files.join(', ')})`, { cause: err });
  }
  return { cert, key, ca, mutual };
}

/** The option names of each endpoint's TLS settings. */
const OPTIONS = {
  http: { label: 'HTTP', useSsl: 'httpUseSsl', mutual: 'httpUseSslMutual', cert: 'httpServerCert', key: 'httpServerKey', root: 'httpRootCert' },
  grpc: { label: 'gRPC', useSsl: 'grpcUseSsl', mutual: 'grpcUseSslMutual', cert: 'grpcServerCert', key: 'grpcServerKey', root: 'grpcRootCert' },
} as const;

/** The contents of the PEM file an option names; INVALID_CONFIG naming both when it is unset or unreadable. */
function readPem(option: string, file: string | undefined, missing: string): Buffer {
  if (file === undefined || file === '') throw new TritonError('INVALID_CONFIG', `invalid TritonConfig: ${missing}`);
  let pem: Buffer;
  try {
    pem = readFileSync(file);
  } catch (err) {
    throw new TritonError('INVALID_CONFIG', `invalid TritonConfig: ${option}: cannot read '${file}': ${(err as Error).message}`, { cause: err });
  }
  if (!pem.includes('-----BEGIN ')) throw new TritonError('INVALID_CONFIG', `invalid TritonConfig: ${option}: '${file}' is not a PEM file`);
  return pem;
}
