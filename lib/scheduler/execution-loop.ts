import { TritonError, toTritonError, tritonError } from '../base/errors';
import type { Request, Response } from '../callable/callable';
import type { Instance } from '../instances/instance';
import { BatchNotStarted } from '../instances/instance-errors';
import { executeOn, type ExecutionRecord } from './execution-record';
import type { Finalize, SchedulerHooks } from './request-scheduler';

export const now = (): number => performance.now();
export const ms2ns = (ms: number): number => Math.round(ms * 1e6);

/** How an execution ended: its responses, or the error that fails each of its requests. */
export type Executed = { readonly responses: Response[]; readonly error: undefined } | { readonly responses: undefined; readonly error: TritonError };

/**
 * The execution loop both batchers share; each plugs its own batch-forming policy into `schedule`.
 *
 * The loop gathers what arrives in one turn of the event loop before it forms a batch (`scheduleSoon`), holds a
 * partial batch for the policy's queue delay with one timer (`waitForMore`), runs a batch on an instance and
 * reports its outcome: a batch the instance never started goes back to the policy (`execute`'s `notStarted`),
 * an instance that fails fails every request of the batch with one error, a response that does not finalize
 * fails its request only, and each execution is recorded for the statistics.
 */
export abstract class ExecutionLoop<T> {
  /** Requests executing now. */
  protected executing = 0;
  /** True while a dispatch waits for the end of this turn of the event loop (see `scheduleSoon`). */
  private gathering = false;
  private delayTimer: NodeJS.Timeout | undefined;

  constructor(
    protected readonly finalize: Finalize<T>,
    protected readonly hooks: SchedulerHooks,
  ) {}

  /** Forms and starts every batch the policy can start now. */
  protected abstract schedule(): void;

  /**
   * Dispatches at the end of this turn of the event loop, so that requests read together batch together.
   *
   * Dispatching at once would run a batch of one whenever an instance is free. Worse, a callable that computes
   * synchronously finishes before the next socket is read, so its instance is always free and every request
   * runs alone. Deferring the dispatch to the check phase (`setImmediate`, after the poll phase has read every
   * ready socket) puts all requests read together, and all that queued while a synchronous callable held the
   * loop, in one batch: Triton's `max_queue_delay_microseconds: 0`, with no timer.
   */
  protected scheduleSoon(): void {
    if (this.gathering) return;
    this.gathering = true;
    setImmediate(this.gathered);
  }

  private readonly gathered = (): void => {
    this.gathering = false;
    this.schedule();
  };

  /**
   * True while a partial batch whose oldest request arrived at `oldestEnqueuedAt` may still wait for more, up
   * to `delayMs`; one timer then calls `schedule` again when the wait is over.
   */
  protected waitForMore(oldestEnqueuedAt: number, delayMs: number): boolean {
    const waited = now() - oldestEnqueuedAt;
    if (waited >= delayMs) return false;
    this.delayTimer ??= setTimeout(this.waited, delayMs - waited);
    return true;
  }

  private readonly waited = (): void => {
    this.delayTimer = undefined;
    this.schedule();
  };

  /** A batch is formed: the wait for more, if any, is over. */
  protected stopWaiting(): void {
    if (this.delayTimer === undefined) return;
    clearTimeout(this.delayTimer);
    this.delayTimer = undefined;
  }

  /**
   * Runs `requests` on `instance` as one execution. `done` gets its outcome and its start time; a batch the
   * instance accepted but never started goes to `notStarted` instead, for the policy to queue again.
   */
  protected execute(instance: Instance, requests: Request[], done: (outcome: Executed, start: number) => void, notStarted: () => void): void {
    const start = now();
    executeOn(instance, requests).then(
      (responses) => done({ responses, error: undefined }, start),
      (err: unknown) => {
        if (err instanceof BatchNotStarted) return notStarted();
        const cause = err ?? new Error('the instance failed without a reason');
        this.hooks.onExecutionError?.(cause, instance);
        done({ responses: undefined, error: toTritonError(cause, 'INFERENCE_FAILED') }, start);
      },
    );
  }

  /** Reports one execution to the statistics and returns its record. */
  protected record(instance: Instance, rows: number, requests: number, start: number, inferEnd: number, end: number, failed: boolean): ExecutionRecord {
    const record: ExecutionRecord = { rows, requests, computeInputNs: 0, computeInferNs: ms2ns(inferEnd - start), computeOutputNs: ms2ns(end - inferEnd), instance, failed };
    this.hooks.onExecution?.(record);
    return record;
  }

  /** The error a finalize threw, as its request fails with it. */
  protected static unfinalized(error: unknown): unknown {
    return error ?? new Error('the response failed validation without a reason');
  }

  /** The error queued requests fail with once no instance is in service. */
  protected outOfServiceError(): TritonError {
    return this.hooks.outOfService?.() ?? tritonError('noInstance');
  }
}
