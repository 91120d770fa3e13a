import type { Cancellation } from '../base/cancellation';
import { tritonError } from '../base/errors';
import type { Request } from '../callable/callable';

/**
 * The longest delay setTimeout keeps (about 24.8 days); a longer one fires at once. A timeout beyond it is no
 * timeout at all.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** Queue policy of one priority level (the scheduler's view of `QueuePolicy`). */
export interface QueuePolicyOptions {
  maxQueueSize?: number;
  defaultTimeoutMicroseconds?: number;
  allowTimeoutOverride?: boolean;
  timeoutAction?: 'REJECT' | 'DELAY';
}

/**
 * The keeper of a request's one timer: a model's RequestJob, which times the request's deadline. The queue hands
 * it the request's queue timeout instead of arming a second timer for the same request.
 */
export interface QueueTimerOwner {
  /**
   * Calls `expire` once `ms` have passed, unless the request's deadline comes first (that ends a waiting request
   * with the error of the queue's REJECT) or `leftQueue` is called before.
   */
  expireQueuedAfter(ms: number, expire: () => void): void;
  /** The request left the queue before its queue timeout: `expire` is not to be called. */
  leftQueue(): void;
}

/** A request waiting in the queue. */
export interface Pending {
  readonly request: Request;
  /** Rows this request contributes to a batch. */
  readonly rows: number;
  /** Requests can share a batch only when their keys are equal (same inputs, same non-batch dims). */
  readonly batchKey: string;
  readonly enqueuedAt: number;
  resolve(value: unknown): void;
  reject(err: unknown): void;
  /** The request's cancellation and the listener this entry added to it while it waits. */
  readonly cancellation: Cancellation;
  onAbort: (() => void) | undefined;
  /** What times its queue timeout while it waits: the queue's own timer, or the owner of the request's timer. */
  timer: NodeJS.Timeout | undefined;
  timerOwner: QueueTimerOwner | undefined;
  settled: boolean;
  /** The response stream of a decoupled request. */
  stream?: { fail(err: unknown): void };
  /** Where the request sits: its level and whether it was delayed by a timeout. */
  level?: Level;
  delayed?: boolean;
}

interface Level {
  readonly priority: number;
  readonly policy: Required<QueuePolicyOptions>;
  /** Requests in arrival order. */
  readonly queue: Pending[];
  /** Requests whose timeout expired under the DELAY action: they run after the others of this level. */
  readonly delayed: Pending[];
}

const DEFAULT_POLICY: Required<QueuePolicyOptions> = {
  maxQueueSize: 0,
  defaultTimeoutMicroseconds: 0,
  allowTimeoutOverride: false,
  timeoutAction: 'REJECT',
};

/**
 * The scheduler's queue: one FIFO per priority level (1 is the highest), each with its queue policy —
 * size limit, queue timeout with REJECT or DELAY, per-request timeout override.
 */
export class PriorityQueue {
  private readonly levels: Level[];
  private readonly defaultLevel: Level;
  private count = 0;
  private rows = 0;

  constructor(
    priorityLevels: number,
    defaultPriorityLevel: number,
    defaultPolicy: QueuePolicyOptions,
    policies: Readonly<Record<number, QueuePolicyOptions>>,
    private readonly onTimeout: (p: Pending, reason: 'REJECTED') => void,
  ) {
    const base = { ...DEFAULT_POLICY, ...stripUndefined(defaultPolicy) };
    const n = Math.max(1, priorityLevels);
    this.levels = Array.from({ length: n }, (_, i) => ({
      priority: i + 1,
      policy: { ...base, ...stripUndefined(policies[i + 1] ?? {}) },
      queue: [],
      delayed: [],
    }));
    const d = defaultPriorityLevel >= 1 && defaultPriorityLevel <= n ? defaultPriorityLevel : n;
    this.defaultLevel = this.levels[priorityLevels === 0 ? 0 : d - 1] as Level;
  }

  /** Requests waiting. */
  get size(): number {
    return this.count;
  }

  /** Rows waiting, over every level. */
  totalRows(): number {
    return this.rows;
  }

  /** When the oldest waiting request arrived. */
  oldestEnqueuedAt(): number {
    let oldest = Infinity;
    for (const l of this.levels) {
      const a = l.queue[0]?.enqueuedAt ?? Infinity;
      const b = l.delayed[0]?.enqueuedAt ?? Infinity;
      oldest = Math.min(oldest, a, b);
    }
    return oldest;
  }

