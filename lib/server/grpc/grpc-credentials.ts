import { ServerCredentials } from '@grpc/grpc-js';
import type { TritonConfig } from '../../config/triton-config';
import { serverTlsMaterial } from '../tls';

/**
 * The gRPC server's credentials: insecure, or TLS with `grpcServerCert` and `grpcServerKey` when `grpcUseSsl`
 * is set; `grpcUseSslMutual` also requires client certificates signed by `grpcRootCert` (Triton's
 * `--grpc-use-ssl*` options).
 */
export function grpcServerCredentials(config: TritonConfig): ServerCredentials {
  const tls = serverTlsMaterial('grpc', config);
  if (!tls) return ServerCredentials.createInsecure();
  return ServerCredentials.createSsl(tls.ca, [{ private_key: tls.key, cert_chain: tls.cert }], tls.mutual);
}
