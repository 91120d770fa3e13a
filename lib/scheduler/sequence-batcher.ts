import { TritonError } from '../base/errors';
import type { Request, Response } from '../callable/callable';
import type { SequenceBatching } from '../config/sequence-batching';
import { inService, type Instance } from '../instances/instance';
import { CANCELLATION, cancelledError, type Cancellable } from '../base/cancellation';
import type { Tensor } from '../tensor/tensor';
import type { Scheduled } from './execution-record';
import { ExecutionLoop, ms2ns, now, type Executed } from './execution-loop';
import type { EnqueueOptions, Finalize, RequestScheduler, SchedulerHooks } from './request-scheduler';
import { ResponseStream } from './response-stream';
import { SequenceRows } from './sequence-rows';
import { SequenceSlots, type Slot } from './sequence-slots';
import { keyOf, type Queued, type Sequence } from './live-sequence';

/** Sequence batcher settings, derived from the model config. */
export interface SequenceBatcherOptions {
  modelName: string;
  /** The model's `max_batch_size`; 0 when it does not batch (one slot per instance). */
  maxBatchSize: number;
  config: SequenceBatching;
}

/** Lost sequences whose error is remembered for their next request. */
const LOST_REMEMBERED = 10_000;

/**
 * Triton's sequence batcher: each sequence (requests sharing a correlation id, START to END) is routed to one
 * batch slot of one instance for its life; its requests run in order, one at a time; a batch holds at most one
 * request of each sequence. `direct` lays the batch out by slot, with READY false for slots that hold no ready
 * request; `oldest` takes the sequences whose waiting request is oldest. Implicit state lives with the sequence
 * and is handed to the callable as inputs and taken back from its outputs.
 */
export class SequenceBatcher<T> extends ExecutionLoop<T> implements RequestScheduler<T> {
  private readonly slots: SequenceSlots<Sequence<T>>;
  private readonly sequences = new Map<string, Sequence<T>>();
  /** Why sequences lost to a failed instance ended, by key, until their id starts again (oldest dropped first). */
  private readonly lost = new Map<string, TritonError>();
  private readonly busy = new Set<Instance>();
  private readonly rows: SequenceRows;
  private readonly idleMs: number;
  private readonly delayMs: number;
  private readonly target: number;
  private readonly direct: boolean;
  private queued = 0;
  private statesCreated = 0;
  private statesReleased = 0;
  private nextStateId = 1;

  constructor(
    private readonly instances: readonly Instance[],
    private readonly options: SequenceBatcherOptions,
    finalize: Finalize<T>,
    hooks: SchedulerHooks = {},
  ) {
    super(finalize, hooks);
    const { config, maxBatchSize } = options;
    const batched = maxBatchSize > 0;
    this.direct = config.oldest === undefined;
    const perInstance = this.direct ? Math.max(1, maxBatchSize) : config.oldest?.maxCandidateSequences || Math.max(1, maxBatchSize);
    this.slots = new SequenceSlots(instances, perInstance);
    for (const instance of instances) {
      instance.onHealthChange?.((event) => {
        if (!event.healthy) this.instanceLost(instance, event.cause);
      });
    }
    this.rows = new SequenceRows(config, batched, options.modelName);
    this.idleMs = config.maxSequenceIdleMicroseconds / 1000;
    this.delayMs = (config.oldest?.maxQueueDelayMicroseconds ?? config.direct?.maxQueueDelayMicroseconds ?? 0) / 1000;
    const preferred = config.oldest?.preferredBatchSize ?? [];
    this.target = Math.max(1, preferred.length > 0 ? Math.max(...preferred) : maxBatchSize);
  }

  get pendingCount(): number {
    return this.queued;
  }

  get outstanding(): number {
    return this.queued + this.executing;
  }

  /** Implicit state sets made and freed since the model was bound (equal once no sequence is live). */
  get stateBuffers(): { created: number; released: number } {
    return { created: this.statesCreated, released: this.statesReleased };
  }

  /** Sequences holding a slot or waiting for one. */
  get liveSequences(): number {
    return this.slots.live;
  }

  /**
   * Queues a request in its sequence. Its deadline (the request's `timeout`) ends it while it waits, through its
   * cancellation; a priority does not apply: a sequence's requests run in order, in the slot the sequence holds,
   * and Triton's sequence batcher has no priority levels or queue policies either.
   */
  enqueue(request: Request & Cancellable, rows: number, _batchKey: string, _options?: EnqueueOptions): Promise<Scheduled<T>> {
    return new Promise<Scheduled<T>>((resolve, reject) => {
      try {
        this.accept(request, rows, resolve, reject);
      } catch (err) {
        reject(err);
      }
    });
  }

