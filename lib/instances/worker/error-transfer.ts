import { ERROR_CODES, TritonError, UnrecoverableError, type ErrorCode } from '../../base/errors';

/** An error as it crosses between threads: structured clone keeps neither its class nor its `code`. */
export interface WireError {
  readonly kind: 'unrecoverable' | 'triton' | 'error';
  readonly name: string;
  readonly message: string;
  readonly code?: ErrorCode;
  readonly stack?: string;
}

/** Flattens anything thrown into a WireError, remembering whether it was an UnrecoverableError or a TritonError. */
export function serializeError(err: unknown): WireError {
  // Duck-typed: errors from another realm (Node's DOMExceptions under jest) fail `instanceof Error`.
  if (!isErrorLike(err)) return { kind: 'error', name: 'Error', message: String(err) };
  const stack = typeof err.stack === 'string' ? err.stack : undefined;
  // By name as well as by class: the user's module may carry its own copy of tstriton.
  if (err instanceof UnrecoverableError || err.name === 'UnrecoverableError') return { kind: 'unrecoverable', name: err.name, message: err.message, stack };
  const code = (err as { code?: unknown }).code;
  if ((err instanceof TritonError || err.name === 'TritonError') && typeof code === 'string' && code in ERROR_CODES) {
    return { kind: 'triton', name: err.name, message: err.message, code: code as ErrorCode, stack };
  }
  return { kind: 'error', name: err.name, message: err.message, stack };
}

function isErrorLike(err: unknown): err is Error {
  return typeof err === 'object' && err !== null && typeof (err as Error).message === 'string' && typeof (err as Error).name === 'string';
}

/** Rebuilds an error thrown in the other thread: an UnrecoverableError, a TritonError with its code, or an Error with its name and message. */
export function deserializeError(wire: WireError): Error {
  let err: Error;
  if (wire.kind === 'unrecoverable') err = new UnrecoverableError(wire.message);
  else if (wire.kind === 'triton' && wire.code !== undefined) err = new TritonError(wire.code, wire.message);
  else {
    err = new Error(wire.message);
    if (wire.name !== 'Error') Object.defineProperty(err, 'name', { value: wire.name, configurable: true, writable: true });
  }
  // The other thread's stack says where it was thrown; this thread's would only show the message handler.
  if (wire.stack !== undefined) err.stack = wire.stack;
  return err;
}
