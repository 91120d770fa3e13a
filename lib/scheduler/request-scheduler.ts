import type { TritonError } from '../base/errors';
import type { Request, Response } from '../callable/callable';
import type { Cancellable } from '../base/cancellation';
import type { Instance } from '../instances/instance';
import type { ExecutionRecord, Scheduled } from './execution-record';
import type { QueueTimerOwner } from './priority-queue';
import type { ResponseStream } from './response-stream';

/**
 * Per-request placement options. From an owner of the request's timer (a model's RequestJob, see QueueTimerOwner),
 * that timer also times the queue timeout: the queue arms none for the request.
 */
export interface EnqueueOptions extends Partial<QueueTimerOwner> {
  /** Priority level; 0 or out of range means the default level. */
  priority?: number;
  /** Queue timeout override in µs (applies when the level allows overrides). */
  timeoutMicroseconds?: number;
}

/** Observer of executions, for statistics and failure handling. */
export interface SchedulerHooks {
  /** Called when an execution throws, before its requests are failed. */
  onExecutionError?(err: unknown, instance: Instance): void;
  /** Called after every execution. */
  onExecution?(record: ExecutionRecord): void;
  /** The error queued requests fail with once no instance is in service: none healthy, none coming back. */
  outOfService?(): TritonError;
}

/** Turns one request's raw response into the value the caller receives; throws to fail that request only. */
export type Finalize<T> = (request: Request, response: Response) => T;

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
