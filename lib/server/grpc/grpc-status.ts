import type { StatusObject } from '@grpc/grpc-js';
import { toTritonError, type TritonError } from '../../errors';

/** A gRPC status for a failed call: the code from the error table and the message as details. */
export function toGrpcStatus(err: unknown): Partial<StatusObject> {
  const e: TritonError = toTritonError(err);
  return { code: e.grpcStatus, details: e.message };
}
