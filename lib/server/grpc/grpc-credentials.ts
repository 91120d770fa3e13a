import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { ServerCredentials } from '@grpc/grpc-js';
import type { TritonConfig } from '../../config/triton-config';
import { TritonError } from '../../errors';

/** The TLS settings of TritonConfig that the gRPC endpoint reads (Triton's `--grpc-use-ssl*` options). */
type GrpcTlsConfig = Pick<TritonConfig, 'grpcUseSsl' | 'grpcUseSslMutual' | 'grpcServerCert' | 'grpcServerKey' | 'grpcRootCert'>;

/**
 * The gRPC server's credentials: insecure, or TLS with `grpcServerCert` and `grpcServerKey` when `grpcUseSsl`
 * is set; `grpcUseSslMutual` also requires client certificates signed by `grpcRootCert` (and, as in Triton,
 * turns TLS on by itself). The files are read and the certificate, key and CA checked together now, so that a
 * bad setting fails `new Triton()` with INVALID_CONFIG naming the option and its file, not the first
 * connection.
 */
export function grpcServerCredentials(config: GrpcTlsConfig): ServerCredentials {
  const mutual = config.grpcUseSslMutual;
  if (!config.grpcUseSsl && !mutual) return ServerCredentials.createInsecure();
  const turnedOn = mutual ? 'grpcUseSslMutual' : 'grpcUseSsl';
  const cert = readPem('grpcServerCert', config.grpcServerCert, `${turnedOn} needs grpcServerCert, the PEM file of the server certificate`);
  const key = readPem('grpcServerKey', config.grpcServerKey, `${turnedOn} needs grpcServerKey, the PEM file of the server private key`);
  const root =
    config.grpcRootCert !== undefined || mutual
      ? readPem('grpcRootCert', config.grpcRootCert, 'grpcUseSslMutual needs grpcRootCert, the PEM file of the CA that signs client certificates')
      : null;
  try {
    createSecureContext({ cert, key, ...(root ? { ca: root } : {}) });
  } catch (err) {
    const files = [`grpcServerCert '${config.grpcServerCert}'`, `grpcServerKey '${config.grpcServerKey}'`];
    if (root) files.push(`grpcRootCert '${config.grpcRootCert}'`);
    throw new TritonError('INVALID_CONFIG', `invalid gRPC TLS setting: ${(err as Error).message} (${files.join(', ')})`, { cause: err });
  }
  return ServerCredentials.createSsl(root, [{ private_key: key, cert_chain: cert }], mutual);
}

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
