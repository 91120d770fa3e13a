import { GrpcStatus, toTritonError, type TritonError } from '../../base/errors';

/** How a call ends: a gRPC status code and its message (the `grpc-status` and `grpc-message` trailers). */
export interface GrpcCallStatus {
  readonly code: number;
  readonly details: string;
}

/**
 * Longest status message sent. The message travels in an HTTP/2 trailer, and a trailer block over the peer's
 * header list limit (grpc-js: 64 KiB) never arrives: the client would wait for its deadline instead.
 */
const MAX_DETAILS = 8 * 1024;

/** A gRPC status for a failed call: the code from the error table and the message as details (cut if very long). */
export function toGrpcStatus(err: unknown): GrpcCallStatus {
  const e: TritonError = toTritonError(err);
  const details = e.message.length > MAX_DETAILS ? `${e.message.slice(0, MAX_DETAILS)}... (${e.message.length - MAX_DETAILS} more characters)` : e.message;
  return { code: e.grpcStatus, details };
}

/**
 * The status a handler's error stands for, read as grpc-js reads it: its `code` (UNKNOWN without one) and its
 * `details`, else its `message`.
 */
export function statusOf(err: unknown): GrpcCallStatus {
  const e = (typeof err === 'object' && err !== null ? err : {}) as { code?: unknown; details?: unknown; message?: unknown };
  const code = typeof e.code === 'number' && Number.isInteger(e.code) ? e.code : GrpcStatus.UNKNOWN;
  const details = typeof e.details === 'string' ? e.details : typeof e.message === 'string' ? e.message : 'Unknown Error';
  return { code, details };
}
