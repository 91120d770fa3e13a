import type { Response } from '../callable/callable';
import { ERROR_CODES, TritonError, UnrecoverableError, type ErrorCode } from '../base/errors';

/** Checks that a callable answered one response per request; the one check both kinds of instance make. */
export function checkResponses(responses: unknown, count: number, instance: string): Response[] {
  if (!Array.isArray(responses) || responses.length !== count) {
    const got = Array.isArray(responses) ? `${responses.length} responses` : responses === null ? 'null' : typeof responses;
    throw new TritonError('INFERENCE_FAILED', `instance ${instance}: the callable must return one response per request (${count}), got ${got}`);
  }
  return responses as Response[];
}

/**
 * The error `start()` rejects with when building the callable or its `initialize` hook fails: an
 * UnrecoverableError stays one (the server must stop); anything else becomes a TritonError naming the
 * instance, keeping a TritonError's code.
 */
export function startError(instance: string, err: unknown): Error {
  if (err instanceof UnrecoverableError) return err;
  const code: ErrorCode = err instanceof TritonError && err.code in ERROR_CODES ? err.code : 'INFERENCE_FAILED';
  const message = err instanceof Error ? err.message : String(err);
  return new TritonError(code, `instance ${instance} failed to start: ${message}`, { cause: err });
}

/**
 * The rejection of a batch an instance had accepted but not started when it failed (a worker crash): the
 * scheduler queues its requests again instead of failing them.
 */
export class BatchNotStarted extends TritonError {
  override readonly name: string = 'BatchNotStarted';

  constructor(instance: string, cause: Error) {
    super('UNAVAILABLE', `instance ${instance} failed before this batch started: ${cause.message}`, { cause });
  }
}
