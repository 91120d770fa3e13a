import { TritonError, toTritonError, type ErrorCode } from '../../base/errors';

/** A TritonError as it crosses threads. */
export interface PackedError {
  readonly code: ErrorCode;
  readonly message: string;
}

export function packError(err: unknown): PackedError {
  const error = toTritonError(err);
  return { code: error.code, message: error.message };
}

export function unpackError(packed: PackedError): TritonError {
  return new TritonError(packed.code, packed.message);
}
