/** What both ends of the channel between a WorkerInstance and its worker thread share. */

/** Stream items a worker sends ahead of what the main thread has acknowledged (one `stream-ack` per item taken). */
export const STREAM_WINDOW = 16;

/** An encoded message part and the buffers to transfer with it. */
export interface Encoded<T> {
  readonly value: T;
  readonly transferList: ArrayBuffer[];
}

/** Either end of the channel: a Worker on the main thread, the parent port in the worker. */
export interface MessageTarget {
  postMessage(message: unknown, transferList?: readonly ArrayBuffer[]): void;
}

/**
 * Posts a message whose part `encode` makes, transferring its buffers; when a buffer cannot be transferred,
 * encodes it again copying every buffer and posts that. `copyAll` copies from the start. An error of the
 * copying attempt goes through `copyFailed` when given.
 */
export function postWithCopyFallback<T>(
  target: MessageTarget,
  encode: (copyAll: boolean) => Encoded<T>,
  message: (value: T) => unknown,
  copyAll = false,
  copyFailed?: (err: unknown) => Error,
): void {
  if (!copyAll) {
    const encoded = encode(false);
    try {
      target.postMessage(message(encoded.value), encoded.transferList);
      return;
    } catch (err) {
      if (!isDataCloneError(err)) throw err;
    }
  }
  const copied = encode(true);
  try {
    target.postMessage(message(copied.value), copied.transferList);
  } catch (err) {
    throw copyFailed ? copyFailed(err) : err;
  }
}

/** True for an error thrown by postMessage when something cannot be cloned or transferred. */
export function isDataCloneError(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const { name, code } = err as { name?: unknown; code?: unknown };
  return name === 'DataCloneError' || code === 'ERR_INVALID_TRANSFER_OBJECT';
}
