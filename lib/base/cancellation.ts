import { requestCancelled, TritonError } from './errors';

const NOOP = () => {};

/** The key under which a request carries its Cancellation (the server's requests do; a plain object may not). */
export const CANCELLATION: unique symbol = Symbol('tstriton.cancellation');

/** A request that carries its Cancellation, as every request the scheduler takes does. */
export interface Cancellable {
  readonly [CANCELLATION]: Cancellation;
}

/** A request's Cancellation, when it carries one: lets code follow an abort without making an AbortSignal. */
export function cancellationOf(request: object): Cancellation | undefined {
  return (request as { [CANCELLATION]?: Cancellation })[CANCELLATION];
}

/**
 * A request's cancellation, the one cancellation type of the server: a flag, a reason and plain callbacks, with
 * the standard `AbortSignal` (what a callable reads as `request.signal`) made only when someone asks for it.
 * Creating an AbortSignal for every request costs several microseconds and old-generation garbage on the hot
 * path, while most callables never look at it.
 *
 * Two ways in: `listen`/`unlisten` for a callback (no closure made to undo it, for the hot path), and `link` to
 * abort with another Cancellation or with an AbortSignal from outside (a callable's own signal for a call).
 */
export class Cancellation {
  aborted = false;
  reason: unknown;
  /** The abort listeners: most requests have one, so the first needs no array. */
  private first: (() => void) | undefined;
  private more: (() => void)[] | undefined;
  private controller: AbortController | undefined;

  /** Cancels with `reason` (a TritonError; CANCELLED by default); later calls do nothing. */
  abort(reason: unknown = requestCancelled()): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.controller?.abort(reason);
    const { first, more } = this;
    this.first = undefined;
    this.more = undefined;
    first?.();
    if (more) for (const l of more) l();
  }

  /** Calls `listener` once on abort (at once if already aborted); `unlisten` removes it. */
  listen(listener: () => void): void {
    if (this.aborted) listener();
    else if (this.first === undefined) this.first = listener;
    else (this.more ??= []).push(listener);
  }

  /** Removes a listener added with `listen`. */
  unlisten(listener: () => void): void {
    if (this.first === listener) {
      this.first = undefined;
      return;
    }
    const i = this.more?.indexOf(listener) ?? -1;
    if (i >= 0) this.more?.splice(i, 1);
  }

  /**
   * Aborts this one when `source` aborts (at once if it has), with its reason: a TritonError passes as it is,
   * anything else (an AbortSignal's DOMException) becomes CANCELLED. Returns the function that unlinks them.
   */
  link(source: Cancellation | AbortSignal): () => void {
    if (source.aborted) {
      this.abort(cancelledError(source.reason));
      return NOOP;
    }
    const onAbort = () => this.abort(cancelledError(source.reason));
    if (source instanceof Cancellation) {
      source.listen(onAbort);
      return () => source.unlisten(onAbort);
    }
    source.addEventListener('abort', onAbort, { once: true });
    return () => source.removeEventListener('abort', onAbort);
  }

  /** The equivalent AbortSignal, made on first use. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }
}

/** The error a cancelled request fails with: the abort reason when it is a TritonError, else CANCELLED. */
export function cancelledError(reason: unknown): TritonError {
  return reason instanceof TritonError ? reason : requestCancelled();
}
