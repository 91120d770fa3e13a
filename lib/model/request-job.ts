import { MOVABLE_BUFFER, type Request } from '../callable/callable';
import { REQUEST_MEMORY, type RequestMemory } from '../tensor/buffer-pool';
import { CANCELLATION, cancelledError, type Cancellation } from '../base/cancellation';
import { TritonError, tritonError } from '../base/errors';
import { MAX_TIMER_MS, type QueueTimerOwner } from '../scheduler/priority-queue';
import type { EnqueueOptions } from '../scheduler/scheduler';
import type { RequestSpan } from '../tracing/trace';
import type { InferenceRequest } from './inference';

/** What a job tells when it ends: the model counts the requests it holds. */
export interface JobOwner {
  jobReleased(): void;
}

/** The request the scheduler and the callable see; its AbortSignal is made only if the callable asks. */
export class ScheduledRequest implements Request {
  infer: Request['infer'];
  sequence: Request['sequence'];
  readonly [CANCELLATION]: Cancellation;
  readonly [MOVABLE_BUFFER]: ArrayBufferLike | undefined;
  [REQUEST_MEMORY]: RequestMemory | undefined;

  constructor(
    readonly inputs: Request['inputs'],
    readonly parameters: Request['parameters'],
    readonly requestedOutputs: readonly string[],
    readonly id: string,
    cancellation: Cancellation,
    movableBuffer: ArrayBufferLike | undefined,
  ) {
    this[CANCELLATION] = cancellation;
    this[MOVABLE_BUFFER] = movableBuffer;
  }

  get signal(): AbortSignal {
    return this[CANCELLATION].signal;
  }
}

/**
 * Everything one request needs while it lives: the validated request for the scheduler, a cancellation that
 * fires when the client goes away, when the request is cancelled, or at its deadline (the `timeout`
 * parameter, or the transport's deadline), and the cleanup that releases all of it. One object per request
 * (not a bag of closures): it is made on the hot path.
 *
 * It keeps the request's one timer. The timer times the deadline, and, while the request waits, the queue
 * timeout of its queue policy when that comes first (the queue hands it over: `expireQueuedAfter`).
 */
export class RequestJob implements EnqueueOptions, QueueTimerOwner {
  /** Queue placement (the job is its own EnqueueOptions). */
  readonly priority: number | undefined;
  readonly timeoutMicroseconds: number | undefined;
  /** When the request arrived (performance.now()). */
  readonly start = performance.now();
  /** The request's OpenTelemetry span, when it is traced. */
  span: RequestSpan | undefined;
  /** The request's one timer: armed for the deadline, or for the queue timeout while that comes first. */
  private timer: NodeJS.Timeout | undefined;
  /** The queue's expiry, while the timer is armed for the queue timeout. */
  private queueExpiry: (() => void) | undefined;
  /** The deadline in ms from `start`, as the request gave it (a transport's may have passed already). */
  private readonly timeoutMs: number | undefined;
  /** When the deadline passes (performance.now()); undefined without a deadline. */
  private readonly deadlineAt: number | undefined;
  private deadline: Promise<never> | undefined;
  private missDeadline: ((err: TritonError) => void) | undefined;
  private released = false;

  constructor(
    private readonly owner: JobOwner,
    req: InferenceRequest,
    readonly request: ScheduledRequest,
    readonly rows: number,
    readonly batchKey: string,
    readonly cancellation: Cancellation,
  ) {
    this.priority = req.priority;
    this.timeoutMicroseconds = req.timeoutMicroseconds;
    const timeoutMs = req.deadline !== undefined ? req.deadline - Date.now() : req.timeoutMicroseconds ? req.timeoutMicroseconds / 1000 : undefined;
    if (timeoutMs !== undefined && timeoutMs <= MAX_TIMER_MS) {
      this.timeoutMs = timeoutMs;
      this.deadlineAt = this.start + Math.max(0, timeoutMs);
      this.deadline = new Promise<never>((_, reject) => (this.missDeadline = reject));
      this.deadline.catch(() => {}); // only raced: never an unhandled rejection
      this.timer = setTimeout(() => this.fired(), Math.max(0, timeoutMs));
    }
  }

  /**
   * Takes the queue timeout over from the queue. A deadline at or before it ends the waiting request first, with
   * the error of the queue's REJECT: the timer stays on the deadline then.
   */
  expireQueuedAfter(ms: number, expire: () => void): void {
    if (this.deadlineAt !== undefined && this.deadlineAt <= performance.now() + ms) return;
    if (this.timer) clearTimeout(this.timer);
    this.queueExpiry = expire;
    this.timer = setTimeout(() => this.fired(), ms);
  }

  /** The request left the queue: the timer goes back to the deadline, if the queue timeout had it. */
  leftQueue(): void {
    if (!this.queueExpiry) return;
    this.queueExpiry = undefined;
    if (this.timer) clearTimeout(this.timer);
    this.timer = this.deadlineAt === undefined ? undefined : setTimeout(() => this.fired(), Math.max(0, this.deadlineAt - performance.now()));
  }

  private fired(): void {
    this.timer = undefined;
    const expire = this.queueExpiry;
    if (expire) {
      // The queue timeout: the queue rejects or delays the waiting request. The deadline holds after it.
      this.queueExpiry = undefined;
      expire();
      if (this.deadlineAt === undefined || this.released) return;
      const left = this.deadlineAt - performance.now();
      if (left > 0) {
        this.timer = setTimeout(() => this.fired(), left);
        return;
      }
    }
    // Still queued: the queue's own timeout error. Running: the deadline ends it, and the callable sees the signal.
    this.cancellation.abort(tritonError('requestTimeout'));
    this.missDeadline?.(tritonError('deadlineExceeded', { id: this.request.id || '<id_unknown>', ms: Math.round(this.timeoutMs ?? 0) }));
  }

  /** Races `work` against the request's deadline, if it has one. */
  race<V>(work: Promise<V>): Promise<V> {
    return this.deadline ? Promise.race([work, this.deadline]) : work;
  }

  elapsedNs(): number {
    return Math.round((performance.now() - this.start) * 1e6);
  }

  cancel(): void {
    this.cancellation.abort();
  }

  /** A request whose client left (or whose deadline passed) fails even if its callable finished. */
  throwIfCancelled(): void {
    if (this.cancellation.aborted) throw cancelledError(this.cancellation.reason);
  }

  /** A client that went away explains the failure better than what its abort caused downstream. */
  error(err: unknown): unknown {
    const { aborted, reason } = this.cancellation;
    return aborted && (reason as TritonError | undefined)?.code === 'CANCELLED' ? cancelledError(reason) : err;
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.owner.jobReleased();
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.queueExpiry = undefined;
  }
}
