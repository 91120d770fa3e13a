import type { TritonError } from '../errors';
import type { Request } from '../callable';
import type { Cancellable } from '../cancellation';
import type { Scheduled } from './execution-record';
import type { EnqueueOptions } from './scheduler';
import type { ResponseStream } from './response-stream';

/** What a model asks of its scheduler: the dynamic batcher (`Scheduler`) and the sequence batcher both serve it. */
export interface RequestScheduler<T> {
  /** Requests waiting for an instance. */
  readonly pendingCount: number;
  /** Requests queued or executing. */
  readonly outstanding: number;
  /** Queues a request; resolves once its batch has run and its response has been finalized. */
  enqueue(request: Request & Cancellable, rows: number, batchKey: string, options?: EnqueueOptions): Promise<Scheduled<T>>;
  /** Queues a request of a decoupled model; returns its response stream at once. */
  enqueueStream(request: Request & Cancellable, rows: number, batchKey: string, options?: EnqueueOptions, highWaterMark?: number): ResponseStream<T>;
  /** Fails every queued request. */
  rejectAll(err: TritonError): void;
  /** An instance's health changed. */
  wake(): void;
}
