import { receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
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

/** A call a front-end thread makes to the core thread and waits for. */
interface SyncRequest {
  readonly method: string;
  readonly args: readonly unknown[];
}

type SyncReply = { readonly value: unknown } | { readonly error: PackedError };

/** How long a front-end thread waits for the core thread to answer before it gives up with UNAVAILABLE. */
const SYNC_TIMEOUT_MS = 30_000;

/**
 * The front-end thread's side of synchronous calls to the core thread, for what a transport reads without
 * waiting (statistics, the repository index, settings, a model's metadata): the thread posts the call and sleeps
 * on a shared flag until the core thread has posted the answer, which it then takes off the port at once. The
 * core thread never waits on a front-end thread, so this cannot deadlock. Inference never goes this way.
 */
export class SyncCaller {
  private readonly flag: Int32Array;

  constructor(
    private readonly port: MessagePort,
    flag: SharedArrayBuffer,
  ) {
    this.flag = new Int32Array(flag);
  }

  call<T>(method: string, ...args: unknown[]): T {
    Atomics.store(this.flag, 0, 0);
    this.port.postMessage({ method, args } satisfies SyncRequest);
    if (Atomics.wait(this.flag, 0, 0, SYNC_TIMEOUT_MS) === 'timed-out') {
      throw new TritonError('UNAVAILABLE', `the server's core did not answer '${method}' within ${SYNC_TIMEOUT_MS / 1000} s`);
    }
    const received = receiveMessageOnPort(this.port);
    if (received === undefined) throw new TritonError('INTERNAL', `no answer to '${method}' from the server's core`);
    const reply = received.message as SyncReply;
    if ('error' in reply) throw unpackError(reply.error);
    return reply.value as T;
  }
}

/**
 * The core thread's side: answers each call with `handlers[method](...args)` (or the error it threw), then wakes
 * the waiting thread.
 */
export function serveSyncCalls(port: MessagePort, flag: SharedArrayBuffer, handlers: Readonly<Record<string, (...args: never[]) => unknown>>): void {
  const signal = new Int32Array(flag);
  port.on('message', ({ method, args }: SyncRequest) => {
    let reply: SyncReply;
    try {
      const handler = handlers[method];
      if (handler === undefined) throw new TritonError('INTERNAL', `unknown core call '${method}'`);
      reply = { value: (handler as (...a: unknown[]) => unknown)(...args) };
    } catch (err) {
      reply = { error: packError(err) };
    }
    try {
      port.postMessage(reply);
    } catch (err) {
      // An answer that cannot cross threads must still wake the caller, with why.
      port.postMessage({ error: packError(err) } satisfies SyncReply);
    }
    Atomics.store(signal, 0, 1);
    Atomics.notify(signal, 0);
  });
}
