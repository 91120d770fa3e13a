import type { ServerUnaryCall, ServerWritableStream, UntypedServiceImplementation, sendUnaryData } from '@grpc/grpc-js';
import { TritonError } from '../../base/errors';
import type { GrpcContext } from './grpc-context';
import { toGrpcStatus } from './grpc-status';
import type { HealthCheckResponseMessage } from '../../protocol/messages';

/**
 * `grpc.health.v1.Health`, as Triton registers it: `Check` ignores the service name and answers SERVING
 * while the server is ready, NOT_SERVING otherwise (and from the moment it starts stopping, so load
 * balancers stop sending work while in-flight calls drain). `Watch` is not offered, as in Triton.
 */
export function healthService(ctx: GrpcContext): UntypedServiceImplementation {
  return {
    Check(_call: ServerUnaryCall<unknown, HealthCheckResponseMessage>, callback: sendUnaryData<HealthCheckResponseMessage>) {
      callback(null, { status: ctx.tracker.accepting && ctx.core.isReady() ? 'SERVING' : 'NOT_SERVING' });
    },
    Watch(call: ServerWritableStream<unknown, HealthCheckResponseMessage>) {
      call.emit('error', toGrpcStatus(new TritonError('UNSUPPORTED', 'grpc.health.v1.Health/Watch is not supported by this server; use Check')));
    },
  };
}
