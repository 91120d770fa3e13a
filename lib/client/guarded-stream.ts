import { ClientError, abortedError, timeoutError } from './client-error';
import type { StreamSettings } from './client-transport';

/** The wire side of one streamed request, as a transport opens it. */
export interface WireStream<T> {
  /** The next message, or done when the server ended the stream; rejects with a ClientError when the wire fails. */
  next(): Promise<IteratorResult<T, undefined>>;
  /** Stops the request on the wire (cancels the gRPC call, closes the HTTP connection); safe to call again. */
  cancel(): void;
}

/**
 * Pulls the messages of a wire stream under the stream's signal and deadlines, for both transports. `open`
 * runs on the first `next()`, so nothing is sent for an iteration that never starts. The signal, the whole
 * stream's timeout and the per-response timeout each cancel the wire and end the iteration with a
 * ClientError (CANCELLED or DEADLINE_EXCEEDED) — at once if it is waiting, else on its next `next()`.
 * Leaving the iteration before the server ended it (`break`, `return()`, an error thrown by the consumer)
 * cancels the wire, which cancels the request on the server.
 */
export async function* guardedStream<T>(open: () => WireStream<T>, settings: StreamSettings, what: string): AsyncGenerator<T, void, undefined> {
  const { signal, timeoutMs, responseTimeoutMs } = settings;
  if (signal?.aborted) throw abortedError(signal);
  const wire = open();
  let failure: ClientError | undefined;
  let interrupt: ((err: ClientError) => void) | undefined;
  const fail = (err: ClientError): void => {
    if (failure) return;
    failure = err;
    wire.cancel();
    interrupt?.(err);
  };
  const onAbort = (): void => fail(abortedError(signal as AbortSignal));
  signal?.addEventListener('abort', onAbort, { once: true });
  const total = timeoutMs === undefined ? undefined : setTimeout(() => fail(timeoutError(what, timeoutMs)), timeoutMs);
  let ended = false;
  try {
    for (;;) {
      if (failure) throw failure;
      const next = await new Promise<IteratorResult<T, undefined>>((resolve, reject) => {
        interrupt = reject;
        const timer = setTimeout(
          () => fail(new ClientError('DEADLINE_EXCEEDED', `${what}: no response within ${responseTimeoutMs / 1000} s`)),
          responseTimeoutMs,
        );
        // After `fail`, the wire's own rejection (its cancel) arrives at a settled promise and is dropped.
        wire.next().then(
          (v) => {
            clearTimeout(timer);
            resolve(v);
          },
          (err: unknown) => {
            clearTimeout(timer);
            reject(err);
          },
        );
      });
      interrupt = undefined;
      if (next.done) {
        ended = true;
        return;
      }
      yield next.value;
    }
  } finally {
    interrupt = undefined;
    clearTimeout(total);
    signal?.removeEventListener('abort', onAbort);
    if (!ended) wire.cancel();
  }
}
