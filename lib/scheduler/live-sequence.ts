import type { Request, SequenceInfo } from '../callable/callable';
import type { Cancellable, Cancellation } from '../base/cancellation';
import type { Scheduled } from './execution-record';
import type { StateTensors } from './sequence-tensors';
import type { Slot } from './sequence-slots';

/** A request waiting in its sequence. */
export interface Queued<T> {
  readonly request: Request & Cancellable;
  readonly sequence: SequenceInfo;
  readonly enqueuedAt: number;
  readonly resolve: (v: Scheduled<T>) => void;
  readonly reject: (err: unknown) => void;
  readonly cancellation: Cancellation;
  readonly onAbort: () => void;
}

/** One live sequence: its requests in order, its slot (or none yet: backlogged) and its implicit state. */
export interface Sequence<T> {
  readonly key: string;
  readonly id: SequenceInfo['id'];
  readonly queue: Queued<T>[];
  slot: Slot<Sequence<T>> | undefined;
  running: boolean;
  /** Its state, kept here; or, when its instance keeps it (a worker), the id the instance keeps it under. */
  state: StateTensors | undefined;
  stateId: number | undefined;
  idleTimer: NodeJS.Timeout | undefined;
  /** Set once its END request was queued: requests for its id start a new sequence. */
  ending: boolean;
  released: boolean;
}

/** A map key for a correlation id: integers and strings never collide. */
export function keyOf(id: SequenceInfo['id']): string {
  return typeof id === 'string' ? `s:${id}` : `n:${String(id)}`;
}