  enqueueStream(): ResponseStream<T> {
    const stream = new ResponseStream<T>();
    stream.fail(new TritonError('UNSUPPORTED', `model '${this.options.modelName}': decoupled sequence models are not supported`));
    return stream;
  }

  private accept(request: Request & Cancellable, rows: number, resolve: (v: Scheduled<T>) => void, reject: (err: unknown) => void): void {
    const model = this.options.modelName;
    if (rows > 1) {
      throw new TritonError('INVALID_ARGUMENT', `inference request to model '${model}' must specify batch-size 1 due to requirements of sequence batcher`);
    }
    const sequence = request.sequence;
    if (!sequence || sequence.id === 0 || sequence.id === '' || sequence.id === 0n) {
      throw new TritonError('INVALID_ARGUMENT', `inference request to model '${model}' must specify a non-zero or non-empty correlation ID`);
    }
    this.rows.check(sequence);
    const key = keyOf(sequence.id);
    let seq = this.sequences.get(key);
    const lost = this.lost.get(key);
    if (lost) {
      if (!sequence.start) throw lost;
      this.lost.delete(key);
    }
    if (!seq && !sequence.start) {
      throw new TritonError(
        'INVALID_ARGUMENT',
        `inference request for sequence ${String(sequence.id)} to model '${model}' must specify the START flag on the first request of the sequence`,
      );
    }
    const cancellation = request[CANCELLATION];
    if (cancellation.aborted) throw cancelledError(cancellation.reason);
    // A START on a live id continues in that sequence's slot, as Triton does: the previous sequence ends early
    // and its state is replaced when the START runs.
    if (!seq) {
      seq = { key, id: sequence.id, queue: [], slot: undefined, running: false, state: undefined, stateId: undefined, idleTimer: undefined, ending: false, released: false };
      this.sequences.set(key, seq);
      this.slots.place(seq);
    }
    const owner = seq;
    const entry: Queued<T> = {
      request,
      sequence,
      enqueuedAt: now(),
      resolve,
      reject,
      cancellation,
      onAbort: () => {
        const i = owner.queue.indexOf(entry);
        if (i < 0) return;
        owner.queue.splice(i, 1);
        this.queued--;
        entry.reject(cancelledError(cancellation.reason));
        // A cancelled END ends the sequence all the same.
        if (sequence.end) this.maybeRelease(owner);
        this.idleFrom(owner);
      },
    };
    cancellation.listen(entry.onAbort);
    seq.queue.push(entry);
    this.queued++;
    if (sequence.end) {
      seq.ending = true;
      if (this.sequences.get(key) === seq) this.sequences.delete(key);
    }
    this.notIdle(seq);
    this.scheduleSoon();
  }

  /**
   * Starts the sequence's idle time (Triton's `max_sequence_idle_microseconds`) once it has nothing queued or
   * running. A sequence with a request waiting (for its slot, or behind its own requests) or running is never idle
   * and holds no timer: a flood of STARTs backlogged behind the slots would otherwise keep one timer per sequence,
   * each re-armed every period until its sequence got a slot.
   */
  private idleFrom(seq: Sequence<T>): void {
    if (seq.released || seq.running || seq.queue.length > 0) return;
    if (seq.idleTimer) clearTimeout(seq.idleTimer);
    seq.idleTimer = setTimeout(() => this.idle(seq), this.idleMs);
    seq.idleTimer.unref?.();
  }

  /** A request for the sequence arrived: it is not idle until that request has run. */
  private notIdle(seq: Sequence<T>): void {
    if (seq.idleTimer) clearTimeout(seq.idleTimer);
    seq.idleTimer = undefined;
  }

  private idle(seq: Sequence<T>): void {
    seq.idleTimer = undefined;
    // Busy again: its timer starts over when it is idle again.
    if (seq.released || seq.running || seq.queue.length > 0) return;
    this.release(seq);
  }

  /** Frees a sequence whose END has run (or was cancelled) and that has nothing left to run. */
  private maybeRelease(seq: Sequence<T>): void {
    if (seq.ending && !seq.running && seq.queue.length === 0) this.release(seq);
  }