  /**
   * Adds a request at its level; throws UNAVAILABLE when that level is full. Its queue timeout runs on the
   * timer of `timerOwner` when it has one, else on a timer of the queue's own.
   */
  push(p: Pending, priority: number, timeoutOverrideUs: number, timerOwner?: Partial<QueueTimerOwner>): void {
    const level = priority >= 1 && priority <= this.levels.length ? (this.levels[priority - 1] as Level) : this.defaultLevel;
    const { maxQueueSize, defaultTimeoutMicroseconds, allowTimeoutOverride } = level.policy;
    if (maxQueueSize > 0 && level.queue.length + level.delayed.length >= maxQueueSize) {
      throw tritonError('queueFull');
    }
    let timeoutUs = defaultTimeoutMicroseconds;
    // A zero default means "no timeout", so any override is tighter than it.
    if (allowTimeoutOverride && timeoutOverrideUs > 0 && (timeoutUs === 0 || timeoutOverrideUs < timeoutUs)) timeoutUs = timeoutOverrideUs;
    p.level = level;
    p.delayed = false;
    level.queue.push(p);
    this.count++;
    this.rows += p.rows;
    if (timeoutUs > 0 && timeoutUs / 1000 <= MAX_TIMER_MS) {
      const expire = () => this.expire(p);
      if (ownsTimer(timerOwner)) {
        p.timerOwner = timerOwner;
        timerOwner.expireQueuedAfter(timeoutUs / 1000, expire);
      } else p.timer = setTimeout(expire, timeoutUs / 1000);
    }
  }

  private expire(p: Pending): void {
    p.timer = undefined;
    p.timerOwner = undefined;
    const level = p.level as Level;
    if (p.settled || p.delayed) return;
    if (level.policy.timeoutAction === 'DELAY') {
      const i = level.queue.indexOf(p);
      if (i < 0) return;
      level.queue.splice(i, 1);
      p.delayed = true;
      level.delayed.push(p);
      return;
    }
    if (this.remove(p)) this.onTimeout(p, 'REJECTED');
  }

  /** Removes a waiting request; false if it is no longer queued. */
  remove(p: Pending): boolean {
    const level = p.level;
    if (!level) return false;
    const list = p.delayed ? level.delayed : level.queue;
    const i = list.indexOf(p);
    if (i < 0) return false;
    list.splice(i, 1);
    this.taken(p);
    return true;
  }

  /** Removes and returns every waiting request. */
  removeAll(): Pending[] {
    const all: Pending[] = [];
    for (const l of this.levels) all.push(...l.queue.splice(0), ...l.delayed.splice(0));
    for (const p of all) this.taken(p);
    return all;
  }

  /**
   * Takes the next batch: the head request (highest priority, arrival order, delayed ones last in their
   * level) and, when `maxRows` > 0, every following request with the same batch key while the rows fit.
   * It stops at the first request that does not fit, so nothing overtakes an earlier request of its level.
   */
  takeBatch(maxRows: number): Pending[] {
    const batch: Pending[] = [];
    let rows = 0;
    for (const level of this.levels) {
      for (const list of [level.queue, level.delayed]) {
        while (list.length > 0) {
          const p = list[0] as Pending;
          if (batch.length > 0 && (maxRows === 0 || p.batchKey !== (batch[0] as Pending).batchKey || rows + p.rows > maxRows)) return batch;
          list.shift();
          this.taken(p);
          batch.push(p);
          rows += p.rows;
          if (maxRows === 0) return batch;
        }
      }
    }
    return batch;
  }

  /** Puts requests taken by `takeBatch` back at the front of their lists, in order. */
  returnToFront(items: Pending[]): void {
    for (let i = items.length - 1; i >= 0; i--) {
      const p = items[i] as Pending;
      const level = p.level as Level;
      (p.delayed ? level.delayed : level.queue).unshift(p);
      this.count++;
      this.rows += p.rows;
    }
  }

  private taken(p: Pending): void {
    this.count--;
    this.rows -= p.rows;
    // Its queue timeout ends here: one put back at the front later (`returnToFront`) waits without it.
    if (p.timer) {
      clearTimeout(p.timer);
      p.timer = undefined;
    }
    if (p.timerOwner) {
      p.timerOwner.leftQueue();
      p.timerOwner = undefined;
    }
  }
}

function ownsTimer(o: Partial<QueueTimerOwner> | undefined): o is QueueTimerOwner {
  return o?.expireQueuedAfter !== undefined && o.leftQueue !== undefined;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
