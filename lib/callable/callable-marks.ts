import type { InferCallable } from './callable';

// Marks the SDK puts on callables and requests: decorators import them from here, the server from here too;
// they are not part of the root export.

/** An AbortSignal that never fires, for requests that carry none. */
export const NEVER_ABORTED: AbortSignal = new AbortController().signal;

/** Marks a function made by `@batch`, `@sample` or their wrappers as a ready raw callable. */
export const CALLABLE_MARK: unique symbol = Symbol.for('tstriton.callable');

/** A raw callable carrying the decorator that made it. */
export type MarkedCallable = InferCallable & { [CALLABLE_MARK]?: string };

/** True if `fn` was made by one of the decorators. */
export function isMarkedCallable(fn: unknown): fn is MarkedCallable {
  return typeof fn === 'function' && (fn as MarkedCallable)[CALLABLE_MARK] !== undefined;
}