  /** Frees a sequence: its id, its slot (to the oldest backlogged sequence) and its state. */
  private release(seq: Sequence<T>, error?: TritonError): void {
    if (seq.released) return;
    seq.released = true;
    if (seq.idleTimer) clearTimeout(seq.idleTimer);
    if (this.sequences.get(seq.key) === seq) this.sequences.delete(seq.key);
    for (const entry of seq.queue.splice(0)) {
      this.queued--;
      entry.cancellation.unlisten(entry.onAbort);
      entry.reject(error ?? new TritonError('UNAVAILABLE', `sequence ${String(seq.id)} of model '${this.options.modelName}' was released before the request ran`));
    }
    this.dropState(seq);
    this.slots.vacate(seq);
    this.scheduleSoon();
  }

  private dropState(seq: Sequence<T>): void {
    if (seq.stateId !== undefined) {
      seq.slot?.instance.releaseSequenceStates?.([seq.stateId]);
      seq.stateId = undefined;
      this.statesReleased++;
    } else if (seq.state) {
      seq.state = undefined;
      this.statesReleased++;
    }
  }

  /** A crashed instance loses the state of every sequence in its slots: they fail, with the reason. */
  private instanceLost(instance: Instance, cause: Error | undefined): void {
    for (const seq of this.slots.holdersOn(instance)) {
      const error = new TritonError(
        'UNAVAILABLE',
        `sequence ${String(seq.id)} of model '${this.options.modelName}' was lost: instance ${instance.name} failed${cause ? ` (${cause.message})` : ''}; start the sequence again`,
      );
      // Its next request (not a START) gets this error rather than a bare "must specify the START flag".
      if (!seq.ending) {
        this.lost.set(seq.key, error);
        if (this.lost.size > LOST_REMEMBERED) this.lost.delete(this.lost.keys().next().value as string);
      }
      this.release(seq, error);
    }
  }

  rejectAll(err: TritonError): void {
    for (const seq of this.slots.holders()) this.release(seq, err);
  }

  wake(): void {
    // An instance back in service takes backlogged sequences into its free slots.
    this.slots.refill();
    if (!this.instances.some(inService)) return this.rejectAll(this.outOfServiceError());
    this.schedule();
  }

  protected schedule(): void {
    for (const [instance, slots] of this.slots.byInstance) {
      if (!instance.healthy || this.busy.has(instance)) continue;
      const ready = slots.filter((s) => s.owner && !s.owner.running && s.owner.queue.length > 0);
      if (ready.length === 0) continue;
      if (this.shouldWait(slots, ready)) continue;
      this.run(instance, this.pick(slots, ready));
    }
  }

  /** True while a partial batch may wait for more sequences (the strategy's `max_queue_delay_microseconds`). */
  private shouldWait(slots: Slot<Sequence<T>>[], ready: Slot<Sequence<T>>[]): boolean {
    if (this.delayMs <= 0) return false;
    // Direct waits for the live sequences' requests; oldest, as a dynamic batcher, for the preferred size (new
    // sequences may still start), never beyond its candidate slots.
    const want = this.direct ? slots.filter((s) => s.owner).length : Math.min(this.target, slots.length);
    if (ready.length >= want) return false;
    const oldest = Math.min(...ready.map((s) => (s.owner as Sequence<T>).queue[0]?.enqueuedAt ?? Infinity));
    return this.waitForMore(oldest, this.delayMs);
  }

  /** The slots of the next batch: `direct` in slot order, `oldest` by the age of their waiting request. */
  private pick(slots: Slot<Sequence<T>>[], ready: Slot<Sequence<T>>[]): (Slot<Sequence<T>> | undefined)[] {
    const limit = Math.max(1, this.options.maxBatchSize);
    if (!this.direct) {
      const age = (s: Slot<Sequence<T>>) => (s.owner as Sequence<T>).queue[0]?.enqueuedAt ?? Infinity;
      return [...ready].sort((a, b) => age(a) - age(b)).slice(0, limit);
    }
    // Direct: the batch spans slots 0..highest ready; slots between without a ready request are READY false.
    const highest = Math.max(...ready.map((s) => s.index));
    return slots.slice(0, Math.min(limit, highest + 1)).map((s) => (ready.includes(s) ? s : undefined));
  }

