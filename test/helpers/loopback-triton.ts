import { Triton, type TritonConfigInit } from '../../lib';

/**
 * A test server's settings before the test's own: every transport listens on 127.0.0.1 at a port the system picks,
 * so that turning gRPC or metrics on (`allowGrpc: true`, `allowMetrics: true`) never binds 0.0.0.0 or a fixed port;
 * HTTP is on, gRPC and metrics are off, and nothing is logged.
 */
const LOOPBACK: TritonConfigInit = {
  httpPort: 0,
  httpAddress: '127.0.0.1',
  allowGrpc: false,
  grpcPort: 0,
  grpcAddress: '127.0.0.1',
  allowMetrics: false,
  metricsPort: 0,
  metricsAddress: '127.0.0.1',
  logLevel: 'silent',
};

/** The loopback test settings (see `loopbackTriton`) with `init`'s fields added or overriding them. */
export function loopbackConfig(init: TritonConfigInit = {}): TritonConfigInit {
  return { ...LOOPBACK, ...init };
}

/**
 * A Triton (not yet running) that listens only on 127.0.0.1 at ports the system picks, serves HTTP alone and logs
 * nothing, unless `init` says otherwise (`{ allowGrpc: true }` adds gRPC, on 127.0.0.1 too). It is not tracked: the
 * caller stops it, or passes it to `track()`.
 */
export function loopbackTriton(init?: TritonConfigInit): Triton {
  return new Triton(loopbackConfig(init));
}
