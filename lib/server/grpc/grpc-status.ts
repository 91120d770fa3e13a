import type { StatusObject } from '@grpc/grpc-js';
import { toTritonError, type TritonError } from '../../errors';

/**
 * Longest status message sent. The message travels in an HTTP/2 trailer, and a trailer block over the peer's
 * header list limit (grpc-js: 64 KiB) never arrives: the client would wait for its deadline instead.
 */
const MAX_DETAILS = 8 * 1024;

/** A gRPC status for a failed call: the code from the error table and the message as details (cut if very long). */
export function toGrpcStatus(err: unknown): Partial<StatusObject> {
  const e: TritonError = toTritonError(err);
  const details = e.message.length > MAX_DETAILS ? `${e.message.slice(0, MAX_DETAILS)}... (${e.message.length - MAX_DETAILS} more characters)` : e.message;
  return { code: e.grpcStatus, details };
}