  private run(instance: Instance, layout: (Slot<Sequence<T>> | undefined)[]): void {
    // The sequences of this batch, fixed now: a slot may change hands before the batch ends.
    const owners: (Sequence<T> | undefined)[] = [];
    const entries: (Queued<T> | undefined)[] = [];
    const requests: Request[] = [];
    let like: Readonly<Record<string, Tensor>> | undefined;
    for (const slot of layout) {
      const seq = slot?.owner;
      const entry = seq?.queue.shift();
      if (seq && entry) {
        this.queued--;
        entry.cancellation.unlisten(entry.onAbort);
        seq.running = true;
        like ??= entry.request.inputs;
      }
      owners.push(seq && entry ? seq : undefined);
      entries.push(seq && entry ? entry : undefined);
    }
    const keeps = instance.releaseSequenceStates !== undefined;
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i];
      const seq = owners[i];
      if (entry && seq) {
        const fresh = this.rows.stateful && (entry.sequence.start || (seq.state === undefined && seq.stateId === undefined));
        if (fresh) this.freshState(seq, keeps);
        // An instance that keeps states gets the state only when it starts, and a mark naming it.
        const mark = keeps && seq.stateId !== undefined ? { id: seq.stateId, fresh } : undefined;
        requests.push(this.rows.row(entry.request, entry.sequence, mark && !fresh ? undefined : seq.state, mark));
        // The instance holds it from now on.
        if (mark) seq.state = undefined;
      } else {
        requests.push(this.rows.filler(like ?? {}));
      }
    }
    this.busy.add(instance);
    const real = entries.filter((e) => e !== undefined).length;
    this.executing += real;
    this.execute(
      instance,
      requests,
      (outcome, start) => this.completed(instance, owners, entries, start, outcome, keeps),
      () => this.notStarted(instance, owners, entries),
    );
  }

  /** A new state for a sequence that starts; an instance that keeps states gets its initial values once. */
  private freshState(seq: Sequence<T>, keptByInstance: boolean): void {
    this.dropState(seq);
    seq.state = this.rows.initialState();
    if (keptByInstance) seq.stateId = this.nextStateId++;
    this.statesCreated++;
  }

  /** An execution the instance never started: its requests go back to the front of their sequences. */
  private notStarted(instance: Instance, owners: (Sequence<T> | undefined)[], entries: (Queued<T> | undefined)[]): void {
    this.ended(instance, entries);
    entries.forEach((entry, i) => {
      const seq = owners[i];
      if (!entry || !seq) return;
      seq.running = false;
      if (seq.released) {
        entry.reject(new TritonError('UNAVAILABLE', `sequence ${String(seq.id)} of model '${this.options.modelName}' was released before the request ran`));
        return;
      }
      seq.queue.unshift(entry);
      this.queued++;
      entry.cancellation.listen(entry.onAbort);
    });
    this.scheduleSoon();
  }

  /** An execution on `instance` ended: it is free again, and its requests no longer count as executing. */
  private ended(instance: Instance, entries: (Queued<T> | undefined)[]): number {
    this.busy.delete(instance);
    let real = 0;
    for (const e of entries) if (e !== undefined) real++;
    this.executing -= real;
    return real;
  }

  private completed(instance: Instance, owners: (Sequence<T> | undefined)[], entries: (Queued<T> | undefined)[], start: number, { responses, error }: Executed, keptByInstance: boolean): void {
    const real = this.ended(instance, entries);
    const inferEnd = now();
    const record = this.record(instance, real, real, start, inferEnd, inferEnd, responses === undefined);
    entries.forEach((entry, i) => {
      if (!entry) return;
      const seq = owners[i];
      if (seq) seq.running = false;
      if (responses === undefined) {
        entry.reject(error);
      } else {
        try {
          const response = responses[i] as Response;
          const outputs = keptByInstance ? response : this.takeState(seq, response);
          const value = this.finalize(entry.request, outputs);
          entry.resolve({ value, queueNs: ms2ns(start - entry.enqueuedAt), computeInputNs: 0, computeInferNs: record.computeInferNs, computeOutputNs: 0, batchRows: real });
        } catch (e) {
          entry.reject(ExecutionLoop.unfinalized(e));
        }
      }
      if (seq && entry.sequence.end) {
        seq.ending = true;
        this.maybeRelease(seq);
      }
      if (seq) this.idleFrom(seq);
    });
    this.schedule();
  }

  /** Stores the next state from a response and returns the response without its state outputs. */
  private takeState(seq: Sequence<T> | undefined, response: Response): Response {
    if (!this.rows.stateful || response === null || typeof response !== 'object') return response;
    const { state, outputs } = this.rows.split(response);
    if (seq && !seq.released) seq.state = state;
    return outputs;
  }
}
