import { GrpcStatus, TritonError, type ErrorCode } from '../base/errors';

/**
 * An error from `ModelClient`: a code from the error table and, when a server answered, its status —
 * the HTTP status for `http://` URLs, the gRPC status code for `grpc://` URLs. `status` is undefined
 * for errors raised in the client itself (bad input, abort, timeout, connection refused over HTTP).
 */
export class ClientError extends TritonError {
  override readonly name: string = 'ClientError';

  constructor(
    code: ErrorCode,
    message: string,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
  }

  /** An error for an HTTP answer other than 200, with the server's `{"error": ...}` message. */
  static fromHttp(status: number, message: string): ClientError {
    return new ClientError(HTTP_CODES[status] ?? 'INTERNAL', message, status);
  }

  /** An error for a failed gRPC call, with its status code and details. */
  static fromGrpc(code: number, details: string, cause?: unknown): ClientError {
    return new ClientError(GRPC_CODES.get(code) ?? 'INTERNAL', details, code, { cause });
  }
}

const HTTP_CODES: Record<number, ErrorCode> = {
  400: 'INVALID_ARGUMENT',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  500: 'INTERNAL',
  501: 'UNSUPPORTED',
  503: 'UNAVAILABLE',
};

const GRPC_CODES = new Map<number, ErrorCode>([
  [GrpcStatus.CANCELLED, 'CANCELLED'],
  [GrpcStatus.INVALID_ARGUMENT, 'INVALID_ARGUMENT'],
  [GrpcStatus.DEADLINE_EXCEEDED, 'DEADLINE_EXCEEDED'],
  [GrpcStatus.NOT_FOUND, 'NOT_FOUND'],
  [GrpcStatus.ALREADY_EXISTS, 'ALREADY_EXISTS'],
  [GrpcStatus.RESOURCE_EXHAUSTED, 'PAYLOAD_TOO_LARGE'],
  [GrpcStatus.UNIMPLEMENTED, 'UNSUPPORTED'],
  [GrpcStatus.INTERNAL, 'INTERNAL'],
  [GrpcStatus.UNAVAILABLE, 'UNAVAILABLE'],
]);

/** The error for a call given up because its signal fired. */
export function abortedError(signal: AbortSignal): ClientError {
  return new ClientError('CANCELLED', 'the call was aborted', undefined, { cause: signal.reason });
}

/** The error for a call that did not finish within its timeout. */
export function timeoutError(what: string, timeoutMs: number): ClientError {
  return new ClientError('DEADLINE_EXCEEDED', `${what} did not finish within ${timeoutMs / 1000} s`);
}
